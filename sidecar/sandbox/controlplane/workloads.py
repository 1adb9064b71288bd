"""Workload controllers that rebuild what an eviction removes (the guide's rebuild semantics).

* Volcano Job: a pod of a Job (controller ownerReference ``batch.volcano.sh`` Job, or the
  ``volcano.sh/job-name`` label) that is gone is recreated with the same name, in the same
  PodGroup, Pending for the scheduler.
* ModelServing (Kthena's ServingGroupRecreate): when a pod of a ServingGroup (the pods sharing a
  PodGroup under a ModelServing) is gone, the rest of the group and its PodGroup are deleted and,
  once every old pod is gone, the whole group is recreated under a new PodGroup of the same owner.

Pod removals arrive through a store listener (under the store lock: only noted), the work is
done by ``cycle``, so a delete returns before its rebuild as with a real controller.

``gates``: scheduling gates every rebuilt pod is created with — a stand-in for the placement
gate's webhook in the tests that drive the control plane step by step without a watcher process
(``tests/execute_fixtures.py``). The shipped path is the webhook itself, which the API server's
admission chain calls over HTTPS (``apiserver/admission.py``); tests/watcher/test_watcher_gates.py checks
that both create the guide's rebuilt pods alike and lead to the same run.
"""

from __future__ import annotations

import copy
import queue
import re
from dataclasses import dataclass, field

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.registry import ResourceType
from sidecar.sandbox.apiserver.rest import POD_KEY, Api
from sidecar.sandbox.apiserver.store import Event
from sidecar.sandbox.controlplane.loop import Loop
from sidecar.sandbox.controlplane.scheduler import PODGROUP_KEY
from sidecar.snapshot.kube import GROUP_NAME

JOB_NAME = "volcano.sh/job-name"
_SUFFIX = re.compile(r"-r\d+$")


def _controller(pod: Obj, kind: str, group: str) -> Obj | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind and ref.get("apiVersion", "").startswith(group + "/"):
            return dict(ref)
    return None


def fresh_pod(pod: Obj, group: str | None = None, gates: tuple[str, ...] = ()) -> Obj:
    """A new pod from an old one's template: same name, labels, owners; unbound and Pending;
    created with ``gates`` as its scheduling gates (what an admission webhook would add)."""
    meta = pod["metadata"]
    new_meta: Obj = {"name": meta["name"], "namespace": meta.get("namespace", "")}
    for k in ("labels", "annotations", "ownerReferences"):
        if meta.get(k):
            new_meta[k] = copy.deepcopy(meta[k])
    if group is not None:
        new_meta.setdefault("annotations", {})[GROUP_NAME] = group
    spec = copy.deepcopy(pod.get("spec", {}))
    spec.pop("nodeName", None)
    spec.pop("schedulingGates", None)
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": new_meta, "spec": spec}


@dataclass
class _Rebuild:
    """A ServingGroup being recreated: its old PodGroup and pod templates."""

    podgroup: Obj
    pods: dict[str, Obj] = field(default_factory=dict)


class Workloads(Loop):
    """Volcano Job and ModelServing-like controllers (``jobs`` / ``modelserving`` switch each)."""

    name = "workloads"

    def __init__(
        self,
        api: Api,
        *,
        jobs: bool = True,
        modelserving: bool = True,
        period: float = 0.05,
        gates: tuple[str, ...] = (),
    ) -> None:
        super().__init__(period)
        self.api, self.store, self.jobs, self.modelserving = api, api.store, jobs, modelserving
        self.gates = gates
        self._gone: queue.SimpleQueue[Obj] = queue.SimpleQueue()
        self._rebuilds: dict[tuple[str, str], _Rebuild] = {}
        self._pods = api.registry.lookup("", "v1", "pods")
        self.store.listeners.append(self._note)

    def _note(self, key: str, event: Event) -> None:
        if key == POD_KEY and event[0] == "DELETED":
            self._gone.put(event[1])

    def run_once(self) -> int:
        done = 0
        while True:
            try:
                pod = self._gone.get_nowait()
            except queue.Empty:
                break
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue  # finished work is not restarted
            if self.modelserving and _controller(pod, "ModelServing", "workload.serving.volcano.sh"):
                done += self._serving_group_lost(pod)
            elif self.jobs and (
                _controller(pod, "Job", "batch.volcano.sh") or (pod["metadata"].get("labels") or {}).get(JOB_NAME)
            ):
                done += self._recreate(fresh_pod(pod, gates=self.gates))
        return done + self._finish_rebuilds()

    def _owner_gone(self, obj: Obj) -> bool:
        return any(self.store.known_absent(r.get("uid", "")) for r in obj["metadata"].get("ownerReferences") or [])

    def _recreate(self, pod: Obj) -> int:
        if self._owner_gone(pod):
            return 0  # the workload itself was deleted: garbage collection, not a disruption
        try:
            self.api.create(self._pods, pod["metadata"]["namespace"], pod)
            return 1
        except ApiError:  # the namespace is gone, or the name taken again: nothing to rebuild
            return 0

    def _serving_group_lost(self, pod: Obj) -> int:
        ns = pod["metadata"].get("namespace", "")
        group = (pod["metadata"].get("annotations") or {}).get(GROUP_NAME, "")
        key = (ns, group)
        if key in self._rebuilds:  # a member the rebuild deleted, or one evicted at the same time: rebuilt too
            self._rebuilds[key].pods.setdefault(pod["metadata"]["name"], pod)
            return 0
        if self._owner_gone(pod):
            return 0
        pg = self.store.find(PODGROUP_KEY, ns, group)
        if pg is None:
            return 0  # not a ServingGroup we can rebuild (no PodGroup to recreate)
        rebuild = self._rebuilds[key] = _Rebuild(copy.deepcopy(pg), {pod["metadata"]["name"]: pod})
        changed = 0
        for other in self.store.scan(POD_KEY, ns)[0]:
            if (other["metadata"].get("annotations") or {}).get(GROUP_NAME) == group:
                rebuild.pods[other["metadata"]["name"]] = other
                changed += self._delete(self._pods, ns, other["metadata"]["name"])
        pg_type = self.api.registry.by_kind(pg["apiVersion"], pg["kind"])
        return changed + self._delete(pg_type, ns, group)

    def _delete(self, rt: ResourceType, ns: str, name: str) -> int:
        try:
            self.api.delete(rt, ns, name, {})
            return 1
        except ApiError:
            return 0

    def _finish_rebuilds(self) -> int:
        """Recreate each ServingGroup whose old pods are all gone, under a new PodGroup name."""
        done = 0
        for key, rebuild in list(self._rebuilds.items()):
            ns, old = key
            if any(self.store.find(POD_KEY, ns, name) is not None for name in rebuild.pods):
                continue
            del self._rebuilds[key]
            match = re.search(r"-r(\d+)$", old)
            new = f"{_SUFFIX.sub('', old)}-r{int(match.group(1)) + 1 if match else 1}"
            src = rebuild.podgroup
            meta = {
                k: copy.deepcopy(v)
                for k, v in src["metadata"].items()
                if k in ("labels", "annotations", "ownerReferences")
            }
            pg = {
                "apiVersion": src["apiVersion"],
                "kind": src["kind"],
                "metadata": {**meta, "name": new, "namespace": ns},
            }
            pg["spec"] = copy.deepcopy(src.get("spec", {}))
            if self._owner_gone(pg):
                continue
            try:
                self.api.create(self.api.registry.by_kind(src["apiVersion"], src["kind"]), ns, pg)
            except ApiError:
                continue
            done += 1 + sum(self._recreate(fresh_pod(p, new, self.gates)) for p in rebuild.pods.values())
        return done
