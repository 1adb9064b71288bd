"""Plans for the runs: the guide's run, the targeted planner (``spec.for``) and the drain baseline,
and how each trigger picks the job its run is for.

A plan answers a :class:`JobPlan` — the moves to execute, or None — gated as the product gates an
Execute run: the planner's moves are executed only when its verdict is RepackRecommended
(:func:`sidecar.repack.status.outcome`: a RepackRun's status carries moves only then); a drain's
only when allocate starts the job after it. The pending trigger picks its job as a RepackPolicy's
whenPending check does, with the product's own check (:func:`sidecar.repack.pending.check`: the
first candidate whose verdict is Fragmentation, at most ``max_plans`` plans); the drain's trigger
picks the first candidate its drain lets start, trying as many.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.baselines import ffd_drain
from bench.timeline.engine import Engine
from bench.timeline.live import Live, live_state, run_spec
from sidecar.api.repackrun import Reason, Waits
from sidecar.mirror.core import Mirror
from sidecar.repack import pending
from sidecar.repack.planner import Planner
from sidecar.repack.status import outcome
from sidecar.repack.targeted import usable_nodes


@dataclass(frozen=True)
class JobPlan:
    moves: list[tuple[int, int]] | None  # (engine task, planned node); None: nothing to execute
    verdict: str  # the planner's TargetVerdict and reason, or the drain's answer
    freed: int = 0  # nodes the plan empties (the drain: nodes it drains)


def plan_untargeted(engine: Engine, budget: int | None) -> tuple[list[tuple[int, int]], str, int]:
    """The guide's run on the cluster now: (moves to execute, reason, nodes the plan frees)."""
    live = live_state(engine)
    spec = run_spec(max_pod_groups=budget)
    result = Planner(Mirror(live.state, engine.mirror.conf), spec).plan()
    reason = outcome(live.state, result, spec)[0]
    moves = [(m.task, m.target) for m in result.moves] if reason == Reason.REPACK_RECOMMENDED else []
    return live.engine_moves(moves), str(reason), len(result.freed)


def _key(engine: Engine, j: int) -> str:
    pg = engine.state.pod_groups[engine.jobs[j].group]
    return f"{pg.namespace}/{pg.name}"


def targeted_for(engine: Engine, j: int) -> JobPlan:
    """The targeted planner for waiting job ``j`` (its PodGroup, ``spec.for.podGroup``)."""
    live = live_state(engine)
    spec = run_spec(target=_key(engine, j))
    result = Planner(Mirror(live.state, engine.mirror.conf), spec).plan()
    assert result.target is not None
    reason = outcome(live.state, result, spec)[0]
    verdict = f"{result.target.verdict}/{reason}"
    if reason != Reason.REPACK_RECOMMENDED:
        return JobPlan(None, verdict)
    return JobPlan(live.engine_moves([(m.task, m.target) for m in result.moves]), verdict, len(result.freed))


def check_pending(engine: Engine, candidates: list[int], max_plans: int) -> tuple[int | None, list[str]]:
    """The whenPending check on ``candidates`` (oldest first): the job a run is created for (the
    first whose verdict is Fragmentation), and every candidate's verdict."""
    live = live_state(engine)
    mirror = Mirror(live.state, engine.mirror.conf)
    found = pending.check(mirror, run_spec(), [_key(engine, j) for j in candidates], max_plans)
    chosen = next((j for j, w in zip(candidates, found, strict=True) if w.verdict == Waits.FRAGMENTATION), None)
    return chosen, [str(w.verdict) for w in found]


def check_drain(engine: Engine, candidates: list[int], max_plans: int) -> tuple[int | None, list[str]]:
    """The drain's trigger: the first of ``candidates`` (at most ``max_plans`` tried) its drain
    lets start."""
    verdicts: list[str] = []
    for j in candidates[:max_plans]:
        fits = drain_for(engine, j).moves is not None
        verdicts.append("Fits" if fits else "DoesNotFit")
        if fits:
            return j, verdicts
    return None, verdicts + ["Unchecked"] * (len(candidates) - len(verdicts))


def _drain_nodes(engine: Engine, live: Live, j: int) -> list[str]:
    """The nodes a drain for job ``j`` may empty: the ones the targeted planner would consider
    (its node-only checks pass and its request fits the allocatable: repack.targeted.usable_nodes)."""
    mirror = Mirror(live.state, engine.mirror.conf)
    index = {int(t): k for k, t in enumerate(live.tasks.tolist())}
    return mirror.names(usable_nodes(mirror, [index[t] for t in engine.waiting[j]]))


def drain_for(engine: Engine, j: int) -> JobPlan:
    """First-fit-decreasing drain (bench.baselines.ffd_drain) of the nodes job ``j`` could use,
    played node by node on a checkpoint through the engine's rebuild path; the shortest prefix of
    drained nodes after which allocate starts the job, or None when the whole drain does not."""
    live = live_state(engine)
    nodes = _drain_nodes(engine, live, j)
    if not nodes:  # an empty include would select every node
        return JobPlan(None, "DoesNotFit")
    proposal = ffd_drain(live.state, run_spec(nodes=nodes))
    by_source: dict[int, list[tuple[int, int]]] = {}
    for t, target in proposal.evictions:
        assert target is not None  # a drain always names its receiver
        by_source.setdefault(int(live.state.task_node[t]), []).append((int(live.tasks[t]), target))
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
