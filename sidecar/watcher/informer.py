"""List+watch caches (informers) over the official client, as client-go's reflector and store do.

One thread per kind LISTs (raw JSON: camelCase as the API serves it, which is what
``snapshot_from_objects`` reads), then WATCHes from the list's resourceVersion with bookmarks and
applies ADDED/MODIFIED/DELETED to a store keyed by (namespace, name). A stream that ends normally
(server timeout, read timeout) or is cut resumes from the last resourceVersion seen (events or
bookmarks); 410 Gone — an HTTP 410 or an ERROR event with code 410 — relists; 5xx, 429 and
connection errors back off exponentially; every ``resync`` seconds the kind is relisted in full.
A relist replaces the store and tells the handlers the difference, so nothing is lost and no
deleted object lingers.

Raw streaming (``_preload_content=False``) rather than ``kubernetes.watch.Watch`` or typed models:
on the sandbox with 1,000 nodes / 8,009 pods (2 cores) a raw pod LIST costs 0.33 s of client CPU
against 2.2 s for the typed list, and a watch event 25 µs against 31 µs for ``Watch.stream(...,
deserialize=False)`` and 156 µs with models; ``Watch`` also retries a 410 by itself, which hides
the relist this cache must do.

Objects in the store are shared, never copied on read: callers must not mutate them.
"""

from __future__ import annotations

import functools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import structlog
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from sidecar.kubeobj import Obj

Key = tuple[str, str]
#: called with (event type, object) after the store changed: ADDED, MODIFIED or DELETED
Handler = Callable[[str, Obj], None]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
#: seconds to connect, and how long past the watch's own timeout a silent stream is given up
CONNECT_TIMEOUT, READ_SLACK, LIST_READ_TIMEOUT = 10.0, 30.0, 120.0

log = structlog.get_logger("sidecar.watcher")


@dataclass(frozen=True)
class Kind:
    """A resource to cache: its name (logs) and the official client's list-or-watch call for it."""

    name: str
    lister: Callable[[client.ApiClient], Callable[..., Any]]

    @staticmethod
    def custom(group: str, version: str, plural: str) -> Kind:
        def lister(api: client.ApiClient) -> Callable[..., Any]:
            return functools.partial(client.CustomObjectsApi(api).list_cluster_custom_object, group, version, plural)

        return Kind(plural, lister)


NAMESPACES = Kind("namespaces", lambda api: client.CoreV1Api(api).list_namespace)
NODES = Kind("nodes", lambda api: client.CoreV1Api(api).list_node)
PODS = Kind("pods", lambda api: client.CoreV1Api(api).list_pod_for_all_namespaces)
PDBS = Kind("poddisruptionbudgets", lambda api: client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces)
PODGROUPS = Kind.custom("scheduling.volcano.sh", "v1beta1", "podgroups")
REPACKRUNS = Kind.custom("repack.volcano.sh", "v1alpha1", "repackruns")


@dataclass(frozen=True)
class Backoff:
    """Exponential delays with ±20% jitter: ``initial · 2^(failures−1)``, at most ``cap`` seconds."""

    initial: float = 0.2
    cap: float = 30.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return min(self.cap, self.initial * 2.0 ** min(failures - 1, 30)) * random.uniform(0.8, 1.2)


class Gone(Exception):
    """410: the resourceVersion held is older than the server's history; only a relist helps."""


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited watch events as the chunks arrive (a chunk may hold several or part of one)."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk)
        start = 0
        while (end := buffer.find(b"\n", start)) != -1:
            if end > start:
                yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
    if buffer.strip():
        yield bytes(buffer)


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
        api: client.ApiClient,
        kind: Kind,
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
        self._call = kind.lister(api)
        self._changed = threading.Condition()  # guards the store; notified on every change
        self._items: dict[Key, Obj] = {}
        self._rv = ""
        self._handlers: list[Handler] = []
        self._synced = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._response_lock = threading.Lock()
        self._response: Any = None
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
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, cutting an open watch stream so it does not wait for the next event."""
        self._stopped.set()
        with self._response_lock:
            if self._response is not None:
                _cut(self._response)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def running(self) -> bool:
        """The list+watch thread is alive (``start``ed and not stopped or crashed)."""
        return self._thread is not None and self._thread.is_alive()

    def relist(self) -> str:
        """One LIST replacing the store (handlers told what changed); returns its resourceVersion.
        The thread calls it; ``--once`` calls it directly, with no thread."""
        response = self._call(_preload_content=False, _request_timeout=(CONNECT_TIMEOUT, LIST_READ_TIMEOUT))
        doc = json.loads(response.data)
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        fresh = {key_of(o): o for o in doc.get("items") or []}
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
                log.info("watch expired, relisting", kind=self.kind.name, resource_version=rv, error=str(exc))
                rv = ""
                self._failures += 1
                if self._failures > 1:  # 410 again right after a relist: do not spin
                    self._pause()
            except ApiException as exc:
                if exc.status == 410:
                    self.stats.relists_gone += 1
                    log.info("watch expired, relisting", kind=self.kind.name, resource_version=rv)
                    rv = ""
                    continue
                self._fail("api error", status=exc.status, reason=exc.reason)
                rv = self.resource_version if rv else ""
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:  # ValueError: a torn JSON body
                if self._stopped.is_set():
                    break
                self._fail("connection error", error=f"{type(exc).__name__}: {exc}")
                rv = self.resource_version if rv else ""  # resume from the last event or bookmark

    def _fail(self, what: str, **fields: Any) -> None:
        self.stats.errors += 1
        self._failures += 1
        log.warning(f"informer {what}; backing off", kind=self.kind.name, failures=self._failures, **fields)
        self._pause()

    def _pause(self) -> None:
        self._stopped.wait(self.backoff.delay(self._failures))

    def _watch(self, rv: str, timeout: int) -> str:
        """Apply events from ``rv`` until the stream ends; returns the last resourceVersion seen."""
        response = self._call(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(CONNECT_TIMEOUT, timeout + READ_SLACK),
        )
        self.stats.watches += 1
        with self._response_lock:
            self._response = response
        try:
            if self._stopped.is_set():
                return rv
            for line in _lines(response):
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        raise Gone(str(obj.get("message") or "410 Gone"))
                    raise ApiException(status=code, reason=f"{obj.get('reason')}: {obj.get('message')}")
                rv = _rv_of(obj) or rv
                self._failures = 0
                if kind == "BOOKMARK":
                    with self._changed:
                        self._rv = rv
                    continue
                self._apply(str(kind), obj, rv)
            return rv
        finally:
            with self._response_lock:
                self._response = None
            response.close()  # a stream left mid-way must not go back to the pool with unread bytes
            response.release_conn()

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
                log.error("informer handler failed", kind=self.kind.name, error=f"{type(exc).__name__}: {exc}")


def _rv_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _cut(response: Any) -> None:
    """Unblock a thread reading ``response`` (urllib3 ≥ 2.3 ``shutdown``; else close the socket)."""
    try:
        if hasattr(response, "shutdown"):
            response.shutdown()
        else:
            response.close()
    except Exception:  # best effort: the thread also sees the stop flag
        pass
