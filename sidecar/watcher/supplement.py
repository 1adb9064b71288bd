"""Push to the sidecar what Volcano's session lacks: namespace labels and PDBs, from the informers.

The extender's session ``latest`` (Volcano's onSessionOpen) carries neither, and the sidecar has no
API credentials; the watcher sends them with the Supplement RPC at start and whenever a Namespace
or PDB changes, at most once per ``period``. Best effort: a failed push is logged and tried again
after ``period``; planning never waits for it.
"""

from __future__ import annotations

import threading

import structlog

from sidecar.api.v1alpha1 import service_pb2
from sidecar.kubeobj import Obj
from sidecar.snapshot.kube import snapshot_from_objects
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.sidecarport import Sidecar

log = structlog.get_logger("sidecar.watcher")


def supplement_request(cache: ClusterCache) -> service_pb2.SupplementRequest:
    """The cached Namespaces (with labels) and PDBs, as the Snapshot messages a session would hold."""
    snap = snapshot_from_objects(cache.namespaces.items(), [], [], [], cache.pdbs.items())
    return service_pb2.SupplementRequest(namespaces=snap.namespaces, pdbs=snap.pdbs)


class SupplementPusher:
    """One thread: push once both informers have synced, then after changes (debounced)."""

    def __init__(self, sidecar: Sidecar, cache: ClusterCache, *, period: float = 2.0) -> None:
        self._sidecar = sidecar
        self._cache = cache
        self._period = period
        self._dirty = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        #: pushes answered by the sidecar (tests, logs)
        self.pushed = 0
        cache.namespaces.add_handler(self._changed)
        cache.pdbs.add_handler(self._changed)

    def _changed(self, kind: str, obj: Obj) -> None:
        self._dirty.set()

    def start(self) -> SupplementPusher:
        if self._thread is None:
            self._dirty.set()
            self._thread = threading.Thread(target=self._run, name="supplement-pusher", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self._dirty.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def push(self) -> bool:
        """Send the supplement now; False (logged) when the sidecar did not take it."""
        request = supplement_request(self._cache)
        try:
            answer = self._sidecar.supplement(request)
        except Exception as exc:  # best effort: the sidecar may be down or older than Supplement
            log.warning("supplement not sent; will retry", error=f"{type(exc).__name__}: {exc}")
            return False
        self.pushed += 1
        log.info(
            "supplement_sent",
            namespaces=answer.namespace_count,
            pdbs=answer.pdb_count,
            latest_updated=answer.latest_updated,
        )
        return True

    def _run(self) -> None:
        informers = (self._cache.namespaces, self._cache.pdbs)
        while not self._stopped.is_set() and not all(i.wait_for_sync(0.2) for i in informers):
            pass
        while not self._stopped.is_set():
            self._dirty.wait()
            if self._stopped.is_set():
                return
            self._dirty.clear()
            if not self.push():
                self._dirty.set()
            self._stopped.wait(self._period)  # debounce: at most one push per period
