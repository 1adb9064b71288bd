"""The per-candidate state of one planning loop: marginal costs (``delta``), who is still in play,
retries, rule 3's node costs, and a try's re-costing of its neighbours (:meth:`CandidateTable.trial`,
one pass of ``ext/cost.pyx`` when built)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.repack import ranking
from sidecar.repack.candidates import NO_RECEIVER, RECEIVER, Candidate, Outcome, emptied_outcome, pod_name
from sidecar.repack.cost import GangState, Pairs, initial_deltas, marginal, marginal_many, trial_kernel, weighted
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState

#: scores this close rank as equal (the tie-break decides)
TIE = 1e-12


@dataclass(frozen=True)
class Trial:
    """The neighbours a try re-costed, their marginal deltas with the tried candidate in the plan
    ([5, k]) and their costs before."""

    others: list[int]
    deltas: npt.NDArray[np.float64]
    old_cost: npt.NDArray[np.float64]


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
        self._on_live: list[Callable[[int], None]] = []  # see watch_live
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

    def watch_live(self, listener: Callable[[int], None]) -> None:
        """``listener`` is told each candidate whose ``alive`` or ``retry_at`` is written (the
        round's set in play follows them); both are written here only."""
        self._on_live.append(listener)

    def retry(self, i: int, at: int) -> None:
        """Candidate ``i`` is out of play until ``at`` nodes are freed."""
        self.retry_at[i] = at
        for listener in self._on_live:
            listener(i)

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
        n = self._bound[1].run(i)
        if n == 0:
            return Trial([], np.zeros((5, 0)), np.zeros(0))
        idx = self._others[:n]
        others, deltas = idx.tolist(), self._deltas[:, :n].copy()
        roles = self._general_rule(i, gang, others, deltas)
        if roles.size:
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
        self._general_rule(i, gang, others, deltas)
        nodes = self.node[others]
        old = self.node_cost[nodes]
        self.node_cost[nodes] = weighted(self.weights, deltas)
        return Trial(others, deltas, old)

    def _general_rule(
        self, i: int, gang: GangState, others: list[int], deltas: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.intp]:
        """Rewrite the columns of ``deltas`` whose neighbour has per-role minimums with
        :func:`marginal`'s general rule (``i``'s moves in the plan); returns their positions."""
        roles = np.flatnonzero(self.pairs.roles[others])
        if roles.size:
            with gang.trial(self.cands[i].groups):
                for k in roles.tolist():
                    deltas[:, k] = marginal(gang, self.cands[others[k]].groups)
        return roles

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
        self._dead(i)
        for target in set(targets):  # a node that received pods stays occupied: no longer a candidate
            j = self.index_of.get(target)
            if j is not None and self.alive[j]:
                self.drop(j, RECEIVER, "receives pods in this plan, so it stays occupied")

    def _dead(self, i: int) -> None:
        self.alive[i] = False
        for listener in self._on_live:
            listener(i)

    def drop(self, i: int, reason: str, message: str) -> None:
        self._dead(i)
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
