"""How an Execute run ends: its ``status.result`` and the one condition that names the outcome.

Every path ends in a terminal phase with a condition (never silent, never stuck). The first row
that matches decides:

| # | when (first match wins)                                           | phase     | condition True / reason  |
|---|-------------------------------------------------------------------|-----------|--------------------------|
| 1 | spec unparsable, or the planner answers INVALID_ARGUMENT          | Failed    | Failed/InvalidSpec       |
| 2 | planner down, slow or session lost while replanning, past its wait| Failed    | Failed/PlannerUnavailable|
| 3 | the replan has no moves (nothing evicted)                         | Succeeded | Complete/<planner reason>|
| 4 | an eviction ended Blocked or Failed and the target is not reached | Failed    | Failed/EvictionBlocked   |
| 5 | a relocation unfinished at the execution deadline (TimedOut)      | Failed    | Failed/ExecutionTimedOut |
| 6 | all relocations finished, not every planned node free (0 or some) | Failed    | Failed/PartiallyCompleted|
| 7 | target reached, some replacement bound off its plannedNodeName    | Succeeded | Complete/ALTERNATIVE     |
| 8 | target reached, every replacement on its planned node             | Succeeded | Complete/ExecutionCompleted |

A targeted run (``spec.for``: the workload it makes room for, journaled in ``status.target``)
adds two rows before 4-8 decide the rest, and appends what happened to the workload to their
message:

| T1 | the workload's PodGroup went away during the run                  | Failed    | Failed/TargetDeleted     |
| T2 | the workload not started (nominated pods bound) by the deadline   | Failed    | Failed/ExecutionTimedOut |

<planner reason> is NoFragmentation or InsufficientImprovement (as the DryRun says), or for a
targeted run TargetAlreadyRunning, TargetFitsWithoutRepack or TargetDoesNotFit; ALTERNATIVE is
ExecutionCompletedWithAlternativePlacement (BoundElsewhere, or Bound on a selected node that is not
the planned one: the guide's "actualNodeName may differ from the first two fields").
Rows 1-2 happen before the journal exists, row 3 right after the replan; rows 4-8 at the finish.
The **target** is the plan's ``freedNodes``: reached when none of them holds the goal resource
(``sidecar.snapshot.holding``: pods without it — DaemonSets, kube-proxy — and pods still
terminating never count, as Evaluate counts them). A Failed run also carries
``Complete`` False with the same reason, and ``Progressing`` turns False with it.

``result.fragAfterPercent`` is Evaluate on a fresh snapshot (absent when the planner could not
answer); ``metricsVerified`` is true only when it was measured after every relocation reached a
terminal phase with every evicted pod's replacement bound.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sidecar.api.repackrun import EvictionPhase, Phase, PlacementPhase, Reason, TargetPhase
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1.plan_pb2 import TargetProgress
from sidecar.snapshot.decode import decode
from sidecar.snapshot.holding import holding_node_names
from sidecar.watcher.execute.journal import ExecutionResult, Relocation, done, key
from sidecar.wording import count, percent

COMPLETED, ALTERNATIVE = Reason.EXECUTION_COMPLETED, Reason.EXECUTION_COMPLETED_ELSEWHERE
EVICTION_BLOCKED, TIMED_OUT_REASON, PARTIAL = (
    Reason.EVICTION_BLOCKED,
    Reason.EXECUTION_TIMED_OUT,
    Reason.PARTIALLY_COMPLETED,
)


@dataclass(frozen=True)
class RunOutcome:
    phase: Phase
    reason: str
    message: str


def freed_now(snapshot: pb.Snapshot, planned: list[str], resource: str, skip: Collection[str] = ()) -> list[str]:
    """The planned freed nodes that do not hold ``resource`` now (``sidecar.snapshot.holding``: a
    pod still terminating there holds nothing, as Evaluate counts it); the pods with UIDs in
    ``skip`` (a targeted run's workload, which the nodes were freed for) do not count."""
    held = holding_node_names(decode(snapshot), resource, skip)
    return [n for n in planned if n not in held]


def _pods(rels: list[Relocation]) -> str:
    return ", ".join(key(r) for r in rels)


def outcome(
    rels: list[Relocation], planned: list[str], freed: list[str], target: TargetProgress | None = None
) -> RunOutcome:
    """Rows 4-8 of the table, and a targeted run's rows T1-T2, first match wins."""
    moved = _moves(rels, planned, freed)
    if target is None:
        return moved
    if target.phase == TargetPhase.DELETED:
        return RunOutcome(Phase.FAILED, Reason.TARGET_DELETED, f"{target.message}; {moved.message}")
    if target.phase != TargetPhase.STARTED:
        why = target.message or f"{target.pod_group} had not started"
        return RunOutcome(Phase.FAILED, TIMED_OUT_REASON, f"{why}; {moved.message}")
    return RunOutcome(moved.phase, moved.reason, f"{moved.message}; {target.message}")


def _moves(rels: list[Relocation], planned: list[str], freed: list[str]) -> RunOutcome:
    """Rows 4-8: the relocations' outcome."""
    nodes = f"{len(freed)} of {len(planned)} planned nodes freed ({', '.join(freed) or 'none'})"
    reached = set(planned) <= set(freed)
    stuck = [r for r in rels if r.eviction.phase in (EvictionPhase.BLOCKED, EvictionPhase.FAILED)]
    if stuck and not reached:
        why = "; ".join(f"{key(r)}: {r.eviction.message}" for r in stuck)
        return RunOutcome(Phase.FAILED, EVICTION_BLOCKED, f"{len(stuck)} pods not evicted ({why}); {nodes}")
    late = [r for r in rels if r.placement.phase == PlacementPhase.TIMED_OUT]
    if late:
        late_pods = f"unfinished at the execution deadline: {_pods(late)}; {nodes}"
        return RunOutcome(Phase.FAILED, TIMED_OUT_REASON, late_pods)
    if not reached:
        holding = sorted(set(planned) - set(freed))
        return RunOutcome(Phase.FAILED, PARTIAL, f"{nodes}; still holding the resource: {', '.join(holding)}")
    placed = (PlacementPhase.BOUND, PlacementPhase.BOUND_ELSEWHERE)
    moved = [r for r in rels if r.placement.phase in placed and r.placement.actual_node_name]
    other = [r for r in moved if r.placement.actual_node_name != r.planned_node_name]
    if other:
        where = ", ".join(f"{key(r)} on {r.placement.actual_node_name} (planned {r.planned_node_name})" for r in other)
        return RunOutcome(Phase.SUCCEEDED, ALTERNATIVE, f"{nodes}; placed elsewhere: {where}")
    return RunOutcome(Phase.SUCCEEDED, COMPLETED, f"{nodes}; every pod on its planned node")


def result(
    rels: list[Relocation], planned: list[str], freed: list[str], frag: float | None, before: float, note: str = ""
) -> ExecutionResult:
    """``status.result`` after the run (``frag`` None: not measured, ``note`` says why)."""
    evicted = [r for r in rels if r.eviction.phase == EvictionPhase.EVICTED]
    replaced_phases = (
        PlacementPhase.BOUND,
        PlacementPhase.BOUND_ELSEWHERE,
        PlacementPhase.SKIPPED,
    )  # Skipped: it finished
    replaced = all(r.placement.phase in replaced_phases for r in evicted)
    verified = frag is not None and replaced and all(done(r) for r in rels)
    cards = sum(r.cards for r in evicted)
    after = "not measured" if frag is None else percent(frag)
    message = (
        f"{len(freed)} of {count(len(planned), 'planned node')} freed; {count(len(evicted), 'pod')} evicted, "
        f"{count(cards, 'card')} moved; fragmentation {percent(before)} -> {after}"
    )
    if note:
        message += f" ({note})"
    return ExecutionResult(
        frag_after_percent=frag,
        freed_node_count=len(freed),
        freed_nodes=list(freed),
        moved_card_count=cards,
        evicted_pod_count=len(evicted),
        metrics_verified=verified,
        message=message,
    )
