"""One greedy planning run (the guide's "Dynamically Selecting Targets to Empty"), round by round.

Each round every candidate still in play gets the marginal interruption cost of emptying it on
top of the plan so far; candidates are tried in ascending cost; the first whose pods all find
receivers joins the plan (see planner.py for the whole story). A run ends when no candidate
is left, or when its caller's ``stop`` says the plan is enough (a targeted run: the waiting gang
fits).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Subject
from sidecar.repack import receivers
from sidecar.repack.candidates import CandidatePods, Prepared
from sidecar.repack.limits import Budgets, Preflight
from sidecar.repack.nodelevel import NodeLevelPods
from sidecar.repack.ranking import RoundScores
from sidecar.repack.receivers import Receivers
from sidecar.repack.result import Move, PlanningContext
from sidecar.repack.search import Search
from sidecar.repack.table import TIE, CandidateTable

#: failed tries (since the last one) that trigger the bulk capacity check
PREFLIGHT_AFTER_FAILURES = 8


def _blank(scores: npt.NDArray[np.float64], i: int) -> None:
    scores[i] = np.inf


class GreedyRun:
    """One planning loop: the simulation holding every move so far, the candidates (per-candidate
    table), the receivers (per-node state) and the limits."""

    def __init__(
        self,
        planner: PlanningContext,
        prep: Prepared,
        check: Callable[[str], None] | None,
        budget_aware: bool,
        stop: Callable[[GreedyRun], bool] | None = None,
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
        #: asked after each emptied node: True ends the run there (the plan is enough)
        self.stop = stop
        self.stopped = False
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
            if self.stop is not None and self.stop(self):
                self.stopped = True
                return  # the candidates left are explained by the caller
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
