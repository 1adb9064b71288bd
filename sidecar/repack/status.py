"""PlanResult -> RepackRun status (the guide's status.plan shape, conditions, explanations)."""

from __future__ import annotations

from collections import defaultdict

from sidecar.api.repackrun import Condition, Phase, Reason, TargetVerdict
from sidecar.api.v1alpha1 import plan_pb2
from sidecar.repack.fragmentation import Fragmentation
from sidecar.repack.result import PlanResult, TargetOutcome
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import to_user_units
from sidecar.wording import change, count


def fragmentation_message(f: Fragmentation) -> plan_pb2.Fragmentation:
    return plan_pb2.Fragmentation(
        resource=f.resource,
        providing_nodes=f.providing_nodes,
        occupied_nodes=f.occupied_nodes,
        min_occupied_nodes=f.min_occupied_nodes,
        fragmentation_percent=f.percent,
        min_exact=f.min_exact,
        min_method=f.min_method,
        allocated=f.allocated,
        allocatable=f.allocatable,
    )


def owner_of(state: ClusterState, group: int) -> plan_pb2.WorkloadOwner:
    """The controlling owner of a PodGroup (Volcano Job, ModelServing, ...), else its first owner."""
    refs = list(state.pod_groups[group].owner_references)
    ref = next((r for r in refs if r.controller), refs[0] if refs else None)
    if ref is None:
        return plan_pb2.WorkloadOwner(
            api_version="scheduling.volcano.sh/v1beta1", kind="PodGroup", name=state.pod_groups[group].name
        )
    return plan_pb2.WorkloadOwner(api_version=ref.api_version, kind=ref.kind, name=ref.name)


def outcome(state: ClusterState, result: PlanResult, spec: RunSpec) -> tuple[str, str]:
    """(reason, message) of the Complete condition."""
    if result.target is not None:
        return _target_outcome(state, result, spec, result.target)
    before, after = result.before, result.after
    if before.occupied_nodes <= before.min_occupied_nodes:
        return Reason.NO_FRAGMENTATION, (
            f"{spec.resource}: {before.occupied_nodes} occupied nodes, already the minimum "
            f"({before.min_occupied_nodes}, {before.min_method})"
        )
    freed = len(result.freed)
    gain = result.improvement
    if freed >= 1 and gain + 1e-9 >= spec.min_improvement:
        return Reason.REPACK_RECOMMENDED, (
            f"freeing {count(freed, 'node')} lowers {spec.resource} fragmentation "
            f"{change(before.percent, after.percent)} ({count(round(gain, 1), 'point')})"
        )
    if freed == 0:
        return Reason.INSUFFICIENT_IMPROVEMENT, (
            f"{spec.resource} fragmentation is {before.percent:.1f}% but no node can be emptied "
            "within scope, budgets and scheduling constraints"
        )
    return Reason.INSUFFICIENT_IMPROVEMENT, (
        f"the best feasible plan frees {freed} node(s) for {gain:.1f} points, below "
        f"minFragImprovementPercent {spec.min_improvement:g}"
    )


def _target_outcome(state: ClusterState, result: PlanResult, spec: RunSpec, target: TargetOutcome) -> tuple[str, str]:
    """A targeted run's verdict: whether the gang starts, after which moves, and where."""
    key = state.pod_group_key(target.group)
    landing = _landing(state, target)
    if target.verdict == TargetVerdict.ALREADY_RUNNING:
        return Reason.TARGET_ALREADY_RUNNING, (
            f"{key} already runs ({target.ready} tasks started, minAvailable {target.min_available}): nothing to move"
        )
    if target.verdict == TargetVerdict.FITS_NOW:
        phase = state.pod_groups[target.group].phase
        waits = (
            "; its PodGroup is Pending: it waits for the enqueue action (queue capacity), not for room"
            if phase == "Pending"
            else ""
        )
        return Reason.TARGET_FITS_NOW, f"{key} fits without moving anything ({landing}){waits}"
    if target.verdict == TargetVerdict.FITS:
        freed, gain = len(result.freed), result.improvement
        frag = f"{spec.resource} fragmentation {change(result.before.percent, result.after.percent)}"
        if gain + 1e-9 >= spec.min_improvement:
            return Reason.REPACK_RECOMMENDED, f"freeing {count(freed, 'node')} lets {key} start ({landing}); {frag}"
        return Reason.INSUFFICIENT_IMPROVEMENT, (
            f"freeing {count(freed, 'node')} would let {key} start, but lowers fragmentation by {gain:.1f} points, "
            f"below minFragImprovementPercent {spec.min_improvement:g}"
        )
    if not target.waiting:
        phase = state.pod_groups[target.group].phase or "unknown"
        return Reason.TARGET_DOES_NOT_FIT, (
            f"{key} has no waiting pods (PodGroup phase {phase}, minAvailable {target.min_available}, "
            f"{target.ready} started): a Volcano Job's pods exist once its PodGroup is Inqueue, which the enqueue "
            "action grants within queue capacity — it waits for that, not for room"
        )
    after = f"after emptying {count(len(result.freed), 'node')}, " if result.freed else ""
    if target.stuck >= 0:
        return Reason.TARGET_DOES_NOT_FIT, (
            f"no plan within scope and budgets lets {key} start: {after}pod {state.task_name[target.stuck]} "
            f"still does not fit: {target.why}"
        )
    return Reason.TARGET_DOES_NOT_FIT, (
        f"no plan within scope and budgets lets {key} start: {after}fewer than minAvailable "
        f"{target.min_available} of its tasks can be placed"
    )


def _landing(state: ClusterState, target: TargetOutcome) -> str:
    """ "2 tasks on node-a, node-b" for the messages."""
    nodes = sorted({state.node_names[n] for _, n in target.placements})
    return f"{count(len(target.placements), 'task')} on {', '.join(nodes)}"


def target_message(state: ClusterState, target: TargetOutcome) -> plan_pb2.TargetPlan:
    out = plan_pb2.TargetPlan(
        pod_group=state.pod_group_key(target.group),
        verdict=target.verdict,
        min_available=target.min_available,
        ready=target.ready,
        waiting=len(target.waiting),
        stuck_pod_name=state.task_name[target.stuck] if target.stuck >= 0 else "",
        message=target.why,
    )
    for t, n in target.placements:
        out.placements.add(pod_name=state.task_name[t], node=state.node_names[n], pipelined=t in target.pipelined)
    return out


def to_status(state: ClusterState, result: PlanResult, spec: RunSpec) -> plan_pb2.RepackStatus:
    reason, message = outcome(state, result, spec)
    recommended = reason == Reason.REPACK_RECOMMENDED
    status = plan_pb2.RepackStatus(phase=Phase.SUCCEEDED, warnings=state.warnings)
    status.conditions.add(type=Condition.COMPLETE, status="True", reason=reason, message=message)
    plan = status.plan
    summary = plan.summary
    summary.resource = spec.resource
    summary.frag_before_percent = round(result.before.percent, 1)
    summary.before.CopyFrom(fragmentation_message(result.before))
    summary.resolved_scope.pod_group_count = result.pod_group_count
    summary.resolved_scope.node_count = result.node_count
    after = result.after if recommended else result.before
    summary.frag_after_percent = round(after.percent, 1)
    summary.after.CopyFrom(fragmentation_message(after))
    if recommended:
        moves = result.moves
        summary.freed_node_count = len(result.freed)
        g = state.resource(spec.resource)
        grouped: dict[int, list[int]] = defaultdict(list)
        for k, m in enumerate(moves):
            grouped[int(state.task_pod_group[m.task])].append(k)
        moved_cards = 0.0
        for group in sorted(grouped, key=lambda x: state.pod_group_key(x)):
            pg = state.pod_groups[group]
            entry = plan.moves.add(namespace=pg.namespace, pod_group_name=pg.name, owner=owner_of(state, group))
            cards = 0.0
            for k in grouped[group]:
                m = moves[k]
                c = to_user_units(spec.resource, float(state.task_req[m.task, g]))
                cards += c
                entry.pods.add(
                    name=state.task_name[m.task],
                    from_node=state.node_names[m.source],
                    to_node=state.node_names[m.target],
                    cards=c,
                )
            entry.cards = cards
            moved_cards += cards
        summary.moved_card_count = moved_cards
        plan.freed_nodes.extend(state.node_names[n] for n in result.freed)
        total = result.gang.totals()
        summary.cost.CopyFrom(
            plan_pb2.PlanCost(
                affected_workloads=total.affected_workloads,
                pod_groups_below_min_available=total.below_min_available,
                affected_cards=to_user_units(spec.resource, total.affected_resources),
                moved_cards=to_user_units(spec.resource, total.moved_resources),
                moved_pods=total.moved_pods,
            )
        )
    if result.target is not None:
        plan.target.CopyFrom(target_message(state, result.target))
    for n in sorted(result.outcomes, key=lambda x: state.node_names[x]):
        o = result.outcomes[n]
        selected = o.selected and recommended
        plan.candidates.add(
            node=state.node_names[n],
            selected=selected,
            reason=o.reason if selected or not o.selected else "BelowThreshold",
            message=o.message if selected or not o.selected else message,
        )
    return status
