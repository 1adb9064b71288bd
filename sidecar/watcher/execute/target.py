"""A targeted Execute run's workload (``spec.for``): nominate its pods to the freed nodes, follow it
until it starts, and stop the run if the workload goes away.

The plan says where the gang lands (``status.plan.target.placements``); ``status.target`` is the
journal of what the run does about it, written with the relocations before the first eviction:

* **When**: once no eviction is pending. The freed nodes' pods are then terminating, and Volcano
  counts a releasing pod's request in the node's FutureIdle, so allocate pipelines the gang onto
  the nodes as they drain; waiting for every rebuilt pod to settle first would leave the nodes
  to whichever job asks first.
* **How**: each pod's ``status.nominatedNodeName`` (allocate tries that node first when the pod
  fits its FutureIdle: the guide's suggestion, never a reservation), guarded by the pod's UID;
  the nomination is journaled Pending with its node first, so a restart re-sends it.
* **Until**: every nominated pod is bound (``Started``: the gang is running), or the execution
  deadline (``NotStarted``).
* **Gone**: the PodGroup deleted, or recreated under the name with another UID, is ``Deleted``:
  the evictions not yet made are cancelled (the pods they would move stay), rebuilt pods already
  evicted are still placed, and the run ends ``TargetDeleted``.
"""

from __future__ import annotations

from sidecar.api.repackrun import TARGET_SETTLED, EvictionPhase, NominationPhase, Phase, PlacementPhase, TargetPhase
from sidecar.api.v1alpha1 import plan_pb2
from sidecar.api.v1alpha1.plan_pb2 import TargetNomination, TargetProgress
from sidecar.kubeobj import Obj
from sidecar.watcher.execute.eviction import read_pod
from sidecar.watcher.execute.journal import (
    EvictionRecord,
    Relocation,
    apply_changes,
    changed,
    from_json,
    relocations_of,
    to_json,
)
from sidecar.watcher.execute.placement import is_pending
from sidecar.watcher.kit.port import PODGROUPS, Cluster
from sidecar.watcher.kit.status import Hook, StatusWriter, phase_of, status_of

__all__ = ["TargetNomination", "TargetProgress", "cancelled", "initial", "progress_of", "settled"]

#: nominations that are finished
_FINAL = (NominationPhase.BOUND, NominationPhase.BOUND_ELSEWHERE, NominationPhase.GONE)


def initial(plan: plan_pb2.Plan, pod_group_uid: str) -> TargetProgress | None:
    """The record journaled at admission: one Pending nomination per target placement (None when
    the run has no target, or the plan places none)."""
    target = plan.target
    if not target.pod_group or not target.placements:
        return None
    return TargetProgress(
        pod_group=target.pod_group,
        pod_group_uid=pod_group_uid,
        phase=TargetPhase.WAITING,
        nominations=[
            TargetNomination(pod_name=p.pod_name, node_name=p.node, phase=NominationPhase.PENDING)
            for p in target.placements
        ],
        message="waiting for the evictions",
    )


def progress_of(status: Obj) -> TargetProgress | None:
    doc = status.get("target")
    return from_json(doc, TargetProgress()) if doc else None


def settled(progress: TargetProgress | None) -> bool:
    return progress is None or progress.phase in TARGET_SETTLED


def namespace_of(progress: TargetProgress) -> str:
    return progress.pod_group.partition("/")[0]


def exists(cluster: Cluster, progress: TargetProgress) -> bool:
    """Whether the run's PodGroup is still there: the same object (UID), not deleted."""
    namespace, _, name = progress.pod_group.partition("/")
    group = cluster.get(PODGROUPS, name, namespace)
    if group is None or (group.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return not progress.pod_group_uid or group["metadata"].get("uid") == progress.pod_group_uid


def deleted(progress: TargetProgress) -> TargetProgress:
    out = _copy(progress)
    out.phase = TargetPhase.DELETED
    out.message = f"PodGroup {progress.pod_group} was deleted during the run: no further pod is evicted"
    return out


def cancelled(rel: Relocation, pod_group: str) -> Relocation:
    """A relocation whose eviction is called off because the target went away."""
    record = EvictionRecord()
    record.CopyFrom(rel.eviction)
    record.phase, record.message = EvictionPhase.FAILED, f"not evicted: the target {pod_group} was deleted"
    return changed(rel, eviction=record, phase=PlacementPhase.SKIPPED, message="not evicted (the target is gone)")


def advance(cluster: Cluster, progress: TargetProgress, hook: Hook) -> tuple[TargetProgress, list[tuple[Obj, str]]]:
    """The record's next state and the nominations to send once it is journaled: (pod, node) for
    each pod still pending whose nomination is journaled but not confirmed; bound pods recorded."""
    out = _copy(progress)
    namespace = namespace_of(progress)
    sends: list[tuple[Obj, str]] = []
    for n in out.nominations:
        if n.phase in _FINAL:
            continue
        pod = read_pod(cluster, namespace, n.pod_name, hook)
        if pod is None or (n.pod_uid and pod["metadata"].get("uid") != n.pod_uid):
            n.phase = NominationPhase.GONE
            continue
        n.pod_uid = str(pod["metadata"]["uid"])
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node:
            n.actual_node_name = node
            n.phase = NominationPhase.BOUND if node == n.node_name else NominationPhase.BOUND_ELSEWHERE
        elif n.phase == NominationPhase.PENDING and is_pending(pod):
            sends.append((pod, n.node_name))
    out.phase, out.message = _summary(out)
    return out, sends


def confirm(progress: TargetProgress, pod_name: str) -> TargetProgress:
    """The record with ``pod_name``'s nomination confirmed as written."""
    out = _copy(progress)
    for n in out.nominations:
        if n.pod_name == pod_name and n.phase == NominationPhase.PENDING:
            n.phase = NominationPhase.NOMINATED
    out.phase, out.message = _summary(out)
    return out


def not_started(progress: TargetProgress) -> TargetProgress:
    out = _copy(progress)
    out.phase = TargetPhase.NOT_STARTED
    waiting = [n.pod_name for n in out.nominations if n.phase not in _FINAL]
    out.message = f"not started by the execution deadline: {', '.join(waiting)} not bound"
    return out


def _summary(progress: TargetProgress) -> tuple[str, str]:
    noms = list(progress.nominations)
    bound = [n for n in noms if n.phase in (NominationPhase.BOUND, NominationPhase.BOUND_ELSEWHERE)]
    if bound and len(bound) == len(noms):
        where = ", ".join(sorted({n.actual_node_name for n in bound}))
        return TargetPhase.STARTED, f"{progress.pod_group} started: {len(bound)} pods bound on {where}"
    sent = [n for n in noms if n.phase != NominationPhase.PENDING]
    if sent:
        gone = sum(n.phase == NominationPhase.GONE for n in noms)
        extra = f", {gone} gone" if gone else ""
        return TargetPhase.NOMINATED, f"{len(bound)} of {len(noms)} pods bound{extra}"
    return progress.phase or TargetPhase.WAITING, progress.message


def _copy(message: TargetProgress) -> TargetProgress:
    out = TargetProgress()
    out.CopyFrom(message)
    return out


def journal(
    writer: StatusWriter, run: Obj, old: TargetProgress, new: TargetProgress, *, cancel: bool = False
) -> tuple[bool, Obj]:
    """Write ``status.target`` over the record the pass read (with ``cancel``, the pending
    evictions are called off in the same write), and an event when its phase changes. Returns
    (go on, the run as now known): False when the run left Running; after a conflict with another
    writer's newer record, True and that run (the pass goes on from it)."""
    if new == old:
        return True, run
    newer: list[Obj] = []

    def step(cur: Obj) -> Obj | None:
        if phase_of(cur) != Phase.RUNNING:
            return None
        status = status_of(cur)
        if progress_of(status) != old:
            newer.append(cur)
            return None
        status["target"] = {**(status.get("target") or {}), **to_json(new)}
        if cancel:
            pending = [r for r in relocations_of(status) if r.eviction.phase == EvictionPhase.PENDING]
            apply_changes(status, [(r, cancelled(r, new.pod_group)) for r in pending])
        return status

    written = writer.write(run, step, "target")
    if written is None:
        return bool(newer), newer[-1] if newer else run
    if new.phase != old.phase:
        writer.event(written, f"Target{new.phase}", new.message, warning=new.phase == TargetPhase.DELETED)
    return True, written
