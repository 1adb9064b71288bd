"""The simulated kubelets: a bound pod starts (Running, Ready, containers ready) after ``start_delay``.

Terminating pods are removed when their grace period ends by the API server's lifecycle worker
(``apiserver/lifecycle.py`` ``reap_later``), the one place that does it; the kubelet only starts pods.
"""

from __future__ import annotations

import copy
import time

from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.rest import POD_KEY
from sidecar.sandbox.apiserver.store import Obj, Store, now_iso
from sidecar.sandbox.controlplane.loop import Loop


def running(pod: Obj) -> Obj:
    """The pod as its kubelet reports it once every container started and passed readiness."""
    out = copy.deepcopy(pod)
    at = now_iso()
    status = out.setdefault("status", {})
    status["phase"] = "Running"
    status["startTime"] = status.get("startTime") or at
    kept = [c for c in status.get("conditions", []) if c.get("type") == "PodScheduled"]
    ready = [
        {"type": t, "status": "True", "lastTransitionTime": at} for t in ("Initialized", "ContainersReady", "Ready")
    ]
    status["conditions"] = kept + ready
    status["containerStatuses"] = [
        {
            "name": c.get("name", ""),
            "image": c.get("image", ""),
            "imageID": "",
            "ready": True,
            "restartCount": 0,
            "started": True,
            "state": {"running": {"startedAt": at}},
        }
        for c in out.get("spec", {}).get("containers", [])
    ]
    return out


class Kubelet(Loop):
    """Starts bound pods ``start_delay`` seconds after it first sees them bound."""

    name = "kubelet"

    def __init__(self, store: Store, *, start_delay: float = 0.0, period: float = 0.05) -> None:
        super().__init__(period)
        self.store, self.start_delay = store, start_delay
        self._seen: dict[str, float] = {}  # pod uid -> when first seen bound

    def run_once(self) -> int:
        now, started = time.monotonic(), 0
        pods, _ = self.store.scan(POD_KEY)
        alive: set[str] = set()
        for pod in pods:
            meta = pod["metadata"]
            if not pod.get("spec", {}).get("nodeName") or meta.get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                continue
            uid = meta.get("uid", "")
            alive.add(uid)
            if now - self._seen.setdefault(uid, now) < self.start_delay:
                continue
            try:
                self.store.update(POD_KEY, running(pod))  # resourceVersion checked: a newer write wins
                started += 1
            except ApiError:
                continue
        self._seen = {u: t for u, t in self._seen.items() if u in alive}
        return started
