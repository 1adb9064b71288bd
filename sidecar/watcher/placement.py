"""Placing a rebuilt pod: recognise it by the journal's record, pick a node, suggest it, track it.

* **Recognition, never guesswork**: the replacement has the victim's namespace and name, another
  UID, is not terminating, and runs in the original PodGroup or in one whose controller owner has
  the recorded owner UID (a ModelServing ServingGroup rebuilt under a new PodGroup name; that
  name is recorded as ``replacementPodGroupName``).
* **Selection** (the guide's "after confirming that the candidate node is still available"):
  ``Filter`` the replacement on the planned node; when it fits, the planned node. Otherwise
  ``Prioritize`` it over every node except the plan's freed nodes and nodes whose goal resource
  is entirely idle (never re-fragment an empty node), best first. No candidate (or no planner)
  ⇒ no nomination: the scheduler decides (WaitingForScheduler).
* **Suggestion**: ``status.nominatedNodeName`` through pods/status, guarded by a JSON-patch test
  of the replacement's UID; then only this project's scheduling gate is removed. Nothing is
  cordoned, tainted or reserved.
"""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client
from kubernetes.client import ApiException

from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher import observer as observe
from sidecar.watcher.journal import BOUND, BOUND_ELSEWHERE, Relocation
from sidecar.watcher.planner import PLANNER_ERRORS, Planner, planner_error
from sidecar.watcher.status import Hook

#: the scheduling gate this project's admission puts on rebuilt pods ("placement lease and SchedulerGate")
PLACEMENT_GATE = "repack.volcano.sh/placement"
#: task states that do not hold resources on a node: not placed, only nominated, or finished
_NOT_HOLDING = (ts.PENDING, ts.PIPELINED, ts.SUCCEEDED, ts.FAILED)


def owner_uids(snapshot: pb.Snapshot) -> dict[tuple[str, str], str]:
    """(namespace, PodGroup) → the UID of its controller owner."""
    return {
        (g.namespace, g.name): next((r.uid for r in g.owner_references if r.controller), "")
        for g in snapshot.pod_groups
    }


def replacement_group(rel: Relocation, pod: Obj | None, owner_of: Callable[[str, str], str]) -> str | None:
    """The PodGroup of ``pod`` when it is the relocation's replacement ("" = no PodGroup), else None.
    ``owner_of(namespace, PodGroup)`` (its controller owner's UID) is asked only for a PodGroup other
    than the original. The one recognition rule: the Execute pass and the placement gate's admission
    both use it (a pod being admitted has no UID yet, and its name is the request's)."""
    if pod is None:
        return None
    meta = pod["metadata"]
    if meta.get("uid") == rel.victim_pod_uid or meta.get("deletionTimestamp"):
        return None
    group = str((meta.get("annotations") or {}).get(GROUP_NAME, ""))
    if group == rel.pod_group_name:
        return group
    if group and rel.owner.uid and owner_of(rel.namespace, group) == rel.owner.uid:
        return group
    return None


def controller_uid(obj: Obj) -> str:
    """The UID of ``obj``'s controller owner reference ("" without one)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((str(r.get("uid") or "") for r in refs if r.get("controller")), "")


def is_pending(pod: Obj) -> bool:
    return (
        not (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
    )


def bound_phase(rel: Relocation, node: str) -> str:
    """Bound when on the selected node (the planned one when nothing was nominated), else BoundElsewhere."""
    return BOUND if node == (rel.placement.selected_node_name or rel.planned_node_name) else BOUND_ELSEWHERE


def holding_nodes(snapshot: pb.Snapshot, resource: str, skip_uid: str = "") -> set[str]:
    """Nodes on which some task (other than ``skip_uid``) holds ``resource``."""
    return {
        t.node
        for t in snapshot.tasks
        if t.node and t.uid != skip_uid and t.requests.get(resource, 0) > 0 and int(t.status) not in _NOT_HOLDING
    }


def receivers(snapshot: pb.Snapshot, resource: str, freed: list[str], skip_uid: str) -> list[str]:
    """Nodes a replacement may be suggested: not a node the plan frees, not one whose ``resource``
    is provided but entirely idle (an emptied or never-used node)."""
    held = holding_nodes(snapshot, resource, skip_uid)
    return [
        n.name
        for n in snapshot.nodes
        if n.name not in freed and (n.allocatable.get(resource, 0) <= 0 or n.name in held)
    ]


def mark_nominated(snapshot: pb.Snapshot, uid: str, node: str) -> None:
    """Record a nomination in this pass's snapshot (Pipelined there) so later selections see it."""
    for t in snapshot.tasks:
        if t.uid == uid:
            t.node, t.status = node, ts.PIPELINED  # type: ignore[assignment]
            return


class Placer:
    """Selection through the planner, nomination and un-gating through the API."""

    def __init__(self, planner: Planner, core: client.CoreV1Api, hook: Hook) -> None:
        self._planner, self._core, self._hook = planner, core, hook

    def select(
        self, rel: Relocation, uid: str, snapshot: pb.Snapshot, resource: str, freed: list[str]
    ) -> tuple[str, str]:
        """(node, why): the node to suggest for replacement ``uid``, or "" with the reason there is none."""
        if not any(t.uid == uid for t in snapshot.tasks):
            return "", "the rebuilt pod is not in the snapshot yet"
        planned = rel.planned_node_name
        try:
            fit = self._planner.filter(service_pb2.FilterRequest(snapshot=snapshot, task_uid=uid, nodes=[planned]))
            if planned in fit.feasible_nodes:
                return planned, f"planned node {planned} still fits"
            others = [n for n in receivers(snapshot, resource, freed, uid) if n != planned]
            if not others:
                return "", f"planned node {planned} no longer fits ({fit.message}) and no other node may receive it"
            ranked = self._planner.prioritize(
                service_pb2.PrioritizeRequest(snapshot=snapshot, task_uid=uid, nodes=others)
            )
        except PLANNER_ERRORS as exc:
            return "", f"no suggestion: {planner_error(exc)[1]}"
        if not ranked.scores:
            return "", f"planned node {planned} no longer fits ({fit.message}); no other receiver fits either"
        best = ranked.scores[0].node
        return best, f"planned node {planned} no longer fits ({fit.message}); {best} is the best other receiver"

    def nominate(self, pod: Obj, node: str) -> bool:
        """Patch status.nominatedNodeName (only if the pod still has the UID it was selected for)."""
        meta = pod["metadata"]
        ops = [
            {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
            {"op": "add", "path": "/status/nominatedNodeName", "value": node},
        ]
        return observe.nomination(pod, node, self._patch(meta, ops, status=True, label="nominate"))

    def ungate(self, pod: Obj) -> bool:
        """Remove this project's scheduling gate and no other; False when there was none to remove."""
        return ungate(self._core, pod, self._hook)

    def _patch(self, meta: Obj, ops: list[Obj], *, status: bool, label: str) -> bool:
        return _patch(self._core, meta, ops, self._hook, status=status, label=label)


def gate_index(pod: Obj) -> int | None:
    """Where this project's gate is in ``spec.schedulingGates`` (None: the pod does not carry it)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return next((i for i, g in enumerate(gates) if g.get("name") == PLACEMENT_GATE), None)


def ungate(core: client.CoreV1Api, pod: Obj, hook: Hook) -> bool:
    """Remove this project's scheduling gate (and no other) from ``pod`` if it still has the same
    UID and the gate where it was read; False when there was none, or the pod changed or went."""
    index = gate_index(pod)
    if index is None:
        return False
    meta = pod["metadata"]
    ops = [
        {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
        {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": PLACEMENT_GATE},
        {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
    ]
    return _patch(core, meta, ops, hook, status=False, label="ungate")


def _patch(core: client.CoreV1Api, meta: Obj, ops: list[Obj], hook: Hook, *, status: bool, label: str) -> bool:
    name, namespace = meta["name"], meta["namespace"]
    call = core.patch_namespaced_pod_status if status else core.patch_namespaced_pod
    try:
        call(name, namespace, ops)
    except ApiException as exc:
        if exc.status not in (404, 409, 422):  # gone or changed: the next pass re-reads it
            raise
        return False
    finally:
        hook(f"{label}:{namespace}/{name}")
    return True
