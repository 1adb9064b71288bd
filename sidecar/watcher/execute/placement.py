"""Placing a rebuilt pod: recognise it by the journal's record, pick a node, suggest it, track it.

* **Recognition, never guesswork**: the replacement has the victim's namespace and name, another
  UID, is not terminating, and runs in the original PodGroup or in one whose controller owner has
  the recorded owner UID (a ModelServing ServingGroup rebuilt under a new PodGroup name; that
  name is recorded as ``replacementPodGroupName``).
* **Selection** (the guide's "after confirming that the candidate node is still available"), on
  one sidecar session per pass (``Placements``: the cluster decoded once): ``Filter`` the
  replacement on the planned node; when it fits, the planned node. Otherwise ``Prioritize`` it
  over every node except the plan's freed nodes and nodes that do not hold the goal resource
  (receiver rule 1, ``sidecar.snapshot.holding``: never light an idle node up again), best first.
  The node chosen is recorded in the session with ``Pipeline`` (Volcano's Statement.Pipeline), so
  the pass's next selections count it there. No candidate (or no sidecar) ⇒ no nomination: the
  scheduler decides (WaitingForScheduler).
* **Suggestion**: ``status.nominatedNodeName`` through pods/status, guarded by a JSON-patch test
  of the replacement's UID; then only this project's scheduling gate is removed. Nothing is
  cordoned, tainted or reserved.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from sidecar.api.repackrun import PlacementPhase
from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot.decode import decode
from sidecar.snapshot.holding import holding_node_names
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher import observer as observe
from sidecar.watcher.execute.journal import Relocation
from sidecar.watcher.kit.port import PODS, ApiError, Cluster
from sidecar.watcher.kit.status import Hook
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar, planner_error

#: the scheduling gate this project's admission puts on rebuilt pods ("placement lease and SchedulerGate")
PLACEMENT_GATE = "repack.volcano.sh/placement"


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


def bound_phase(rel: Relocation, node: str) -> PlacementPhase:
    """Bound when on the selected node (the planned one when nothing was nominated), else BoundElsewhere."""
    target = rel.placement.selected_node_name or rel.planned_node_name
    return PlacementPhase.BOUND if node == target else PlacementPhase.BOUND_ELSEWHERE


def receivers(snapshot: pb.Snapshot, resource: str, freed: list[str], skip_uid: str = "") -> list[str]:
    """Nodes a replacement may be suggested: not a node the plan frees, and not one that provides
    ``resource`` but does not hold it (receiver rule 1, ``snapshot.holding``: never light an idle
    node up again). ``skip_uid``: a task left out of the count (the replacement itself)."""
    held = holding_node_names(decode(snapshot), resource, (skip_uid,) if skip_uid else ())
    return [
        n.name
        for n in snapshot.nodes
        if n.name not in freed and (n.allocatable.get(resource, 0) <= 0 or n.name in held)
    ]


class Placements:
    """One pass's selections on one sidecar session: the snapshot is uploaded (decoded) once when
    the first selection needs it, each chosen node is recorded there with ``Pipeline``, and
    ``close`` drops the session at the end of the pass."""

    def __init__(self, sidecar: Sidecar, snapshot: pb.Snapshot, resource: str, freed: list[str]) -> None:
        self._sidecar, self._snapshot = sidecar, snapshot
        self._resource, self._freed = resource, freed
        self._known = {t.uid for t in snapshot.tasks}
        self._receivers: list[str] | None = None
        self._session = ""

    def knows(self, uid: str) -> bool:
        """Whether the pass's snapshot holds the pod (the informer cache may lag the pod's GET)."""
        return uid in self._known

    def _session_id(self) -> str:
        if not self._session:
            opened = self._sidecar.open_session(service_pb2.OpenSessionRequest(snapshot=self._snapshot))
            self._session = opened.session_id
        return self._session

    def select(self, rel: Relocation, uid: str) -> tuple[str, str]:
        """(node, why): the node to suggest for replacement ``uid`` (recorded in the session), or
        "" with the reason there is none."""
        planned = rel.planned_node_name
        try:
            session = self._session_id()
            fit = self._sidecar.filter(service_pb2.FilterRequest(session_id=session, task_uid=uid, nodes=[planned]))
            if planned in fit.feasible_nodes:
                node, why = planned, f"planned node {planned} still fits"
            else:
                if self._receivers is None:  # the pass's snapshot decoded once, when a choice needs it
                    self._receivers = receivers(self._snapshot, self._resource, self._freed)
                others = [n for n in self._receivers if n != planned]
                if not others:
                    return "", f"planned node {planned} no longer fits ({fit.message}) and no other node may receive it"
                request = service_pb2.PrioritizeRequest(session_id=session, task_uid=uid, nodes=others)
                ranked = self._sidecar.prioritize(request)
                if not ranked.scores:
                    return "", f"planned node {planned} no longer fits ({fit.message}); no other receiver fits either"
                node = ranked.scores[0].node
                why = f"planned node {planned} no longer fits ({fit.message}); {node} is the best other receiver"
            self._sidecar.pipeline(service_pb2.PipelineRequest(session_id=session, task_uid=uid, node=node))
        except PLANNER_ERRORS as exc:
            return "", f"no suggestion: {planner_error(exc)[1]}"
        return node, why

    def close(self) -> None:
        """Drop the session (best effort: it expires by itself)."""
        if self._session:
            with contextlib.suppress(*PLANNER_ERRORS):
                self._sidecar.close_session(self._session)
            self._session = ""


def gate_index(pod: Obj) -> int | None:
    """Where this project's gate is in ``spec.schedulingGates`` (None: the pod does not carry it)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return next((i for i, g in enumerate(gates) if g.get("name") == PLACEMENT_GATE), None)


def nominate(cluster: Cluster, pod: Obj, node: str, hook: Hook) -> bool:
    """Patch status.nominatedNodeName (only if the pod still has the UID it was selected for)."""
    meta = pod["metadata"]
    ops = [
        {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
        {"op": "add", "path": "/status/nominatedNodeName", "value": node},
    ]
    return observe.nomination(pod, node, _patch(cluster, meta, ops, hook, status=True, label="nominate"))


def ungate(cluster: Cluster, pod: Obj, hook: Hook) -> bool:
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
    return _patch(cluster, meta, ops, hook, status=False, label="ungate")


def _patch(cluster: Cluster, meta: Obj, ops: list[Obj], hook: Hook, *, status: bool, label: str) -> bool:
    name, namespace = meta["name"], meta["namespace"]
    try:
        cluster.patch(PODS, name, namespace, ops, status=status)
    except ApiError as exc:
        if exc.status not in (404, 409, 422):  # gone or changed: the next pass re-reads it
            raise
        return False
    finally:
        hook(f"{label}:{namespace}/{name}")
    return True
