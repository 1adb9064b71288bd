"""The RepackRun controller: a work queue of run names fed by the informers, one worker, run while leading.

Names are queued by events mapped to the runs they concern, as controller-runtime maps events to
owners: a RepackRun's own events; a Pod's events to the unfinished Execute runs whose journal
names it (``PodIndex``: Execute waits for rebuilt pods, which keep their names); an Execute run's
events also to the Pending Execute runs it may hold. Deadlines nothing announces — a cooldown's
end, a TTL, eviction retries and deadlines, the planner's backoff — come back from the reconcile
as ``requeue_after`` (:mod:`requeue`) and queue the run for then. A slow safety resync each
``sync_period`` seconds queues every run some reconciler wants; the leader's chores (the
placement gate's release) run each ``period``. The worker hands each run, read fresh from the
cache, to every reconciler that wants it, and after each reconcile waits (bounded) until the cache
holds the run's current resourceVersion, so the next pass never starts from the copy it just
overwrote. A failing run goes back to the queue after its own backoff; it never stops the others.
``run_once`` is one pass for ``watch --once``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import structlog
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from sidecar.api.repackrun import TERMINAL, Mode, Phase
from sidecar.kubeobj import Obj
from sidecar.watcher import observer as observe
from sidecar.watcher.cluster import ClusterCache
from sidecar.watcher.dryrun import DryRunReconciler
from sidecar.watcher.informer import DELETED, Backoff
from sidecar.watcher.journal import relocations_of
from sidecar.watcher.planner import Planner
from sidecar.watcher.requeue import Reconciled, soonest
from sidecar.watcher.status import GROUP, PLURAL, VERSION, phase_of
from sidecar.watcher.workqueue import WorkQueue

log = structlog.get_logger("sidecar.watcher")


class Reconciler(Protocol):
    """One mode's logic. ``wants``: is this run mine to drive now? ``reconcile``: drive it (the run
    is a private copy, read from the cache just before); returns the phase reached, or None."""

    def wants(self, run: Obj) -> bool: ...

    def reconcile(self, run: Obj) -> Reconciled: ...


def dry_run(
    api: client.ApiClient,
    planner: Planner,
    cache: ClusterCache | None = None,
    *,
    session_max_age: float = 0.0,
    planner_wait: float = 60.0,
) -> Reconciler:
    """The DryRun reconciler, planning on the cache's snapshot (a fresh read without a cache), or on
    the sidecar's session ``latest`` while it is at most ``session_max_age`` seconds old."""
    snapshot = cache.snapshot if cache is not None else None
    return DryRunReconciler(api, planner, snapshot=snapshot, session_max_age=session_max_age, planner_wait=planner_wait)


def unfinished(run: Obj) -> bool:
    return phase_of(run) not in TERMINAL


def is_execute(run: Obj) -> bool:
    return (run.get("spec") or {}).get("mode") == Mode.EXECUTE


def name_of(run: Obj) -> str:
    return str((run.get("metadata") or {}).get("name") or "")


def version_of(run: Obj | None) -> str:
    return str(((run or {}).get("metadata") or {}).get("resourceVersion") or "")


class PodIndex:
    """ "namespace/name" of a pod -> the unfinished Execute runs whose journal names it (a victim,
    whose replacement keeps its name); kept from run events, read by Pod events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, set[str]] = {}
        self._of_run: dict[str, set[str]] = {}

    def update(self, run: Obj, deleted: bool = False) -> None:
        name = name_of(run)
        keys: set[str] = set()
        if not deleted and is_execute(run) and unfinished(run):
            keys = {r.key for r in relocations_of(run.get("status") or {})}
        with self._lock:
            for key in self._of_run.pop(name, set()) - keys:
                runs = self._pods.get(key, set())
                runs.discard(name)
                if not runs:
                    self._pods.pop(key, None)
            for key in keys:
                self._pods.setdefault(key, set()).add(name)
            if keys:
                self._of_run[name] = keys

    def runs(self, pod: Obj) -> list[str]:
        meta = pod.get("metadata") or {}
        with self._lock:
            return sorted(self._pods.get(f"{meta.get('namespace', '')}/{meta.get('name', '')}", ()))


class Controller:
    """Event-driven while leading (``start_leading``/``stop_leading``, or ``run`` without election)."""

    def __init__(
        self,
        api: client.ApiClient,
        reconcilers: Sequence[Reconciler],
        *,
        cache: ClusterCache | None = None,
        period: float = 2.0,
        sync_period: float = 60.0,
        backoff: Backoff | None = None,
        settle: float = 2.0,
        chores: Sequence[Callable[[], object]] = (),
    ) -> None:
        self.cache = cache or ClusterCache(api)
        self.reconcilers = list(reconcilers)
        self._runs_api = client.CustomObjectsApi(api)
        self.period = period
        #: the safety resync: every wanted run queued this often, whatever the events said
        self.sync_period = sync_period
        self.pods = PodIndex()
        #: after a reconcile, how long to wait for the cache to hold the run's current version
        self.settle = settle
        #: the leader's periodic work beside the runs (the placement gate's release), each resync
        self.chores = list(chores)
        self.queue = WorkQueue(backoff or Backoff(initial=min(0.5, period), cap=60.0))
        self.stopped = threading.Event()
        self._leading = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self.cache.runs.add_handler(self._on_run)
        self.cache.pods.add_handler(self._on_pod)

    # -- event handlers (informer threads: enqueue only) -------------------------------------
    def wanted(self, run: Obj) -> bool:
        return any(r.wants(run) for r in self.reconcilers)

    def _on_run(self, kind: str, run: Obj) -> None:
        self.pods.update(run, deleted=kind == DELETED)
        if kind == DELETED:
            self.queue.forget(name_of(run))
        elif self._leading.is_set() and self.wanted(run):
            self.queue.add(name_of(run))
        if self._leading.is_set() and is_execute(run):
            # an Execute run started, finished or went away: the ones it held may be admitted now
            for other in self.cache.list_runs():
                if is_execute(other) and phase_of(other) in ("", Phase.PENDING) and name_of(other) != name_of(run):
                    self.queue.add(name_of(other))

    def _on_pod(self, kind: str, pod: Obj) -> None:
        if not self._leading.is_set():
            return
        for name in self.pods.runs(pod):
            self.queue.add(name)

    def resync(self) -> int:
        """Queue every run some reconciler wants; returns how many runs."""
        names = [name_of(r) for r in self.cache.list_runs() if self.wanted(r)]
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
            run = self.cache.run(name)
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
            observe.reconciled(reconciler, run, phase, self.cache.run(name), time.monotonic() - started)
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
            raw: Any = self._runs_api.get_cluster_custom_object(GROUP, VERSION, PLURAL, name, _preload_content=False)
            current = version_of(json.loads(raw.data))
        except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError):
            return  # deleted, or the API is away: the next event or resync will do
        if current == handed:
            return
        deadline = time.monotonic() + self.settle
        while self._leading.is_set() and (left := deadline - time.monotonic()) > 0:
            if self.cache.runs.wait_until(lambda: version_of(self.cache.runs.get(name)) == current, min(0.1, left)):
                return

    def run_once(self) -> dict[str, str]:
        """One pass over every unfinished run (the cache listed once when no informer runs);
        returns the phase each run reached (runs left alone are absent)."""
        if not self.cache.has_synced():
            self.cache.refresh()
        done: dict[str, str] = {}
        for run in self.cache.list_runs():
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
            self._worker = threading.Thread(target=self._work, name="repackrun-worker", daemon=True)
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
