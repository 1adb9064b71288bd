"""Gang-aware interruption cost (the guide's "Evaluating the Impact of Workload Interruption").

Per PodGroup, ``safe = max(Running - MinAvailable, 0)`` pods may move without the gang dropping
below MinAvailable (per role too, when ``minTaskMember`` is set). Past that, the PodGroup counts
as below MinAvailable and *all* its goal-resource usage counts as affected. Five dimensions are
measured on the whole plan: affected workloads, PodGroups below MinAvailable, affected target
resources, target resources moved, pods moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import RUNNING

#: a PodGroup without per-role minimums (most): one shared, read-only mapping, not a dict each
_NO_ROLES: Mapping[str, int] = MappingProxyType({})

#: the one place ``ext/cost.pyx`` is loaded: a try's re-costing of its neighbours
_K = dispatch.load("sidecar.repack._cost")


def trial_kernel() -> Any:
    """``ext/cost.pyx`` when the dispatch runs kernels now, else None (CandidateTable.trial's
    Python form, its specification)."""
    return _K if dispatch.mode(_K) == "kernel" else None


@dataclass
class GangState:
    """What the plan so far does to each PodGroup."""

    running: npt.NDArray[np.int64]  # [G] Running members
    min_member: npt.NDArray[np.int64]  # [G]
    usage: npt.NDArray[np.float64]  # [G] goal-resource usage of the whole group (Volcano units)
    role_running: dict[int, Counter[str]]  # Running members per role, for groups with role minimums
    role_min: list[Mapping[str, int]]  # per group; the shared empty mapping when it sets none
    moves: npt.NDArray[np.int64] = field(init=False)
    cards: npt.NDArray[np.float64] = field(init=False)
    role_moves: dict[int, Counter[str]] = field(init=False)  # moved per role, keys as role_running

    def __post_init__(self) -> None:
        self.moves = np.zeros(len(self.running), np.int64)
        self.cards = np.zeros(len(self.running))
        self.role_moves = {g: Counter() for g in self.role_running}
        # plain-Python copies for the per-group arithmetic of marginal() (numpy scalars are slow)
        self._safe: list[int] = np.maximum(self.running - self.min_member, 0).tolist()
        self._usage: list[float] = self.usage.astype(np.float64).tolist()
        self._moves = [0] * len(self.running)
        self._cards = [0.0] * len(self.running)
        # the same values as arrays, for marginal_many (kept with the lists, trials included)
        self._moves_a = np.zeros(len(self.running), np.int64)
        self._cards_a = np.zeros(len(self.running))
        self._safe_a = np.maximum(self.running - self.min_member, 0).astype(np.int64)

    @classmethod
    def build(cls, state: ClusterState, goal: int, holds: npt.NDArray[np.bool_]) -> GangState:
        g = len(state.pod_groups)
        pg = state.task_pod_group
        running_mask = (pg >= 0) & (state.task_status == RUNNING)
        running = np.bincount(pg[running_mask], minlength=g).astype(np.int64)
        usage = np.bincount(pg[holds & (pg >= 0)], weights=state.task_req[holds & (pg >= 0), goal], minlength=g).astype(
            np.float64
        )
        # protobuf maps convert slowly: only groups that set minTaskMember pay for it
        role_min = [dict(p.min_task_member) if p.min_task_member else _NO_ROLES for p in state.pod_groups]
        role_running: dict[int, Counter[str]] = {k: Counter() for k, roles in enumerate(role_min) if roles}
        for t in np.flatnonzero(running_mask & np.isin(pg, list(role_running))) if role_running else ():
            role_running[int(pg[t])][state.task_role[t]] += 1
        min_member = np.array([p.min_member for p in state.pod_groups], np.int64)
        return cls(running, min_member, usage, role_running, role_min)

    def fresh(self) -> GangState:
        """The same PodGroups with nothing moved yet (what a new planning run starts from)."""
        return GangState(self.running, self.min_member, self.usage, self.role_running, self.role_min)

    def safe(self, g: int) -> int:
        return self._safe[g]

    def below(self, g: int, extra: int = 0, extra_roles: Counter[str] | None = None) -> bool:
        if self._moves[g] + extra > self._safe[g]:
            return True
        if not self.role_min[g]:
            return False
        for role, minimum in self.role_min[g].items():
            moved = self.role_moves[g][role] + (extra_roles or Counter())[role]
            if moved > max(self.role_running[g][role] - minimum, 0):
                return True
        return False

    def affected(
        self, g: int, extra: int = 0, extra_cards: float = 0.0, extra_roles: Counter[str] | None = None
    ) -> float:
        if self.below(g, extra, extra_roles):
            return self._usage[g]
        return self._cards[g] + extra_cards

    def apply(self, g: int, moves: int, cards: float, roles: Counter[str]) -> None:
        self.moves[g] += moves
        self.cards[g] += cards
        self._moves[g] += moves
        self._cards[g] += cards
        self._moves_a[g] = self._moves[g]
        self._cards_a[g] = self._cards[g]
        if roles:
            self.role_moves[g].update(roles)

    @contextmanager
    def trial(self, groups: list[GroupMoves]) -> Iterator[None]:
        """Inside the block, :func:`marginal` sees ``groups`` as if they had joined the plan; the
        state is restored exactly afterwards (the numpy totals are never touched)."""
        saved = [(m.group, self._moves[m.group], self._cards[m.group], self.role_moves.get(m.group)) for m in groups]
        for m in groups:
            self._moves[m.group] += m.pods
            self._cards[m.group] += m.cards
            self._moves_a[m.group] = self._moves[m.group]
            self._cards_a[m.group] = self._cards[m.group]
            if m.roles:
                self.role_moves[m.group] = self.role_moves[m.group] + m.roles
        try:
            yield
        finally:
            for g, moves, cards, roles in reversed(saved):
                self._moves[g], self._cards[g] = moves, cards
                self._moves_a[g], self._cards_a[g] = moves, cards
                if roles is not None:
                    self.role_moves[g] = roles

    def totals(self) -> Totals:
        touched = np.flatnonzero(self.moves > 0)
        below = [int(g) for g in touched if self.below(int(g))]
        affected = sum(self.affected(int(g)) for g in touched)
        return Totals(len(touched), len(below), affected, float(self.cards.sum()), int(self.moves.sum()))


class Totals(NamedTuple):
    """The five dimensions measured on a whole plan, in the order of ``delta``'s rows."""

    affected_workloads: int
    below_min_available: int
    affected_resources: float
    moved_resources: float
    moved_pods: int


DIMENSIONS = Totals._fields


class HasGroups(Protocol):
    groups: list[GroupMoves]


class GroupMoves(NamedTuple):
    """What emptying one node does to one PodGroup (a tuple: thousands are built per plan)."""

    group: int
    pods: int
    cards: float
    roles: Counter[str]


def marginal(gang: GangState, groups: list[GroupMoves]) -> npt.NDArray[np.float64]:
    """The five dimensions' increase if these moves join the plan (min-max normalisation over a
    round's candidates removes the common plan-so-far part, so increases rank like totals).

    Called for every neighbour of every try, so a group without per-role minimums is done inline
    (``below`` is then moves > safe); the general rule stays in ``GangState.below``/``affected``."""
    workloads = below = 0
    affected = cards = 0.0
    pods = 0
    moved, safe, usage, taken, role_min = gang._moves, gang._safe, gang._usage, gang._cards, gang.role_min
    for m in groups:
        g = m.group
        if moved[g] == 0:
            workloads += 1
        if role_min[g]:
            was_below = gang.below(g)
            if not was_below and gang.below(g, m.pods, m.roles):
                below += 1
            affected += gang.affected(g, m.pods, m.cards, m.roles) - gang.affected(g)
        else:
            was_below, now_below = moved[g] > safe[g], moved[g] + m.pods > safe[g]
            if now_below and not was_below:
                below += 1
            after = usage[g] if now_below else taken[g] + m.cards
            affected += after - (usage[g] if was_below else taken[g])
        cards += m.cards
        pods += m.pods
    return np.array([workloads, below, affected, cards, pods], np.float64)


@dataclass(frozen=True)
class Pairs:
    """Every candidate's (PodGroup, pods, cards) moves, flattened in candidate and group order."""

    start: npt.NDArray[np.intp]  # [C + 1] candidate i's pairs are start[i]:start[i + 1]
    group: npt.NDArray[np.intp]
    pods: npt.NDArray[np.int64]
    cards: npt.NDArray[np.float64]
    roles: npt.NDArray[np.bool_]  # [C] some group of the candidate has per-role minimums

    @classmethod
    def build(cls, gang: GangState, candidates: Sequence[HasGroups]) -> Pairs:
        moves = [m for c in candidates for m in c.groups]
        start = np.zeros(len(candidates) + 1, np.intp)
        np.cumsum([len(c.groups) for c in candidates], out=start[1:])
        roles = np.array([any(gang.role_min[m.group] for m in c.groups) for c in candidates], bool)
        return cls(
            start,
            np.array([m.group for m in moves], np.intp),
            np.array([m.pods for m in moves], np.int64),
            np.array([m.cards for m in moves], np.float64),
            roles.reshape(len(candidates)),
        )


def marginal_many(gang: GangState, pairs: Pairs, cands: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """:func:`marginal` of many candidates at once, ``[5, len(cands)]``, for candidates without
    per-role minimums: the same comparisons per (candidate, group), summed per candidate in group
    order (bincount adds in input order, as marginal's loop does)."""
    lo, hi = pairs.start[cands], pairs.start[cands + 1]
    sizes = hi - lo
    owner = np.repeat(np.arange(cands.size), sizes)
    at = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) + np.repeat(lo, sizes)
    g, pods, cards = pairs.group[at], pairs.pods[at], pairs.cards[at]
    moved, taken, safe, usage = gang._moves_a[g], gang._cards_a[g], gang._safe_a[g], gang.usage[g]
    was_below, now_below = moved > safe, moved + pods > safe
    affected = np.where(now_below, usage, taken + cards) - np.where(was_below, usage, taken)
    n = cands.size
    out = np.empty((5, n))
    out[0] = np.bincount(owner, weights=(moved == 0).astype(np.float64), minlength=n)
    out[1] = np.bincount(owner, weights=(now_below & ~was_below).astype(np.float64), minlength=n)
    out[2] = np.bincount(owner, weights=affected, minlength=n)
    out[3] = np.bincount(owner, weights=cards, minlength=n)
    out[4] = np.bincount(owner, weights=pods.astype(np.float64), minlength=n)
    return out


def initial_deltas(gang: GangState, candidates: Sequence[HasGroups]) -> npt.NDArray[np.float64]:
    """marginal() of every candidate against the empty plan, vectorised: ``[5, C]``."""
    pair_cand = np.array([i for i, c in enumerate(candidates) for _ in c.groups], np.intp)
    moves = [m for c in candidates for m in c.groups]
    out = np.zeros((5, len(candidates)))
    if not moves:
        return out
    group = np.array([m.group for m in moves], np.intp)
    pods = np.array([m.pods for m in moves], np.int64)
    cards = np.array([m.cards for m in moves], np.float64)
    safe = np.array(gang._safe, np.int64)[group]
    below = pods > safe
    for k in np.flatnonzero(~below):  # per-role minimums, where a group has them
        m = moves[k]
        if gang.role_min[m.group]:
            below[k] = gang.below(m.group, m.pods, m.roles)
    usage = np.array(gang._usage, np.float64)[group]
    affected = np.where(below, usage, cards)
    n = len(candidates)
    out[0] = np.bincount(pair_cand, minlength=n)
    out[1] = np.bincount(pair_cand, weights=below.astype(np.float64), minlength=n)
    out[2] = np.bincount(pair_cand, weights=affected, minlength=n)
    out[3] = np.bincount(pair_cand, weights=cards, minlength=n)
    out[4] = np.bincount(pair_cand, weights=pods.astype(np.float64), minlength=n)
    return out


def weighted(weights: Sequence[float] | npt.NDArray[np.float64], x: Any) -> Any:
    """sum_d weights[d] * x[d], term by term in dimension order (``x``: the rows ``[5, k]`` of
    every column, or one column): the same bits whatever the array's layout (a BLAS dot product may
    sum in another order) and in every form, the kernels' included (they sum in this order too)."""
    out = weights[0] * x[0]
    for d in range(1, len(weights)):
        out = out + weights[d] * x[d]
    return out
