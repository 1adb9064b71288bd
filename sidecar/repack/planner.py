"""The repack planner: incremental, gang-aware greedy emptying of whole nodes.

Each round (the guide's "Dynamically Selecting Targets to Empty"):

1. every candidate node still in play (candidates.py) gets the marginal interruption cost of
   emptying it on top of the plan so far (cost.py), min-max normalised over the round's
   candidates and weighted (ranking.py keeps the scores from round to round); candidates over a
   budget or a PodDisruptionBudget drop out (limits.py);
2. candidates are tried in ascending cost (ties: more capacity freed, then name); a try removes
   the node's goal-resource pods and places them one by one (largest first) on receivers in the
   guide's order (receivers.py), on the state that already holds every earlier move, backtracking
   over receiver choices within a budget (search.py: in one kernel pass when the pods' pod-level
   checks are domain rules, else with the mirror core's Filter on the Simulation);
3. the first candidate that fits joins the plan; the next round re-evaluates what changed.

A candidate that fails on capacity, budget or a PodDisruptionBudget can never succeed later
(receivers only fill up, the plan only grows) and is dropped; one that failed on pod-level
constraints (affinity, spread, ports), which moves can loosen, is retried after the plan changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from sidecar import heap
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Subject
from sidecar.repack import candidates, exact, receivers
from sidecar.repack.candidates import CandidatePods, Prepared
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.limits import Budgets, Preflight, count_pdbs, pin_pdb_protected
from sidecar.repack.nodelevel import NodeLevelPods
from sidecar.repack.ranking import RoundScores
from sidecar.repack.receivers import Receivers
from sidecar.repack.result import Move, PlanResult
from sidecar.repack.search import Search
from sidecar.repack.spec import RunSpec, require_provided_goal
from sidecar.repack.table import TIE, CandidateTable
from sidecar.snapshot.state import ClusterState

#: failed tries (since the last one) that trigger the bulk capacity check
PREFLIGHT_AFTER_FAILURES = 8


class Planner:
    def __init__(self, mirror: Mirror, spec: RunSpec) -> None:
        """Raises InputError (``spec.goals[0].resource``) when no node provides the goal resource."""
        self.mirror = mirror
        self.state: ClusterState = mirror.state
        self.spec = spec
        state = self.state
        require_provided_goal(spec, state)
        self.goal = state.resource(spec.resource)
        self.pg_in_scope = spec.scope.pod_group_mask(state) if state.pod_groups else np.zeros(0, bool)
        self.node_in_scope = spec.scope.node_mask(state)

    def plan(
        self, check: Callable[[str], None] | None = None, time_left: Callable[[], float | None] | None = None
    ) -> PlanResult:
        """The plan; ``check(step)`` is called once per round and raises to abort; ``time_left()``
        (seconds, None: no limit) bounds the exact strategy's solver. The cyclic collector is held
        off throughout (sidecar/heap.py): a plan builds many objects and no cycles."""
        with heap.collection_paused():
            return self._plan(check, time_left)

    def _plan(self, check: Callable[[str], None] | None, time_left: Callable[[], float | None] | None) -> PlanResult:
        prep = self.prepare(check)
        greedy = self._greedy(prep.fresh(), check, budget_aware=False)
        if self.spec.max_pod_groups is not None and prep.candidates:
            # Under a PodGroup budget the cost order can spend the budget on groups that unlock few
            # nodes: plan again choosing by nodes unlocked per PodGroup, keep the better plan.
            other = self._greedy(prep.fresh(), check, budget_aware=True)
            if _better(other, greedy):
                greedy = other
        if self.spec.strategy == "Exact" and prep.candidates and len(prep.candidates) <= exact.MAX_CANDIDATES:
            left = time_left() if time_left is not None else None
            limit = exact.TIME_LIMIT if left is None else min(exact.TIME_LIMIT, 0.8 * left)
            if limit >= exact.MIN_TIME_LIMIT:
                return exact.improve(self, prep.fresh(), greedy, limit) or greedy
        return greedy

    def _greedy(self, prep: Prepared, check: Callable[[str], None] | None, *, budget_aware: bool) -> PlanResult:
        """One greedy run; it consumes ``prep`` (give it a :meth:`Prepared.fresh` copy)."""
        after, moves, freed = prep.before, [], []
        if prep.candidates is not None:
            run = _Run(self, prep, check, budget_aware)
            run.loop()
            after = fragmentation(self.state, self.spec.resource, task_node=run.sim.node_of)
            moves, freed = run.moves, run.freed
        return PlanResult(
            resource=self.spec.resource,
            before=prep.before,
            after=after,
            moves=moves,
            freed=freed,
            outcomes=prep.outcomes,
            gang=prep.gang,
            pod_group_count=prep.pod_group_count,
            node_count=prep.node_count,
        )

    def prepare(self, check: Callable[[str], None] | None = None) -> Prepared:
        """Candidates and the explanation of every other occupied node (candidates.prepare), with
        the PodDisruptionBudgets covering each candidate's pods; a node a PDB forbids emptying is
        pinned instead (it stays occupied: receiver rule 2)."""
        prep = candidates.prepare(self.state, self.spec, self.goal, self.pg_in_scope, self.node_in_scope)
        if check is not None:
            check("candidates")
        if prep.candidates:
            count_pdbs(self.state, prep.candidates, self.mirror.predicates.index.matching_profiles)
            if check is not None:
                check("PodDisruptionBudgets")
            pin_pdb_protected(self.state, prep)
        return prep


def _blank(scores: npt.NDArray[np.float64], i: int) -> None:
    scores[i] = np.inf


def _better(a: PlanResult, b: PlanResult) -> bool:
    """More nodes freed; among equals fewer PodGroups below MinAvailable, then fewer cards moved."""
    a_cost, b_cost = a.gang.totals(), b.gang.totals()
    return (-len(a.freed), a_cost.below_min_available, a_cost.moved_resources) < (
        -len(b.freed),
        b_cost.below_min_available,
        b_cost.moved_resources,
    )


class _Run:
    """One planning loop: the simulation holding every move so far, the candidates (per-candidate
    table), the receivers (per-node state) and the limits."""

    def __init__(
        self, planner: Planner, prep: Prepared, check: Callable[[str], None] | None, budget_aware: bool
    ) -> None:
        state, spec, goal = planner.state, planner.spec, planner.goal
        assert prep.candidates is not None
        self.mirror, self.goal, self.check = planner.mirror, goal, check
        self.sim = Simulation(state)
        self.gang = prep.gang
        self.weights = np.asarray(spec.weights.as_tuple(), np.float64)
        self.moves: list[Move] = []
        self.freed: list[int] = []
        rank = np.empty(state.n_nodes, np.int64)  # node-name rank
        rank[np.argsort(np.array(state.node_names, dtype=object), kind="stable")] = np.arange(state.n_nodes)
        self.table = CandidateTable(state, spec, goal, prep.candidates, prep.gang, rank, prep.outcomes)
        # rule 3's costs are the table's, kept current by its trial/settle
        self.receivers = Receivers(planner.mirror, self.sim, goal, prep.pinned, self.table.node_cost, rank)
        self.budgets = Budgets(state, spec, prep.gang, self.table)
        self.scores = RoundScores(
            self.table.delta, self.weights, self.table.alive, self.table.retry_at, self.table.tie_rank, TIE
        )
        self.table.subscribe(self.scores.changed)
        self.table.watch_live(self.scores.touch)
        self.budget_aware = budget_aware
        pods = CandidatePods.build(state, planner.mirror.predicates, prep.candidates)
        self.preflight = Preflight(state, goal, self.table, pods)
        #: candidates whose whole search runs in the kernel (None: the Python search for all)
        self.node_level = (
            NodeLevelPods(planner.mirror, pods, self.sim, self.receivers) if receivers.kernel_in_use() else None
        )

    def loop(self) -> None:
        table = self.table
        preflight_at = -1
        failures = 0
        while True:
            if self.check is not None:
                self.check("planning")
            if self.budgets.limited:  # drops the candidates over a budget
                self.budgets.within(table.in_play(len(self.freed)))
            scores = self.scores.round(len(self.freed))  # [C], infinity outside the round
            if self.scores.n_live == 0:
                break
            skip, best_of = self.scores.skip, self.scores.best  # skipped: out for the rest of the round
            if self.budget_aware:  # ranks by value: a copy of this round's own
                scores = scores.copy()
                live = np.flatnonzero(self.scores.live)
                scores[live] = self.budgets.value_order(live, scores[live])
                skip = functools.partial(_blank, scores)
                best_of = functools.partial(table.best, scores)
            chosen = -1
            while True:
                best = best_of()
                if best < 0:
                    break
                if self._try(best):
                    chosen = best
                    break
                skip(best)
                failures += 1
                # Failures pile up as receivers fill: then prune, in bulk, what can no longer fit.
                if failures >= PREFLIGHT_AFTER_FAILURES and preflight_at != len(self.freed):
                    preflight_at = len(self.freed)
                    failures = 0
                    self.preflight.prune(self.receivers.allowed, self.sim.future_idle()[:, self.goal])
                    for i in np.flatnonzero(~table.alive & np.isfinite(scores)).tolist():
                        skip(i)
            if chosen < 0:
                break
        table.explain_rest()

    def _try(self, i: int) -> bool:
        """Empty candidate ``i`` in the simulation if every one of its pods finds a receiver."""
        if not self.budgets.pdb_ok(i):
            return False
        if self.node_level is not None and self.node_level.simple[i]:
            return self._try_node_level(i)
        c, sim, receivers = self.table.cands[i], self.sim, self.receivers
        mark = sim.checkpoint()
        was_allowed = receivers.exclude(c.node)
        for t in c.pods:
            sim.remove(int(t))
        # Rule 3 on top of this candidate: nodes of the PodGroups it breaks become cheap to empty.
        trial = self.table.trial(i, self.gang)
        search = Search(self.mirror, sim, receivers, c.pods)
        placed = search.place(0)
        self.table.settle(trial, placed)
        if not placed:
            self._give_up(i, was_allowed, search.stuck)
            sim.rollback(mark)
            return False
        sim.commit()
        self._emptied(i, search.targets)
        return True

    def _try_node_level(self, i: int) -> bool:
        """The same try for a candidate whose pods face no pod-level check but topology spread:
        the search runs in the kernel without touching the simulation, which takes the moves only
        if it succeeds."""
        assert self.node_level is not None
        c, receivers = self.table.cands[i], self.receivers
        was_allowed = receivers.exclude(c.node)
        trial = self.table.trial(i, self.gang)
        stuck: set[int] = set()
        targets = self.node_level.place(i, stuck)
        self.table.settle(trial, targets is not None)
        if targets is None:
            self._give_up(i, was_allowed, [self.mirror.subject_for_task(int(c.pods[k])) for k in sorted(stuck)])
            return False
        self.sim.relocate(c.pods, targets)
        self._emptied(i, targets)
        return True

    def _give_up(self, i: int, was_allowed: bool, stuck: Sequence[Subject]) -> None:
        """A failed try of candidate ``i``. It is final unless a pod that found no receiver at all
        (``stuck``) passes its node checks somewhere: then only its pod-level constraints
        (affinity, spread, ports), which moves elsewhere may loosen, stood in the way, and the
        candidate is retried once the plan has grown. Decided while the node is still no receiver
        (rule 1), so that it does not count as its own."""
        receivers = self.receivers
        retry = any(receivers.node_checks_pass(subj) for subj in stuck)
        receivers.restore(self.table.cands[i].node, was_allowed)
        if retry:
            self.table.retry(i, len(self.freed) + 1)
        else:
            self.table.drop_no_receiver(i)

    def _emptied(self, i: int, targets: list[int]) -> None:
        c = self.table.cands[i]
        for target, t in zip(targets, c.pods, strict=True):
            self.moves.append(Move(int(t), c.node, target))
        for m in c.groups:
            self.gang.apply(m.group, m.pods, m.cards, m.roles)
        self.budgets.spend(c)
        self.freed.append(c.node)
        self.receivers.mark_stays(targets)
        self.table.emptied(i, targets)
        if self.node_level is not None:
            self.node_level.retire([c.node, *targets])
