"""The simulated kubelets: a bound pod starts (Running, Ready, containers ready) after ``start_delay``.

Terminating pods are removed when their grace period ends by the API server's lifecycle worker
(``apiserver/lifecycle.py`` ``reap_later``), the one place that does it; the kubelet starts pods,
reports ``Killing`` ("Stopping container c") when a running pod starts terminating, and posts its
node's status as a kubelet does: ``nodeInfo`` (kubelet version: the Kubernetes release the mirror
targets), and the conditions' ``lastHeartbeatTime`` every ``heartbeat`` seconds.
"""

from __future__ import annotations

import copy
import time

from sidecar.kubeobj import Obj
from sidecar.mirror import KUBERNETES_RELEASE
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.rest import POD_KEY, Api
from sidecar.sandbox.apiserver.store import now_iso
from sidecar.sandbox.controlplane import events
from sidecar.sandbox.controlplane.loop import Loop

NODE_KEY = "/nodes"
#: what the sandbox's kubelets report of themselves (kubectl get nodes -o wide: VERSION, OS-IMAGE)
NODE_INFO = {
    "kubeletVersion": KUBERNETES_RELEASE,
    "kubeProxyVersion": KUBERNETES_RELEASE,
    "containerRuntimeVersion": "sandbox://1.0",
    "osImage": "Repack sandbox",
    "operatingSystem": "linux",
    "architecture": "amd64",
    "kernelVersion": "",
}


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

    def __init__(self, api: Api, *, start_delay: float = 0.0, period: float = 0.05, heartbeat: float = 40.0) -> None:
        super().__init__(period)
        self.api, self.store, self.start_delay, self.heartbeat = api, api.store, start_delay, heartbeat
        self._seen: dict[str, float] = {}  # pod uid -> when first seen bound
        self._killing: set[str] = set()  # uids of terminating pods already reported
        self._beat: dict[str, float] = {}  # node name -> last heartbeat (monotonic)

    def run_once(self) -> int:
        now, started = time.monotonic(), self._node_status(time.monotonic())
        pods, _ = self.store.scan(POD_KEY)
        alive: set[str] = set()
        terminating: set[str] = set()
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and pod.get("spec", {}).get("nodeName"):
                terminating.add(meta.get("uid", ""))
                self._stopping(pod)
                continue
            if not pod.get("spec", {}).get("nodeName"):
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
        self._killing &= terminating
        return started

    def _stopping(self, pod: Obj) -> None:
        """``Killing`` for each container of a running pod that began terminating (once)."""
        uid = pod["metadata"].get("uid", "")
        if uid in self._killing or (pod.get("status") or {}).get("phase") != "Running":
            return
        self._killing.add(uid)
        node = pod["spec"]["nodeName"]
        for c in pod["spec"].get("containers") or []:
            events.record(
                self.api, pod, "Normal", "Killing", f"Stopping container {c.get('name', '')}", "kubelet", node
            )

    def _node_status(self, now: float) -> int:
        """nodeInfo where a node has none, and a heartbeat on its conditions every ``heartbeat`` seconds."""
        written = 0
        for node in self.store.scan(NODE_KEY)[0]:
            name = node["metadata"]["name"]
            status = node.get("status") or {}
            fresh = now - self._beat.get(name, -1e9) < self.heartbeat
            if fresh and (status.get("nodeInfo") or {}).get("kubeletVersion"):
                continue
            out = copy.deepcopy(node)
            st = out.setdefault("status", {})
            st["nodeInfo"] = {**NODE_INFO, **(st.get("nodeInfo") or {})}
            if not st["nodeInfo"].get("kubeletVersion"):
                st["nodeInfo"]["kubeletVersion"] = KUBERNETES_RELEASE
            at = now_iso()
            for cond in st.get("conditions") or []:
                cond["lastHeartbeatTime"] = at
                cond.setdefault("lastTransitionTime", node["metadata"].get("creationTimestamp") or at)
            try:
                self.store.update(NODE_KEY, out)
                self._beat[name] = now
                written += 1
            except ApiError:
                continue  # changed meanwhile: the next cycle reads it again
        return written
