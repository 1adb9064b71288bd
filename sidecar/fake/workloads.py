"""Workload controllers that rebuild what an eviction removes (the guide's rebuild semantics).

* Volcano Job: a pod of a Job (controller ownerReference ``batch.volcano.sh`` Job, or the
  ``volcano.sh/job-name`` label) that is gone is recreated with the same name, in the same
  PodGroup, Pending for the scheduler.
* ModelServing (Kthena's ServingGroupRecreate): when a pod of a ServingGroup (the pods sharing a
  PodGroup under a ModelServing) is gone, the rest of the group and its PodGroup are deleted and,
  once every old pod is gone, the whole group is recreated under a new PodGroup of the same owner.

Rebuilt pods are created through the fake's ``create``, so its admission hook (the placement gate)
sees them as the API server's webhook call would. Pod removals arrive as store events (only
noted); ``cycle`` does the work, so a delete returns before its rebuild, as with a real controller.
Finished pods are not rebuilt; nor are pods whose owner was deleted (garbage collection).
"""

from __future__ import annotations

import copy
import queue
import re
from dataclasses import dataclass, field

from sidecar.fake.cluster import FakeCluster
from sidecar.fake.scheduler import Loop
from sidecar.kubeobj import Obj
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher.kit.port import PODGROUPS, PODS, ApiError, Resource

JOB_NAME = "volcano.sh/job-name"
_SUFFIX = re.compile(r"-r(\d+)$")


def _controlled_by(pod: Obj, kind: str, group: str) -> bool:
    return any(
        ref.get("controller") and ref.get("kind") == kind and str(ref.get("apiVersion", "")).startswith(group + "/")
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def fresh_pod(pod: Obj, group: str | None = None) -> Obj:
    """A new pod from an old one's template: same name, labels, owners; unbound and Pending."""
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
    return {"apiVersion": "v1", "kind": "Pod", "metadata": new_meta, "spec": spec}


@dataclass
class _Rebuild:
    """A ServingGroup being recreated: its old PodGroup and pod templates."""

    podgroup: Obj
    pods: dict[str, Obj] = field(default_factory=dict)


class Workloads(Loop):
    name = "workloads"

    def __init__(self, cluster: FakeCluster, *, period: float = 0.05) -> None:
        super().__init__(cluster, period)
        self._gone: queue.SimpleQueue[Obj] = queue.SimpleQueue()
        self._deleted_uids: set[str] = set()
        self._rebuilds: dict[tuple[str, str], _Rebuild] = {}
        cluster.listeners.append(self._note)

    def _note(self, resource: Resource, kind: str, obj: Obj) -> None:
        if kind != "DELETED":
            return
        self._deleted_uids.add(str(obj["metadata"].get("uid", "")))
        if resource is PODS:
            self._gone.put(obj)

    def run_once(self) -> int:
        done = 0
        while True:
            try:
                pod = self._gone.get_nowait()
            except queue.Empty:
                break
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue  # finished work is not restarted
            if _controlled_by(pod, "ModelServing", "workload.serving.volcano.sh"):
                done += self._serving_group_lost(pod)
            elif _controlled_by(pod, "Job", "batch.volcano.sh") or (pod["metadata"].get("labels") or {}).get(JOB_NAME):
                done += self._recreate(fresh_pod(pod))
        return done + self._finish_rebuilds()

    def _owner_gone(self, obj: Obj) -> bool:
        return any(r.get("uid", "") in self._deleted_uids for r in obj["metadata"].get("ownerReferences") or [])

    def _recreate(self, pod: Obj) -> int:
        if self._owner_gone(pod):
            return 0  # the workload itself was deleted: garbage collection, not a disruption
        try:
            self.cluster.create(PODS, pod)
            return 1
        except ApiError:  # the name is taken again: nothing to rebuild
            return 0

    def _delete(self, resource: Resource, ns: str, name: str) -> int:
        try:
            self.cluster.delete(resource, name, ns)
            return 1
        except ApiError:
            return 0

    def _serving_group_lost(self, pod: Obj) -> int:
        ns = pod["metadata"].get("namespace", "")
        group = (pod["metadata"].get("annotations") or {}).get(GROUP_NAME, "")
        key = (ns, group)
        if key in self._rebuilds:  # a member the rebuild deleted, or one evicted at the same time: rebuilt too
            self._rebuilds[key].pods.setdefault(pod["metadata"]["name"], pod)
            return 0
        pg = self.cluster.find(PODGROUPS, group, ns)
        if self._owner_gone(pod) or pg is None:
            return 0  # not a ServingGroup that can be rebuilt
        rebuild = self._rebuilds[key] = _Rebuild(copy.deepcopy(pg), {pod["metadata"]["name"]: pod})
        changed = 0
        for other in self.cluster.items(PODS, ns):
            if (other["metadata"].get("annotations") or {}).get(GROUP_NAME) == group:
                rebuild.pods[other["metadata"]["name"]] = other
                changed += self._delete(PODS, ns, other["metadata"]["name"])
        return changed + self._delete(PODGROUPS, ns, group)

    def _finish_rebuilds(self) -> int:
        """Recreate each ServingGroup whose old pods are all gone, under a new PodGroup name."""
        done = 0
        for key, rebuild in list(self._rebuilds.items()):
            ns, old = key
            if any(self.cluster.find(PODS, name, ns) is not None for name in rebuild.pods):
                continue
            del self._rebuilds[key]
            match = _SUFFIX.search(old)
            new = f"{_SUFFIX.sub('', old)}-r{int(match.group(1)) + 1 if match else 1}"
            src = rebuild.podgroup
            meta = {k: copy.deepcopy(v) for k, v in src["metadata"].items() if k in ("labels", "annotations",
                                                                                    "ownerReferences")}  # fmt: skip
            pg = {"apiVersion": src["apiVersion"], "kind": src["kind"], "metadata": {**meta, "name": new,
                  "namespace": ns}, "spec": copy.deepcopy(src.get("spec", {}))}  # fmt: skip
            if self._owner_gone(pg):
                continue
            try:
                self.cluster.create(PODGROUPS, pg)
            except ApiError:
                continue
            done += 1 + sum(self._recreate(fresh_pod(p, new)) for p in rebuild.pods.values())
        return done
