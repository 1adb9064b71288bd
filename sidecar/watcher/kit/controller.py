"""The RepackRun controller: a work queue of run names fed by the informers, one worker, run while leading.

Names are queued by events mapped to the runs they concern, as controller-runtime maps events to
owners: a RepackRun's own events, and whatever ``maps`` adds (Execute maps a Pod's events to the
runs whose journal names it, and an Execute run's events to the runs it holds back:
``execute.events``). Deadlines nothing announces — a cooldown's end, a TTL, eviction retries and
deadlines, the planner's backoff — come back from the reconcile as ``requeue_after``
(:mod:`requeue`) and queue the run for then. A slow safety resync each ``sync_period`` seconds
queues every run some reconciler wants; the leader's chores (the placement gate's release) run
each ``period``. The worker hands each run, read fresh from the cache, to every reconciler that
wants it, and after each reconcile waits (bounded) until the cache holds the run's current
resourceVersion, so the next pass never starts from the copy it just overwrote. A failing run goes
back to the queue after its own backoff; it never stops the others. ``run_once`` is one pass for
``watch --once``.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import structlog

from sidecar.api.repackrun import TERMINAL
from sidecar.kubeobj import Obj
from sidecar.watcher import observer as observe
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.informer import DELETED, Backoff, Informer
from sidecar.watcher.kit.port import REPACKRUNS, TRANSIENT, Cluster, Resource
from sidecar.watcher.kit.requeue import Reconciled, soonest
from sidecar.watcher.kit.status import phase_of
from sidecar.watcher.kit.workqueue import WorkQueue

log = structlog.get_logger("sidecar.watcher")
#: an informer event (type, object) -> the names of the runs it concerns
Mapper = Callable[[str, Obj], Iterable[str]]


class Reconciler(Protocol):
    """One mode's logic. ``wants``: is this run mine to drive now? ``reconcile``: drive it (the run
    is a private copy, read from the cache just before); returns the phase reached, or None."""

    def wants(self, run: Obj) -> bool: ...

    def reconcile(self, run: Obj) -> Reconciled: ...


def unfinished(run: Obj) -> bool:
    return phase_of(run) not in TERMINAL


def name_of(run: Obj) -> str:
    return str((run.get("metadata") or {}).get("name") or "")


def version_of(run: Obj | None) -> str:
    return str(((run or {}).get("metadata") or {}).get("resourceVersion") or "")


class Controller:
    """Event-driven while leading (``start_leading``/``stop_leading``, or ``run`` without election)."""

    def __init__(
        self,
        cluster: Cluster,
        reconcilers: Sequence[Reconciler],
        *,
        cache: ClusterCache | None = None,
        period: float = 2.0,
        sync_period: float = 60.0,
        backoff: Backoff | None = None,
        settle: float = 2.0,
        chores: Sequence[Callable[[], object]] = (),
        maps: Sequence[tuple[Informer, Mapper]] = (),
        resource: Resource = REPACKRUNS,
    ) -> None:
        self.cache = cache or ClusterCache(cluster)
        self.reconcilers = list(reconcilers)
        self._cluster = cluster
        #: the kind this controller drives (RepackRuns, or RepackPolicies) and its informer
        self.resource = resource
        self.primary = self.cache.informer(resource)
        self.period = period
        #: the safety resync: every wanted run queued this often, whatever the events said
        self.sync_period = sync_period
        #: after a reconcile, how long to wait for the cache to hold the run's current version
        self.settle = settle
        #: the leader's periodic work beside the runs (the placement gate's release), each resync
        self.chores = list(chores)
        self.queue = WorkQueue(backoff or Backoff(initial=min(0.5, period), cap=60.0))
        self.stopped = threading.Event()
        self._leading = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self.primary.add_handler(self._on_run)
        for informer, mapper in maps:
            informer.add_handler(self._mapped(mapper))

    # -- event handlers (informer threads: enqueue only) -------------------------------------
    def wanted(self, run: Obj) -> bool:
        return any(r.wants(run) for r in self.reconcilers)

    def _on_run(self, kind: str, run: Obj) -> None:
        if kind == DELETED:
            self.queue.forget(name_of(run))
        elif self._leading.is_set() and self.wanted(run):
            self.queue.add(name_of(run))

    def _mapped(self, mapper: Mapper) -> Callable[[str, Obj], None]:
        """An informer handler queueing the runs ``mapper`` names (it runs on every event, so a
        mapper may keep its index current; names are queued only while leading)."""

        def handler(kind: str, obj: Obj) -> None:
            names = list(mapper(kind, obj))
            if self._leading.is_set():
                for name in names:
                    self.queue.add(name)

        return handler

    def _read(self, name: str) -> Obj | None:
        """The object as cached, a private copy (reconcilers may change what they are given)."""
        found = self.primary.get(name)
        return copy.deepcopy(found) if found is not None else None

    def resync(self) -> int:
        """Queue every run some reconciler wants; returns how many runs."""
        names = [name_of(r) for r in self.primary.items() if self.wanted(r)]
        for name in names:
            self.queue.add(name)
        return len(names)

    def do_chores(self) -> None:
        """The leader's periodic work beside the runs; a failing chore is retried next period."""
        for chore in self.chores:
            try:
                chore()
            except Exception as exc:  # an API outage: the next resync tries again
                log.warning(
                    "chore failed; will retry", chore=type(chore).__name__, error=f"{type(exc).__name__}: {exc}"
                )

    # -- one run -----------------------------------------------------------------------------
    def process(self, name: str) -> str | None:
        """Hand the run to every reconciler that wants it; returns the last phase one reached.
        An error is logged and the run queued again after its backoff; it never escapes."""
        reached: str | None = None
        failed = False
        requeue: list[float | None] = []
        for reconciler in self.reconcilers:
            run = self._read(name)
            if run is None:
                return reached
            if not reconciler.wants(run):
                continue
            started = time.monotonic()
            try:
                done = reconciler.reconcile(run)
                phase = done.phase
                requeue.append(done.requeue_after)
            except Exception as exc:  # an API outage, a bug: this run waits, the others go on
                failed = True
                log.warning(
                    "repackrun not reconciled; will retry",
                    run=name,
                    reconciler=type(reconciler).__name__,
                    error=f"{type(exc).__name__}: {exc}",
                    failures=self.queue.failures(name) + 1,
                )
                continue
            finally:
                self._settle(name, version_of(run))
            observe.reconciled(reconciler, run, phase, self._read(name), time.monotonic() - started)
            if phase is not None:
                reached = phase
        if failed:
            self.queue.add_rate_limited(name)
        else:
            self.queue.forget(name)
            delay = soonest(requeue)
            if delay is not None and self._leading.is_set():
                self.queue.add_after(name, delay)
        return reached

    def _settle(self, name: str, handed: str) -> None:
        """Read your writes: when the run moved past the version handed to the reconciler, wait
        (bounded, and not past ``stop_leading``) until the cache holds its current version."""
        if not self._leading.is_set():
            return  # run_once: no informer to wait for
        try:
            current = version_of(self._cluster.get(self.resource, name))
        except TRANSIENT:
            return  # the API is away: the next event or resync will do
        if not current or current == handed:
            return
        deadline = time.monotonic() + self.settle
        while self._leading.is_set() and (left := deadline - time.monotonic()) > 0:
            if self.primary.wait_until(lambda: version_of(self.primary.get(name)) == current, min(0.1, left)):
                return

    def run_once(self) -> dict[str, str]:
        """One pass over every unfinished run (the cache listed once when no informer runs);
        returns the phase each run reached (runs left alone are absent)."""
        if not self.cache.has_synced():
            self.cache.refresh()
        done: dict[str, str] = {}
        for run in self.primary.items():
            if self.wanted(run):
                with structlog.contextvars.bound_contextvars(run=name_of(run)):
                    phase = self.process(name_of(run))
                if phase is not None:
                    done[name_of(run)] = phase
        return done

    # -- leadership --------------------------------------------------------------------------
    def start_leading(self) -> None:
        """Start the worker (non-blocking: it first waits for the cache to sync)."""
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            self.queue.clear()
            self._leading.set()
            self._worker = threading.Thread(target=self._work, name=f"{self.resource.plural}-worker", daemon=True)
            self._worker.start()
        log.info("controller started")

    def stop_leading(self, timeout: float = 30.0) -> None:
        """Stop the worker; a reconcile under way finishes first (its writes carry resourceVersions)."""
        with self._lock:
            self._leading.clear()
            self.queue.wake()
            worker, self._worker = self._worker, None
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)
            if worker.is_alive():
                log.warning("controller worker still busy after stop", timeout=timeout)
        self.queue.clear()
        log.info("controller stopped")

    def _work(self) -> None:
        while self._leading.is_set() and not self.cache.wait_for_sync(0.2):
            pass
        next_resync = next_chores = 0.0
        while self._leading.is_set():
            now = time.monotonic()
            if now >= next_chores:
                self.do_chores()
                next_chores = now + self.period
            if now >= next_resync:
                self.resync()
                next_resync = now + self.sync_period
            name = self.queue.get(timeout=max(0.0, min(next_resync, next_chores) - time.monotonic()))
            if name is None:
                continue
            try:
                with structlog.contextvars.bound_contextvars(run=name):  # every log line of the reconcile names it
                    self.process(name)
            finally:
                self.queue.done(name)

    def healthy(self) -> bool:
        """False only when leading while the worker thread has died. Read under the lock that
        start_leading holds while it marks leading and starts the worker (no window between)."""
        with self._lock:
            worker = self._worker
            return not self._leading.is_set() or (worker is not None and worker.is_alive())

    # -- without leader election -------------------------------------------------------------
    def run(self) -> None:
        """Cache and worker until ``stop`` (no leader election: the only replica, or tests)."""
        self.cache.start()
        self.start_leading()
        try:
            self.stopped.wait()
        finally:
            self.stop_leading()
            self.cache.stop()

    def stop(self) -> None:
        self.stopped.set()


class Controllers:
    """Controllers that lead together under one Lease (``watch``: RepackRuns and RepackPolicies)."""

    def __init__(self, *controllers: Controller) -> None:
        self.controllers = controllers

    def start_leading(self) -> None:
        for c in self.controllers:
            c.start_leading()

    def stop_leading(self, timeout: float = 30.0) -> None:
        for c in self.controllers:
            c.stop_leading(timeout)

    def run_once(self) -> dict[str, str]:
        """Each controller's pass, keyed ``<plural>/<name>``, for the runs' phases and nothing else."""
        out: dict[str, str] = {}
        for c in self.controllers:
            out |= {f"{c.resource.kind.lower()}/{name}": phase for name, phase in c.run_once().items()}
        return out

    def healthy(self) -> bool:
        return all(c.healthy() for c in self.controllers)
