"""The simulated kubelets: a bound pod starts (Running, Ready) ``start_delay`` seconds after it is
first seen bound; a terminating pod is removed once its grace period is over (the kubelet's
confirmation that its containers stopped)."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime

from sidecar.fake.cluster import FakeCluster, now_iso
from sidecar.fake.scheduler import Loop
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import PODS


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
    return out


def _past(stamp: str, now: datetime) -> bool:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) <= now


class Kubelet(Loop):
    name = "kubelet"

    def __init__(self, cluster: FakeCluster, *, start_delay: float = 0.0, period: float = 0.05) -> None:
        super().__init__(cluster, period)
        self.start_delay = start_delay
        self._seen: dict[str, float] = {}  # pod uid -> when first seen bound

    def run_once(self) -> int:
        now, wall, changed = time.monotonic(), datetime.now(UTC), 0
        alive: set[str] = set()
        for pod in self.cluster.items(PODS):
            meta, spec = pod["metadata"], pod.get("spec") or {}
            uid = str(meta.get("uid", ""))
            if meta.get("deletionTimestamp"):
                if _past(str(meta["deletionTimestamp"]), wall):
                    changed += self.cluster.remove(PODS, meta["name"], meta.get("namespace", ""), uid)
                continue
            if not spec.get("nodeName") or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                continue
            alive.add(uid)
            if now - self._seen.setdefault(uid, now) >= self.start_delay:
                changed += self.cluster.store(PODS, running(pod))
        self._seen = {u: t for u, t in self._seen.items() if u in alive}
        return changed
