"""Candidate nodes: which occupied nodes the planner may empty, why the others may not, and the
per-candidate state of a planning loop.

A node is a candidate when it provides the goal resource, some pod uses it there, the node is in
``scope.nodes`` and every such pod is movable: scheduled by Volcano (``planner.schedulerNames``),
in a PodGroup in ``scope.podGroups``, and not pipelined onto the node. Every other occupied node
gets an :class:`Outcome` saying why, and is pinned: it stays occupied whatever the plan does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.mirror.predicates import Predicates
from sidecar.mirror.types import S_OK
from sidecar.repack import ranking
from sidecar.repack.cost import (
    GangState,
    GroupMoves,
    Pairs,
    initial_deltas,
    marginal,
    marginal_many,
    trial_kernel,
    weighted,
)
from sidecar.repack.fragmentation import Fragmentation, fragmentation, holding_mask
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import PIPELINED
from sidecar.snapshot.units import TOLERANCE

#: scores this close rank as equal (the tie-break decides)
TIE = 1e-12

# candidate outcome reasons
EMPTIED = "Emptied"
OUT_OF_SCOPE = "OutOfScope"
UNMOVABLE = "UnmovablePod"
PIPELINED_POD = "PipelinedPod"
RECEIVER = "Receiver"
NO_RECEIVER = "NoReceiver"
BUDGET = "Budget"
PDB = "PodDisruptionBudget"


@dataclass
class Candidate:
    node: int
    pods: npt.NDArray[np.intp]  # goal-resource pods to move, placement order
    groups: list[GroupMoves]
    cards: float  # Volcano units of the goal resource on the node
    pdbs: dict[int, int] = field(default_factory=dict)  # PodDisruptionBudget -> pods it covers


@dataclass(frozen=True)
class Trial:
    """The neighbours a try re-costed, their marginal deltas with the tried candidate in the plan
    ([5, k]) and their costs before."""

    others: list[int]
    deltas: npt.NDArray[np.float64]
    old_cost: npt.NDArray[np.float64]


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
) -> Prepared:
    """Fragmentation before, candidate nodes with their pods and gang impact, pinned nodes and
    the explanation of every node that cannot be a candidate. ``candidates`` is None when there
    is nothing to plan (no fragmentation, or nothing provides the goal resource). PodDisruption
    budgets are left to :func:`sidecar.repack.limits.count_pdbs`."""
    before = fragmentation(state, spec.resource)
    outcomes: dict[int, Outcome] = {}
    holds = holding_mask(state)
    gang = GangState.build(state, max(goal, 0), holds) if goal >= 0 else GangState.build(state, 0, holds & False)
    pg_count = int(pg_in_scope.sum())
    node_count = int(node_in_scope.sum())
    if goal < 0 or before.occupied_nodes <= before.min_occupied_nodes:
        return Prepared(before, None, np.zeros(state.n_nodes, bool), gang, outcomes, pg_count, node_count)
    req_g = state.task_req[:, goal]
    goal_pods = holds & (req_g > TOLERANCE)
    providing = state.node_alloc[:, goal] > TOLERANCE
    names = spec.scheduler_names
    volcano = np.array([p.scheduler_name in names for p in state.profiles], bool)[state.task_profile]
    pg = state.task_pod_group
    movable = goal_pods & volcano & (pg >= 0)
    movable &= np.where(pg >= 0, pg_in_scope[np.maximum(pg, 0)] if pg_in_scope.size else False, False)
    pipelined_goal = (state.task_node >= 0) & (state.task_status == PIPELINED) & (req_g > TOLERANCE)

    pinned = np.zeros(state.n_nodes, bool)  # will stay occupied whatever the plan does
    load = np.bincount(state.task_node[goal_pods], weights=req_g[goal_pods], minlength=state.n_nodes)
    occupied = providing & (load > TOLERANCE)
    blocked_at = _first_per_node(state, goal_pods & ~movable)
    pipelined_at = _first_per_node(state, pipelined_goal)
    for n in map(int, np.flatnonzero(occupied)):
        if not node_in_scope[n]:
            outcomes[n] = Outcome(n, False, OUT_OF_SCOPE, "node is outside scope.nodes")
        elif n in blocked_at:
            outcomes[n] = Outcome(n, False, UNMOVABLE, _why_unmovable(state, blocked_at[n], volcano))
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


def _why_unmovable(state: ClusterState, t: int, volcano: npt.NDArray[np.bool_]) -> str:
    prof = state.profiles[state.task_profile[t]]
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


class CandidateTable:
    """Per-candidate state of one planning loop; every array is indexed 0..C-1 like ``cands``."""

    def __init__(
        self,
        state: ClusterState,
        spec: RunSpec,
        goal: int,
        cands: list[Candidate],
        gang: GangState,
        node_rank: npt.NDArray[np.int64],
        outcomes: dict[int, Outcome],
    ) -> None:
        self.state, self.resource, self.goal = state, spec.resource, goal
        self.cands = cands
        self.outcomes = outcomes
        self.node = np.array([c.node for c in cands], np.intp)
        self.index_of = {c.node: i for i, c in enumerate(cands)}
        self.alive = np.ones(len(cands), bool)  # still in play
        self.retry_at = np.zeros(len(cands), np.int64)  # tried again once this many nodes are freed
        # [5, C] marginal cost: dimension-major, so per-dimension min/max are contiguous reductions
        self.delta = initial_deltas(gang, cands)
        self.pairs = Pairs.build(gang, cands)  # for re-costing neighbours in one pass (trial)
        # PodGroup g -> the candidates moving its pods (ascending): group_cands[group_start[g]:group_start[g + 1]]
        pair_cand = np.repeat(np.arange(len(cands)), np.diff(self.pairs.start))
        by_group = np.argsort(self.pairs.group, kind="stable")
        self.group_cands = np.ascontiguousarray(pair_cand[by_group], np.intp)
        self.group_start = np.searchsorted(self.pairs.group[by_group], np.arange(len(gang.running) + 1)).astype(np.intp)
        # the trial kernel's scratch
        self._mark = np.zeros(len(cands), np.uint8)
        self._others = np.empty(len(cands), np.intp)
        self._deltas = np.empty((5, len(cands)))
        self._old = np.empty(len(cands))
        self._saved = np.empty(int(np.diff(self.pairs.start).max(initial=0)))
        self._bound: tuple[GangState, Any] | None = None  # the kernel with this table's and a gang's arrays
        self._on_delta: list[Callable[[list[int]], None]] = []  # see subscribe
        self.weights = np.asarray(spec.weights.as_tuple(), np.float64)
        #: [N] receiver rule 3: each candidate's weighted marginal cost of emptying it on top of the
        #: plan so far (during a try, on top of the tried candidate too); 0 for other nodes
        self.node_cost = np.zeros(state.n_nodes)
        self.node_cost[self.node] = weighted(self.weights, self.delta)
        # Static tie-break among equal costs: more capacity freed first, then node name.
        self.tie_rank = np.empty(len(cands), np.int64)
        self.tie_rank[np.lexsort((node_rank[self.node], -state.node_alloc[self.node, goal]))] = np.arange(len(cands))

    def subscribe(self, listener: Callable[[list[int]], None]) -> None:
        """``listener`` is told which candidates' ``delta`` columns a settled try rewrote (the
        round's scores follow them)."""
        self._on_delta.append(listener)

    def in_play(self, n_freed: int) -> npt.NDArray[np.intp]:
        return np.flatnonzero(self.alive & (self.retry_at <= n_freed))

    def best(self, scores: npt.NDArray[np.float64]) -> int:
        """The candidate with the lowest score ([C], infinity: out of the round); ties: more
        capacity freed, then node name; -1 when none is left."""
        return ranking.pick(scores, self.tie_rank, TIE)

    def neighbours(self, i: int) -> list[int]:
        """The live candidates other than ``i`` sharing a PodGroup with it: the ones whose cost
        changes when ``i`` joins the plan."""
        groups, start, members = self.cands[i].groups, self.group_start, self.group_cands
        if len(groups) == 1:
            g = groups[0].group
            return [j for j in members[start[g] : start[g + 1]].tolist() if j != i and self.alive[j]]
        seen = {j for m in groups for j in members[start[m.group] : start[m.group + 1]].tolist()}
        seen.discard(i)
        return sorted(j for j in seen if self.alive[j])

    def trial(self, i: int, gang: GangState) -> Trial:
        """Re-cost ``i``'s neighbours as if ``i`` had joined the plan, in ``node_cost`` (what the
        receivers of ``i``'s pods read, rule 3); :meth:`settle` keeps or undoes it. One pass of
        ``ext/cost.pyx`` when built; :meth:`trial_twin` is its specification."""
        kernel = trial_kernel()
        if kernel is None:
            return self.trial_twin(i, gang)
        if self._bound is None or self._bound[0] is not gang:
            pairs = self.pairs
            bound = kernel.TrialCosts(
                pairs.start,
                pairs.group,
                pairs.pods,
                pairs.cards,
                self.group_start,
                self.group_cands,
                self.alive.view(np.uint8),
                gang._moves_a,
                gang._cards_a,
                gang._safe_a,
                gang.usage,
                self.weights,
                self.node,
                self.node_cost,
                self._mark,
                self._others,
                self._deltas,
                self._old,
                self._saved,
            )
            self._bound = (gang, bound)
        pairs = self.pairs
        n = self._bound[1].run(i)
        if n == 0:
            return Trial([], np.zeros((5, 0)), np.zeros(0))
        idx = self._others[:n]
        others, deltas = idx.tolist(), self._deltas[:, :n].copy()
        roles = np.flatnonzero(pairs.roles[idx])
        if roles.size:  # per-role minimums: the general rule, as in the twin
            with gang.trial(self.cands[i].groups):
                for k in roles.tolist():
                    deltas[:, k] = marginal(gang, self.cands[others[k]].groups)
            self.node_cost[self.node[idx[roles]]] = weighted(self.weights, deltas[:, roles])
        return Trial(others, deltas, self._old[:n].copy())

    def trial_twin(self, i: int, gang: GangState) -> Trial:
        """:meth:`trial` in Python: neighbours, the gang with ``i``'s moves, marginal_many."""
        others = self.neighbours(i)
        if not others:
            return Trial(others, np.zeros((5, 0)), np.zeros(0))
        idx = np.array(others, np.intp)
        with gang.trial(self.cands[i].groups):
            deltas = marginal_many(gang, self.pairs, idx)
            for k in np.flatnonzero(self.pairs.roles[idx]).tolist():  # per-role minimums: the general rule
                deltas[:, k] = marginal(gang, self.cands[others[k]].groups)
        nodes = self.node[others]
        old = self.node_cost[nodes]
        self.node_cost[nodes] = weighted(self.weights, deltas)
        return Trial(others, deltas, old)

    def settle(self, trial: Trial, joined: bool) -> None:
        """The tried candidate joined the plan (its neighbours' trial costs are now their
        marginal costs) or did not (back to what they were)."""
        if not trial.others:
            return
        if joined:
            self.delta[:, trial.others] = trial.deltas
            for listener in self._on_delta:
                listener(trial.others)
        else:
            self.node_cost[self.node[trial.others]] = trial.old_cost

    def emptied(self, i: int, targets: list[int]) -> None:
        c = self.cands[i]
        names = ", ".join(sorted({self.state.node_names[x] for x in targets}))
        self.outcomes[c.node] = emptied_outcome(c, names)
        self.alive[i] = False
        for target in set(targets):  # a node that received pods stays occupied: no longer a candidate
            j = self.index_of.get(target)
            if j is not None and self.alive[j]:
                self.drop(j, RECEIVER, "receives pods in this plan, so it stays occupied")

    def drop(self, i: int, reason: str, message: str) -> None:
        self.alive[i] = False
        node = self.cands[i].node
        self.outcomes[node] = Outcome(node, False, reason, message)

    def drop_no_receiver(self, i: int) -> None:
        c, state = self.cands[i], self.state
        t = int(c.pods[0])
        cards = state.task_req[t, self.goal] / 1000.0
        self.drop(
            i,
            NO_RECEIVER,
            f"no receiver takes all {len(c.pods)} pods (largest: {pod_name(state, t)}, {cards:g} "
            f"{self.resource}): receivers lack capacity or fail its node constraints",
        )

    def explain_rest(self) -> None:
        """Candidates still alive when the loop ends found no feasible placement."""
        for i in np.flatnonzero(self.alive):
            node = self.cands[int(i)].node
            if node not in self.outcomes:
                self.outcomes[node] = Outcome(node, False, NO_RECEIVER, "no feasible placement for its pods")
