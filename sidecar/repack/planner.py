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

from collections.abc import Callable

import numpy as np

from sidecar import heap
from sidecar.mirror.core import Mirror
from sidecar.repack import candidates, exact, targeted
from sidecar.repack.candidates import Prepared
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.greedy import GreedyRun
from sidecar.repack.limits import count_pdbs, pin_pdb_protected
from sidecar.repack.result import PlanResult
from sidecar.repack.spec import RunSpec, require_provided_goal
from sidecar.snapshot.state import ClusterState


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
        if self.spec.target is not None:
            return targeted.plan(self, self.pg_in_scope, self.node_in_scope, check)
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
            run = GreedyRun(self, prep, check, budget_aware)
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


def _better(a: PlanResult, b: PlanResult) -> bool:
    """More nodes freed; among equals fewer PodGroups below MinAvailable, then fewer cards moved."""
    a_cost, b_cost = a.gang.totals(), b.gang.totals()
    return (-len(a.freed), a_cost.below_min_available, a_cost.moved_resources) < (
        -len(b.freed),
        b_cost.below_min_available,
        b_cost.moved_resources,
    )
