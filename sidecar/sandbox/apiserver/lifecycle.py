"""What controllers do after a delete: garbage collection, namespace and CRD cleanup, grace expiry.

One background thread, fed by the store's removal queue, so deletes return before their cascade
(the API server's background propagation).
"""

from __future__ import annotations

import copy
import heapq
import queue
import threading
import time
from typing import Any

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.rest import CRD_KEY, Api

NAMESPACE_KEY = "/namespaces"


class Lifecycle:
    """Background GC (ownerReferences), cascades of namespaces and CRDs, and removal after a pod's grace."""

    def __init__(self, api: Api, tick: float = 0.05) -> None:
        self.api, self.store, self.tick = api, api.store, tick
        self._due: list[tuple[float, str, str, str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver-lifecycle", daemon=True)
        api.lifecycle = self

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def reap_later(self, key: str, obj: Obj, grace: float) -> None:
        meta = obj["metadata"]
        with self._lock:
            heapq.heappush(
                self._due, (time.monotonic() + grace, key, meta.get("namespace", ""), meta["name"], meta.get("uid", ""))
            )

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                key, obj = self.store.removed.get(timeout=self.tick)
            except queue.Empty:
                pass
            else:
                self._cascade(key, obj)
            self._reap()

    def _reap(self) -> None:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._due or self._due[0][0] > now:
                    return
                _, key, ns, name, uid = heapq.heappop(self._due)
            cur = self.store.find(key, ns, name)
            if cur is not None and cur["metadata"].get("uid") == uid and not cur["metadata"].get("finalizers"):
                self.store.remove(key, ns, name, uid)

    def _cascade(self, key: str, obj: Obj) -> None:
        meta = obj["metadata"]
        try:
            self._collect(meta.get("uid", ""))
            if key == NAMESPACE_KEY:
                for other in self.store.resource_keys():
                    for item in self.store.scan(other, meta["name"])[0]:
                        self.store.remove(other, meta["name"], item["metadata"]["name"])
            elif key == CRD_KEY:
                spec: dict[str, Any] = obj.get("spec", {})
                self.api.registry.unregister(meta["name"])
                cr_key = f"{spec.get('group', '')}/{spec.get('names', {}).get('plural', '')}"
                for item in self.store.scan(cr_key)[0]:
                    self.store.remove(cr_key, item["metadata"].get("namespace", ""), item["metadata"]["name"])
        except ApiError:  # the dependent changed under us; its own removal cascades again
            pass

    def _collect(self, uid: str) -> None:
        """Dependents whose owners are all known absent are deleted; the others lose the dangling reference.

        Only an owner this store held and removed counts as absent. An owner it never held (a loaded
        snapshot's PodGroups and pods name Volcano Jobs and ModelServings that are not loaded) is
        taken to exist outside the sandbox and keeps its dependents — where the real GC would look
        the owner up and delete dependents of a missing one, which would empty a loaded cluster.
        """
        for key, ns, name in self.store.dependents(uid):
            dep = self.store.find(key, ns, name)
            if dep is None:
                continue
            refs = [r for r in dep["metadata"].get("ownerReferences", []) if r.get("uid") != uid]
            if any(not self.store.known_absent(r.get("uid", "")) for r in refs):
                dep = copy.deepcopy(dep)
                dep["metadata"]["ownerReferences"] = refs
                self.store.update(key, dep, check_rv=False)
                continue
            rt = next((t for t in self.api.registry.all() if t.key == key), None)
            if rt is None:
                self.store.remove(key, ns, name)
            else:
                self.api.delete(rt, ns, name, {"propagationPolicy": "Background"})
