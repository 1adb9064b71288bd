"""The disruption controller: every PDB's status follows the health of the pods it selects.

The Eviction API decides from a PDB's status alone, so without this controller a PDB created
through the API would refuse every eviction ("still being processed") and a pod going unready
would never lower disruptionsAllowed. Pod and PDB events mark their namespace dirty (pods only
where a PDB lives); after a short debounce one thread recomputes that namespace's PDBs with
``policy.pdb_status`` and writes the changed ones through the store, so watchers see the MODIFIED
events kube-controller-manager would cause. A round's work is the dirty namespaces' pods, not the
cluster's. disruptedPods entries expire (``DELETION_TIMEOUT``): a namespace holding some is
revisited when the first one does.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from datetime import datetime, timezone

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.rest import PDB_KEY, POD_KEY
from sidecar.sandbox.apiserver.store import Event, Store
from sidecar.sandbox.policy import DELETION_TIMEOUT, pdb_status


class DisruptionController:
    """Keeps ``status`` of every PodDisruptionBudget current; ``debounce`` (s) lets a burst settle."""

    def __init__(self, store: Store, *, debounce: float = 0.02) -> None:
        self.store, self.debounce = store, debounce
        self._cv = threading.Condition()
        self._dirty: set[str] = set()
        self._due: dict[str, float] = {}  # namespace -> monotonic time a disruptedPods entry expires
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver-disruption", daemon=True)
        with store.lock:
            pdbs, _ = store.scan(PDB_KEY)
            self._pdbs = Counter(p["metadata"].get("namespace", "") for p in pdbs)
            self._dirty.update(self._pdbs)
            store.listeners.append(self._note)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cv:
            self._cv.notify()
        if self._thread.is_alive():
            self._thread.join(5)

    def _note(self, key: str, event: Event) -> None:
        """Store listener (under the store lock): only bookkeeping, the work is the thread's."""
        if key not in (PDB_KEY, POD_KEY):
            return
        kind, obj, _ = event
        ns = obj["metadata"].get("namespace", "")
        if key == PDB_KEY:
            self._pdbs[ns] += {"ADDED": 1, "DELETED": -1}.get(kind, 0)
        elif self._pdbs[ns] <= 0:
            return
        with self._cv:
            self._dirty.add(ns)
            self._cv.notify()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                now = time.monotonic()
                for ns in [ns for ns, at in self._due.items() if at <= now]:
                    del self._due[ns]
                    self._dirty.add(ns)
                if not self._dirty:
                    wait = min((at - now for at in self._due.values()), default=1.0)
                    self._cv.wait(max(0.0, min(wait, 1.0)))
                    continue
            self._stop.wait(self.debounce)
            with self._cv:
                dirty, self._dirty = self._dirty, set()
            for ns in sorted(dirty):
                self.sync(ns)

    def sync(self, namespace: str) -> int:
        """Recompute the namespace's PDBs now; returns how many statuses changed."""
        changed = 0
        with self.store.lock:  # one consistent view; an eviction cannot charge a PDB in between
            pdbs, _ = self.store.scan(PDB_KEY, namespace)
            if not pdbs:
                return 0
            pods, _ = self.store.scan(POD_KEY, namespace)
            now = datetime.now(timezone.utc)
            expiry: list[datetime] = []
            for pdb in pdbs:
                status = pdb_status(pdb, pods, now)
                expiry += [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in status["disruptedPods"].values()]
                if status != pdb.get("status"):
                    self.store.update(PDB_KEY, _with_status(pdb, status), check_rv=False)
                    changed += 1
        if expiry:
            left = (min(expiry) + DELETION_TIMEOUT - now).total_seconds()
            with self._cv:
                self._due[namespace] = time.monotonic() + max(0.0, left) + 0.01
        return changed


def _with_status(pdb: Obj, status: Obj) -> Obj:
    out = copy.deepcopy(pdb)  # stored dicts are never mutated
    out["status"] = status
    return out
