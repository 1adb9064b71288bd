"""List+watch caches (informers) over the cluster port, as client-go's reflector and store do.

One thread per kind LISTs, then WATCHes from the list's resourceVersion with bookmarks and applies
ADDED/MODIFIED/DELETED to a store keyed by (namespace, name). A stream that ends normally (the
server's timeout) or is cut resumes from the last resourceVersion seen (events or bookmarks); 410
Gone relists; other API errors and no answer at all back off exponentially; every ``resync``
seconds the kind is relisted in full. A relist replaces the store and tells the handlers the
difference, so nothing is lost and no deleted object lingers.

Objects in the store are shared, never copied on read: callers must not mutate them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import ApiError, Cluster, Gone, Resource, Unreachable

Key = tuple[str, str]
#: called with (event type, object) after the store changed: ADDED, MODIFIED or DELETED
Handler = Callable[[str, Obj], None]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

log = structlog.get_logger("sidecar.watcher")


@dataclass(frozen=True)
class Backoff:
    """Exponential delays with ±20% jitter: ``initial · 2^(failures−1)``, at most ``cap`` seconds."""

    initial: float = 0.2
    cap: float = 30.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return min(self.cap, self.initial * 2.0 ** min(failures - 1, 30)) * random.uniform(0.8, 1.2)


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass
class Stats:
    """What the informer did, for tests and logs."""

    lists: int = 0
    watches: int = 0
    events: int = 0
    relists_gone: int = 0
    errors: int = 0


class Informer:
    """A list+watch cache of one kind, kept current by a background thread (``start``/``stop``)."""

    def __init__(
        self,
        cluster: Cluster,
        kind: Resource,
        *,
        resync: float = 300.0,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
    ) -> None:
        self.kind = kind
        self.resync = resync
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.stats = Stats()
        self._cluster = cluster
        self._changed = threading.Condition()  # guards the store; notified on every change
        self._items: dict[Key, Obj] = {}
        self._rv = ""
        self._handlers: list[Handler] = []
        self._synced = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream_lock = threading.Lock()
        self._stream: Any = None
        self._failures = 0

    # -- reads -------------------------------------------------------------------------------
    def has_synced(self) -> bool:
        """True once the first LIST is in the store."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion this cache reflects (a list, an event or a bookmark)."""
        with self._changed:
            return self._rv

    def items(self) -> list[Obj]:
        """Every cached object, ordered by (namespace, name) as the API server lists them."""
        with self._changed:
            pairs = sorted(self._items.items())
        return [obj for _, obj in pairs]

    def get(self, name: str, namespace: str = "") -> Obj | None:
        with self._changed:
            return self._items.get((namespace, name))

    def __len__(self) -> int:
        with self._changed:
            return len(self._items)

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait (bounded) until ``condition()`` holds, re-checked after every change to the store."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def add_handler(self, handler: Handler) -> None:
        """``handler(type, obj)`` runs on the informer's thread after each change; it must be quick
        (enqueue, not reconcile). Its exceptions are logged, never fatal."""
        self._handlers.append(handler)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Informer:
        if self._thread is None:
            self._stopped.clear()
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind.plural}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, cutting an open watch stream so it does not wait for the next event."""
        self._stopped.set()
        with self._stream_lock:
            if self._stream is not None:
                self._stream.close()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def running(self) -> bool:
        """The list+watch thread is alive (``start``ed and not stopped or crashed)."""
        return self._thread is not None and self._thread.is_alive()

    def relist(self) -> str:
        """One LIST replacing the store (handlers told what changed); returns its resourceVersion.
        The thread calls it; ``--once`` calls it directly, with no thread."""
        items, rv = self._cluster.listing(self.kind)
        fresh = {key_of(o): o for o in items}
        with self._changed:
            old, self._items, self._rv = self._items, fresh, rv
            self.stats.lists += 1
            self._changed.notify_all()
        self._synced.set()
        changes = [(DELETED, o) for k, o in old.items() if k not in fresh]
        for k, o in fresh.items():
            before = old.get(k)
            if before is None:
                changes.append((ADDED, o))
            elif _rv_of(before) != _rv_of(o):
                changes.append((MODIFIED, o))
        for kind, obj in changes:
            self._notify(kind, obj)
        return rv

    # -- the thread --------------------------------------------------------------------------
    def _run(self) -> None:
        rv, next_list = "", 0.0
        while not self._stopped.is_set():
            try:
                if not rv or time.monotonic() >= next_list:
                    rv = self.relist()
                    next_list = time.monotonic() + self.resync if self.resync > 0 else float("inf")
                left = max(1, int(min(self.watch_timeout, next_list - time.monotonic()) + 0.999))
                rv = self._watch(rv, left)
            except Gone as exc:
                self.stats.relists_gone += 1
                log.info("watch expired, relisting", kind=self.kind.plural, resource_version=rv, error=exc.message)
                rv = ""
                self._failures += 1
                if self._failures > 1:  # 410 again right after a relist: do not spin
                    self._pause()
            except ApiError as exc:
                self._fail("api error", status=exc.status, reason=exc.message)
                rv = self.resource_version if rv else ""
            except Unreachable as exc:
                if self._stopped.is_set():
                    break
                self._fail("connection error", error=str(exc))
                rv = self.resource_version if rv else ""  # resume from the last event or bookmark

    def _fail(self, what: str, **fields: Any) -> None:
        self.stats.errors += 1
        self._failures += 1
        log.warning(f"informer {what}; backing off", kind=self.kind.plural, failures=self._failures, **fields)
        self._pause()

    def _pause(self) -> None:
        self._stopped.wait(self.backoff.delay(self._failures))

    def _watch(self, rv: str, timeout: int) -> str:
        """Apply events from ``rv`` until the stream ends; returns the last resourceVersion seen."""
        stream = self._cluster.watch(self.kind, rv, timeout)
        self.stats.watches += 1
        with self._stream_lock:
            self._stream = stream
        try:
            if self._stopped.is_set():
                return rv
            for kind, obj in stream:
                rv = _rv_of(obj) or rv
                self._failures = 0
                if kind == "BOOKMARK":
                    with self._changed:
                        self._rv = rv
                    continue
                self._apply(kind, obj, rv)
            return rv
        finally:
            with self._stream_lock:
                self._stream = None
            stream.close()

    def _apply(self, kind: str, obj: Obj, rv: str) -> None:
        key = key_of(obj)
        with self._changed:
            if kind == DELETED:
                self._items.pop(key, None)
            else:
                self._items[key] = obj
            self._rv = rv
            self.stats.events += 1
            self._changed.notify_all()
        self._notify(kind, obj)

    def _notify(self, kind: str, obj: Obj) -> None:
        for handler in self._handlers:
            try:
                handler(kind, obj)
            except Exception as exc:  # a handler's bug must not stop the cache
                log.error("informer handler failed", kind=self.kind.plural, error=f"{type(exc).__name__}: {exc}")


def _rv_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
