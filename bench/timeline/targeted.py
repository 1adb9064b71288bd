"""Plans for one waiting job: the targeted planner (``spec.for``) and the drain baseline.

Both answer a :class:`JobPlan` — the moves to execute, or None when no plan lets the job start —
and both are gated as the product gates an Execute run: the planner's moves are executed only when
its verdict is RepackRecommended (:func:`sidecar.repack.status.outcome`, what the RepackRun's status
says); a drain's only when allocate starts the job after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.baselines import ffd_drain
from bench.timeline.engine import Engine
from bench.timeline.live import live_state, run_spec
from sidecar.api.repackrun import Reason
from sidecar.mirror.core import Mirror
from sidecar.repack.planner import Planner
from sidecar.repack.status import outcome
from sidecar.repack.targeted import usable_nodes
from sidecar.snapshot.state import ClusterState


@dataclass(frozen=True)
class JobPlan:
    moves: list[tuple[int, int]] | None  # (task, planned node); None: nothing to execute
    verdict: str  # the planner's TargetVerdict and reason, or the drain's answer
    freed: int = 0  # nodes the plan empties (the drain: nodes it drains)


def plan_untargeted(engine: Engine, budget: int | None) -> tuple[list[tuple[int, int]], str, int]:
    """The guide's run on the cluster now: (moves to execute, reason, nodes the plan frees)."""
    live = live_state(engine)
    spec = run_spec(max_pod_groups=budget)
    result = Planner(Mirror(live, engine.mirror.conf), spec).plan()
    reason = outcome(live, result, spec)[0]
    moves = [(m.task, m.target) for m in result.moves] if reason == Reason.REPACK_RECOMMENDED else []
    return moves, str(reason), len(result.freed)


def targeted_for(engine: Engine, j: int) -> JobPlan:
    """The targeted planner for waiting job ``j`` (its PodGroup, ``spec.for.podGroup``)."""
    live = live_state(engine)
    pg = live.pod_groups[engine.jobs[j].group]
    spec = run_spec(target=f"{pg.namespace}/{pg.name}")
    result = Planner(Mirror(live, engine.mirror.conf), spec).plan()
    assert result.target is not None
    reason = outcome(live, result, spec)[0]
    verdict = f"{result.target.verdict}/{reason}"
    if reason != Reason.REPACK_RECOMMENDED:
        return JobPlan(None, verdict)
    return JobPlan([(m.task, m.target) for m in result.moves], verdict, len(result.freed))


def drain_nodes(engine: Engine, live: ClusterState, j: int) -> list[str]:
    """The nodes a drain for job ``j`` may empty: the ones the targeted planner would consider
    (its node-only checks pass and its request fits the allocatable: repack.targeted.usable_nodes)."""
    mirror = Mirror(live, engine.mirror.conf)
    return mirror.names(usable_nodes(mirror, list(engine.waiting[j])))


def drain_for(engine: Engine, j: int) -> JobPlan:
    """First-fit-decreasing drain (bench.baselines.ffd_drain) of the nodes job ``j`` could use,
    played node by node on a checkpoint through the engine's rebuild path; the shortest prefix of
    drained nodes after which allocate starts the job, or None when the whole drain does not."""
    live = live_state(engine)
    nodes = drain_nodes(engine, live, j)
    if not nodes:  # an empty include would select every node
        return JobPlan(None, "DoesNotFit")
    proposal = ffd_drain(live, run_spec(nodes=nodes))
    by_source: dict[int, list[tuple[int, int]]] = {}
    for t, target in proposal.evictions:
        assert target is not None  # a drain always names its receiver
        by_source.setdefault(int(live.task_node[t]), []).append((t, target))
    sim = engine.sim
    mark = sim.checkpoint()
    moves: list[tuple[int, int]] = []
    try:
        for drained, evictions in enumerate(by_source.values(), 1):
            for t, target in evictions:
                if sim.node_of[t] >= 0 and sim.on_node()[t]:
                    engine.rebuild(t, target)
            moves += evictions
            if engine.fits(j):
                return JobPlan(moves, "Fits", drained)
    finally:
        sim.rollback(mark)
    return JobPlan(None, "DoesNotFit")
