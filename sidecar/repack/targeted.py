"""Targeted runs (``spec.for``): the fewest moves that let one waiting gang start.

The guide's run frees as many nodes as it can. An operator whose job waits wants something
narrower: room for *that* job, as Volcano would place it, at the least disruption. Given the
target's PodGroup the planner

1. resolves it (a PodGroup, or the PodGroup of a Volcano Job or a ModelServing) and refuses, naming
   ``spec.for``, a target it cannot find or that Volcano does not schedule;
2. asks Volcano's allocate cycle (:mod:`sidecar.mirror.allocate`) about the cluster as it is: a
   gang already started, or one that would start with nothing moved, ends the run there;
3. otherwise runs the guide's greedy (:mod:`sidecar.repack.greedy`, the interruption order, the
   budgets, PodDisruptionBudgets and receiver rules unchanged) over the nodes the gang could use
   only — a waiting task passes the node's node-only checks and fits its allocatable — never
   moving the target's own pods, and asks allocate again after every emptied node: the run stops
   as soon as the gang fits on the planned cluster;
4. plans again over the emptied nodes the gang lands on, and keeps that plan when the gang still
   fits (an emptied node it does not use was a move for nothing);
5. reports where each task lands, or the first task that still does not fit with Volcano's reason.

How the guide's fields combine with a target: ``goals[0].resource`` is the card resource the gang
waits for (it must request it); ``minFragImprovementPercent`` still gates the recommendation (a
plan that lets the gang start but lowers fragmentation less is InsufficientImprovement); scope and
``maxPerRun`` bound the moves as in any run. The Exact strategy is not offered: the greedy with
its stop is already the answer to "the first plan that lets the gang start".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from sidecar.api.repackrun import TargetVerdict
from sidecar.errors import InputError
from sidecar.mirror.allocate import JobAllocation, JobCounters, allocate_job
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import S_OK
from sidecar.repack import candidates
from sidecar.repack.candidates import NOT_NEEDED, TARGET_CANNOT_USE, Outcome, Prepared
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.greedy import GreedyRun
from sidecar.repack.limits import count_pdbs, pin_pdb_protected
from sidecar.repack.result import PlanningContext, PlanResult, TargetOutcome
from sidecar.repack.spec import Target
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import PODS, less_equal

#: the API groups whose owner kinds a target may name
OWNER_GROUPS = {"Job": ("batch.volcano.sh/",), "ModelServing": ("workload.serving.volcano.sh/",)}


def resolve(mirror: Mirror, target: Target, scheduler_names: frozenset[str]) -> int:
    """The PodGroup ``target`` names; an InputError on ``target.path`` when there is none, when
    Volcano does not schedule its pods, or when a ModelServing has several waiting groups."""
    state = mirror.state
    ns, name = target.namespace, target.name
    if target.kind == "PodGroup":
        group = next((i for i, pg in enumerate(state.pod_groups) if pg.namespace == ns and pg.name == name), -1)
        if group < 0:
            raise InputError(target.path, f"PodGroup {target.key} not found (not in the scheduler's view)")
    else:
        prefixes = OWNER_GROUPS[target.kind]
        owned = [
            i
            for i, pg in enumerate(state.pod_groups)
            if pg.namespace == ns
            and any(
                r.kind == target.kind and r.name == name and r.api_version.startswith(prefixes)
                for r in pg.owner_references
            )
        ]
        if not owned:
            raise InputError(target.path, f"no PodGroup of {target.kind} {target.key} (not in the scheduler's view)")
        sim = Simulation(state)
        waiting = [i for i in owned if not JobCounters(mirror, sim, i, ()).ready()]
        if len(waiting) > 1:
            names = ", ".join(state.pod_group_key(i) for i in waiting)
            raise InputError(
                target.path,
                f"{target.kind} {target.key} has {len(waiting)} waiting PodGroups ({names}): "
                "name one with for.podGroup",
            )
        group = (waiting or owned)[0]
    members = np.flatnonzero(state.task_pod_group == group)
    schedulers = {state.profiles[p].scheduler_name or "default-scheduler" for p in state.task_profile[members]}
    if members.size and not schedulers & scheduler_names:
        raise InputError(
            target.path,
            f"PodGroup {state.pod_group_key(group)}'s pods are scheduled by {', '.join(sorted(schedulers))}, "
            f"not by Volcano (planner.schedulerNames: {', '.join(sorted(scheduler_names))})",
        )
    return group


def waiting_tasks(state: ClusterState, group: int) -> list[int]:
    """The gang's tasks allocate would try: Pending, or Pipelined onto a nominated node."""
    members = np.flatnonzero(state.task_pod_group == group)
    status = state.task_status[members]
    out: list[int] = members[(status == ts.PENDING) | (status == ts.PIPELINED)].tolist()
    return out


def usable_nodes(mirror: Mirror, tasks: list[int]) -> npt.NDArray[np.bool_]:
    """Nodes some waiting task could use once emptied: its node-only checks pass there (selector,
    affinity, taints, unschedulable) and its request fits the node's allocatable."""
    state, p = mirror.state, mirror.predicates
    usable = np.zeros(state.n_nodes, bool)
    pods = state.resources.index(PODS) if PODS in state.resources else -1
    seen: set[tuple[int, bytes]] = set()
    for t in tasks:
        prof = int(state.task_profile[t])
        req = state.task_req[t]
        key = (prof, req.tobytes())
        if key in seen:
            continue
        seen.add(key)
        fits = np.all(less_equal(np.delete(req, pods) if pods >= 0 else req, _without(state.node_alloc, pods)), axis=1)
        usable |= fits & (p.static(state.profiles[prof], profile_index=prof).code == S_OK)
    return usable


def _without(alloc: npt.NDArray[np.float64], column: int) -> npt.NDArray[np.float64]:
    return np.delete(alloc, column, axis=1) if column >= 0 else alloc


def plan(ctx: PlanningContext, pg_in_scope: npt.NDArray[np.bool_], node_in_scope: npt.NDArray[np.bool_],
         check: Callable[[str], None] | None = None) -> PlanResult:  # fmt: skip
    """The targeted plan for ``ctx.spec.target`` (see the module docstring)."""
    mirror, state, spec = ctx.mirror, ctx.state, ctx.spec
    assert spec.target is not None
    group = resolve(mirror, spec.target, spec.scheduler_names)
    waiting = waiting_tasks(state, group)
    goal = ctx.goal
    if waiting and not np.any(state.task_req[waiting, goal] > 0):
        raise InputError(
            spec.target.path,
            f"PodGroup {state.pod_group_key(group)} waits for no {spec.resource} (goals[0].resource): "
            "a targeted run frees the goal resource its gang waits for",
        )
    in_scope = pg_in_scope.copy()
    if in_scope.size:
        in_scope[group] = False
    prep = candidates.prepare(state, spec, goal, in_scope, node_in_scope, target_group=group)
    base = _base_result(ctx, prep)
    if check is not None:
        check("candidates")
    sim = Simulation(state)
    counters = JobCounters(mirror, sim, group, ())
    outcome = _Outcome(group, counters.min_available, counters.ready_num(), tuple(waiting))
    if counters.ready():
        return base(outcome.verdict(TargetVerdict.ALREADY_RUNNING))
    now = _fits(mirror, sim, group, waiting)
    if now.fits:
        return base(outcome.verdict(TargetVerdict.FITS_NOW, now))
    if not waiting or prep.candidates is None:
        return base(outcome.verdict(TargetVerdict.DOES_NOT_FIT, now))
    usable = usable_nodes(mirror, waiting)
    if not usable.any():
        return base(outcome.verdict(TargetVerdict.DOES_NOT_FIT, now))
    count_pdbs(state, prep.candidates, mirror.predicates.index.matching_profiles)
    pin_pdb_protected(state, prep)
    for c in prep.candidates:
        if not usable[c.node]:
            prep.outcomes[c.node] = Outcome(c.node, False, TARGET_CANNOT_USE, _cannot_use(state, group))
            prep.pinned[c.node] = True
    prep.candidates = [c for c in prep.candidates if usable[c.node]]
    first = _run(ctx, prep.fresh(), group, waiting, check)
    best = first
    if first.stopped and first.landing is not None:
        used = {n for _, n in first.landing.placed}
        needed = [c for c in prep.candidates if c.node in set(first.run.freed) & used]
        if len(needed) < len(first.run.freed):
            narrow = prep.fresh()
            for c in prep.candidates:
                if c not in needed:
                    narrow.outcomes[c.node] = Outcome(c.node, False, NOT_NEEDED, "the target fits without emptying it")
                    narrow.pinned[c.node] = True
            narrow.candidates = needed
            second = _run(ctx, narrow, group, waiting, check)
            if second.stopped:
                best = second
    run = best.run
    result = PlanResult(
        resource=spec.resource,
        before=prep.before,
        after=fragmentation(state, spec.resource, task_node=run.sim.node_of),
        moves=run.moves,
        freed=run.freed,
        outcomes=run.table.outcomes,
        gang=run.gang,
        pod_group_count=prep.pod_group_count,
        node_count=prep.node_count,
    )
    if best.stopped and best.landing is not None:
        for c in run.table.cands:
            result.outcomes.setdefault(
                c.node, Outcome(c.node, False, NOT_NEEDED, "the target fits without emptying it")
            )
        result.target = outcome.verdict(TargetVerdict.FITS, best.landing)
    else:
        result.target = outcome.verdict(TargetVerdict.DOES_NOT_FIT, _fits(mirror, run.sim, group, waiting))
    return result


class _Outcome:
    """The parts of the answer known before planning."""

    def __init__(self, group: int, min_available: int, ready: int, waiting: tuple[int, ...]) -> None:
        self.group, self.min_available, self.ready, self.waiting = group, min_available, ready, waiting

    def verdict(self, verdict: TargetVerdict, alloc: JobAllocation | None = None) -> TargetOutcome:
        placed = alloc.placed if alloc is not None and alloc.fits else ()
        return TargetOutcome(
            self.group,
            verdict,
            self.min_available,
            self.ready,
            self.waiting,
            placements=placed,
            pipelined=alloc.pipelined if alloc is not None and alloc.fits else frozenset(),
            stuck=alloc.stuck if alloc is not None and not alloc.fits else -1,
            why=alloc.why if alloc is not None and not alloc.fits else "",
        )


class _Tried:
    """One greedy run with its stop: the run, whether the gang fit, and where it landed."""

    def __init__(self, run: GreedyRun, landing: JobAllocation | None) -> None:
        self.run, self.landing = run, landing

    @property
    def stopped(self) -> bool:
        return self.run.stopped


def _run(
    ctx: PlanningContext, prep: Prepared, group: int, waiting: list[int], check: Callable[[str], None] | None
) -> _Tried:
    landing: list[JobAllocation] = []

    def enough(run: GreedyRun) -> bool:
        alloc = _fits(ctx.mirror, run.sim, group, waiting)
        if alloc.fits:
            landing.append(alloc)
        return alloc.fits

    run = GreedyRun(ctx, prep, check, budget_aware=False, stop=enough)
    run.loop()
    return _Tried(run, landing[-1] if landing else None)


def _fits(mirror: Mirror, sim: Simulation, group: int, waiting: list[int]) -> JobAllocation:
    """Would the gang start on ``sim``? Asked without keeping its placements there."""
    mark = sim.checkpoint()
    try:
        return allocate_job(mirror, sim, group, waiting)
    finally:
        sim.rollback(mark)


def _base_result(ctx: PlanningContext, prep: Prepared) -> Callable[[TargetOutcome], PlanResult]:
    """A result with no moves, for the verdicts reached before planning."""

    def result(target: TargetOutcome) -> PlanResult:
        return PlanResult(
            resource=ctx.spec.resource,
            before=prep.before,
            after=prep.before,
            moves=[],
            freed=[],
            outcomes=prep.outcomes,
            gang=prep.gang,
            pod_group_count=prep.pod_group_count,
            node_count=prep.node_count,
            target=target,
        )

    return result


def _cannot_use(state: ClusterState, group: int) -> str:
    return (
        f"no waiting pod of {state.pod_group_key(group)} could run here once it is empty "
        "(node selector, affinity, taints, or its allocatable is too small)"
    )
