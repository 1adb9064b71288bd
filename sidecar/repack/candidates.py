"""Candidate nodes: which occupied nodes the planner may empty and why the others may not (the
per-candidate state of a planning loop is table.py's).

A node is a candidate when it provides the goal resource, some pod uses it there, the node is in
``scope.nodes`` and every such pod is movable: scheduled by Volcano (``planner.schedulerNames``),
in a PodGroup in ``scope.podGroups``, and not pipelined onto the node. Every other occupied node
gets an :class:`Outcome` saying why, and is pinned: it stays occupied whatever the plan does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from sidecar.mirror.predicates import Predicates
from sidecar.mirror.types import S_OK
from sidecar.repack.cost import GangState, GroupMoves
from sidecar.repack.fragmentation import Fragmentation, fragmentation
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.holding import goal_tasks, holding_nodes, holding_tasks
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import PIPELINED
from sidecar.snapshot.units import TOLERANCE

# candidate outcome reasons
EMPTIED = "Emptied"
OUT_OF_SCOPE = "OutOfScope"
UNMOVABLE = "UnmovablePod"
PIPELINED_POD = "PipelinedPod"
RECEIVER = "Receiver"
NO_RECEIVER = "NoReceiver"
#: a targeted run: the waiting gang cannot use the node, or fits without emptying it
TARGET_CANNOT_USE = "TargetCannotUse"
NOT_NEEDED = "NotNeeded"
BUDGET = "Budget"
PDB = "PodDisruptionBudget"


@dataclass
class Candidate:
    node: int
    pods: npt.NDArray[np.intp]  # goal-resource pods to move, placement order
    groups: list[GroupMoves]
    cards: float  # Volcano units of the goal resource on the node
    pdbs: dict[int, int] = field(default_factory=dict)  # PodDisruptionBudget -> pods it covers


@dataclass
class Outcome:
    node: int
    selected: bool
    reason: str
    message: str


def emptied_outcome(c: Candidate, receivers: str) -> Outcome:
    """The explanation of a node the plan empties (greedy and exact planners alike)."""
    moves = "pod moves" if len(c.pods) == 1 else "pods move"
    return Outcome(c.node, True, EMPTIED, f"{len(c.pods)} {moves} to {receivers}")


@dataclass
class Prepared:
    """What every strategy starts from. A planning run consumes the gang state, the outcomes and
    the pinned mask it is given: each run takes :meth:`fresh`, and one preparation serves them all."""

    before: Fragmentation
    candidates: list[Candidate] | None
    pinned: npt.NDArray[np.bool_]
    gang: GangState
    outcomes: dict[int, Outcome]
    pod_group_count: int
    node_count: int

    def fresh(self) -> Prepared:
        """A copy a run may consume; the candidates, read-only once prepared, are shared."""
        return replace(self, pinned=self.pinned.copy(), gang=self.gang.fresh(), outcomes=dict(self.outcomes))


@dataclass(frozen=True)
class CandidatePods:
    """Every candidate's pods in one flat array (candidates in table order, each in placement
    order), with the row of node-only check results each pod reads: profiles share few distinct
    results (NodeChecks caches one per constraint set), so ``static_ok`` has one row per result."""

    pods: npt.NDArray[np.intp]  # [T]
    cand: npt.NDArray[np.intp]  # [T] candidate of each pod
    bounds: npt.NDArray[np.intp]  # [C + 1] candidate i's pods are pods[bounds[i]:bounds[i + 1]]
    static_row: npt.NDArray[np.intp]  # [T] row of static_ok
    static_ok: npt.NDArray[np.uint8]  # [S, N] 1 where the node-only checks pass

    @classmethod
    def build(cls, state: ClusterState, predicates: Predicates, cands: list[Candidate]) -> CandidatePods:
        sizes = [c.pods.size for c in cands]
        pods = np.concatenate([c.pods for c in cands]).astype(np.intp) if cands else np.zeros(0, np.intp)
        bounds = np.zeros(len(cands) + 1, np.intp)
        np.cumsum(sizes, out=bounds[1:])
        profiles, inverse = np.unique(state.task_profile[pods], return_inverse=True)
        rows: dict[int, int] = {}  # id of a StaticResult -> its row
        masks: list[npt.NDArray[np.bool_]] = []
        row_of_profile = np.empty(profiles.size, np.intp)
        for k, prof in enumerate(profiles.tolist()):
            static = predicates.static(state.profiles[prof], profile_index=prof)
            r = rows.get(id(static), -1)
            if r < 0:
                r = rows[id(static)] = len(masks)
                masks.append(static.code == S_OK)
            row_of_profile[k] = r
        return cls(
            pods,
            np.repeat(np.arange(len(cands)), sizes).astype(np.intp),
            bounds,
            np.ascontiguousarray(row_of_profile[inverse.ravel()], np.intp),
            np.array(masks, np.uint8).reshape(len(masks), state.n_nodes),
        )


def pod_name(state: ClusterState, t: int) -> str:
    return f"{state.namespaces[state.task_namespace[t]]}/{state.task_name[t]}"


def prepare(
    state: ClusterState,
    spec: RunSpec,
    goal: int,
    pg_in_scope: npt.NDArray[np.bool_],
    node_in_scope: npt.NDArray[np.bool_],
    *,
    target_group: int = -1,
) -> Prepared:
    """Fragmentation before, candidate nodes with their pods and gang impact, pinned nodes and
    the explanation of every node that cannot be a candidate. ``candidates`` is None when there
    is nothing to plan (no fragmentation, or nothing provides the goal resource). PodDisruption
    budgets are left to :func:`sidecar.repack.limits.count_pdbs`. A targeted run names its
    ``target_group``: its pods never move, and a gang may wait although the statistic says no
    node could be freed (the minimum is a bound, not a plan), so candidates are always built."""
    before = fragmentation(state, spec.resource)
    outcomes: dict[int, Outcome] = {}
    holds = holding_tasks(state)
    gang = GangState.build(state, max(goal, 0), holds) if goal >= 0 else GangState.build(state, 0, holds & False)
    pg_count = int(pg_in_scope.sum())
    node_count = int(node_in_scope.sum())
    if goal < 0 or (target_group < 0 and before.occupied_nodes <= before.min_occupied_nodes):
        return Prepared(before, None, np.zeros(state.n_nodes, bool), gang, outcomes, pg_count, node_count)
    req_g = state.task_req[:, goal]
    goal_pods = goal_tasks(state, goal)
    providing = state.node_alloc[:, goal] > TOLERANCE
    names = spec.scheduler_names
    volcano = np.array([p.scheduler_name in names for p in state.profiles], bool)[state.task_profile]
    pg = state.task_pod_group
    movable = goal_pods & volcano & (pg >= 0)
    movable &= np.where(pg >= 0, pg_in_scope[np.maximum(pg, 0)] if pg_in_scope.size else False, False)
    if target_group >= 0:
        movable &= pg != target_group
    pipelined_goal = (state.task_node >= 0) & (state.task_status == PIPELINED) & (req_g > TOLERANCE)

    pinned = np.zeros(state.n_nodes, bool)  # will stay occupied whatever the plan does
    load = np.bincount(state.task_node[goal_pods], weights=req_g[goal_pods], minlength=state.n_nodes)
    occupied = providing & holding_nodes(state, goal)
    blocked_at = _first_per_node(state, goal_pods & ~movable)
    pipelined_at = _first_per_node(state, pipelined_goal)
    for n in map(int, np.flatnonzero(occupied)):
        if not node_in_scope[n]:
            outcomes[n] = Outcome(n, False, OUT_OF_SCOPE, "node is outside scope.nodes")
        elif n in blocked_at:
            outcomes[n] = Outcome(n, False, UNMOVABLE, _why_unmovable(state, blocked_at[n], volcano, target_group))
        elif n in pipelined_at:
            why = f"pod {pod_name(state, pipelined_at[n])} is pipelined onto this node"
            outcomes[n] = Outcome(n, False, PIPELINED_POD, why)
        else:
            continue
        pinned[n] = True
    is_candidate = occupied & ~pinned
    # Every candidate's goal-resource pods, grouped by node; within a node largest first, then
    # snapshot order (the placement order).
    tasks = np.flatnonzero(goal_pods & is_candidate[np.maximum(state.task_node, 0)] & (state.task_node >= 0))
    tasks = tasks[np.lexsort((tasks, -req_g[tasks], state.task_node[tasks]))]
    t_node = state.task_node[tasks]
    cand_nodes, starts = np.unique(t_node, return_index=True)
    bounds = np.append(starts, tasks.size)
    # (candidate, PodGroup) pairs: how many pods and cards each node takes from each group.
    n_groups = max(len(state.pod_groups), 1)
    cand_of_task = np.repeat(np.arange(cand_nodes.size), np.diff(bounds))
    pair_key = cand_of_task.astype(np.int64) * n_groups + pg[tasks]
    pair_keys, pair_inverse, pair_pods = np.unique(pair_key, return_inverse=True, return_counts=True)
    pair_cards = np.bincount(pair_inverse.ravel(), weights=req_g[tasks], minlength=pair_keys.size)
    pair_cand, pair_group = np.divmod(pair_keys, n_groups)
    pair_bounds = np.searchsorted(pair_cand, np.arange(cand_nodes.size + 1))
    no_roles: Counter[str] = Counter()
    candidates: list[Candidate] = []
    # plain lists: this loop runs once per candidate and group, numpy scalars would dominate it
    group_l, pods_l, cards_l = pair_group.tolist(), pair_pods.tolist(), pair_cards.tolist()
    bounds_l, pair_bounds_l, role_min = bounds.tolist(), pair_bounds.tolist(), gang.role_min
    for i, n in enumerate(cand_nodes.tolist()):
        pods = tasks[bounds_l[i] : bounds_l[i + 1]]
        groups = []
        for k in range(pair_bounds_l[i], pair_bounds_l[i + 1]):
            grp = group_l[k]
            roles = no_roles
            if role_min[grp]:
                roles = Counter(state.task_role[t] for t in pods if pg[t] == grp)
            groups.append(GroupMoves(grp, pods_l[k], cards_l[k], roles))
        candidates.append(Candidate(n, pods, groups, float(load[n])))
    return Prepared(before, candidates, pinned, gang, outcomes, pg_count, node_count)


def _first_per_node(state: ClusterState, mask: npt.NDArray[np.bool_]) -> dict[int, int]:
    """node -> first task (in snapshot order) on it that ``mask`` selects."""
    tasks = np.flatnonzero(mask & (state.task_node >= 0))
    nodes, first = np.unique(state.task_node[tasks], return_index=True)
    return dict(zip(nodes.tolist(), tasks[first].tolist(), strict=True))


def _why_unmovable(state: ClusterState, t: int, volcano: npt.NDArray[np.bool_], target_group: int = -1) -> str:
    prof = state.profiles[state.task_profile[t]]
    if target_group >= 0 and state.task_pod_group[t] == target_group:
        group = state.pod_group_key(target_group)
        return f"pod {pod_name(state, t)} belongs to the run's target {group}, which never moves"
    if not volcano[t]:
        scheduler = prof.scheduler_name or "default-scheduler"
        return f"pod {pod_name(state, t)} is not scheduled by Volcano (schedulerName {scheduler!r})"
    if state.task_pod_group[t] < 0:
        missing = state.missing_groups.get(t)
        if missing is not None:
            return f"pod {pod_name(state, t)}: its PodGroup {missing} is not in the snapshot (deleted, or not yet seen)"
        return f"pod {pod_name(state, t)} belongs to no PodGroup"
    group = state.pod_group_key(int(state.task_pod_group[t]))
    return f"pod {pod_name(state, t)}: PodGroup {group} is outside scope.podGroups"
