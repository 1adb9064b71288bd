"""A planning round's scores, kept from round to round instead of recomputed.

Each round ranks the candidates in play by :func:`round_scores`: the weighted
sum of their marginal costs, each dimension scaled by its span (max - min) over the candidates in
play. Between two rounds few candidates change -- the one emptied and the receivers it used leave,
the neighbours sharing its PodGroups get new costs -- and the spans almost never move (2 of 606
rounds at openb size, 97 of 1,934 at 10k nodes). So :class:`RoundScores` keeps, per dimension, a
count of each value in play (its min and max follow from them), and re-scores only the changed
candidates while the spans hold, all of them when one moves. Every round's array is bit-identical
to round_scores over the same candidates (tests/repack/test_ranking.py replays random rounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.repack.cost import weighted

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Indices = npt.NDArray[np.intp]

#: the one place ``ext/ranking.pyx`` is loaded: the round's scores, the pick and the live set
_K = dispatch.load("sidecar.repack._ranking")


def scales(weights: Sequence[float], spans: Sequence[float]) -> list[float]:
    """Each dimension's factor ``w_d / span_d`` (0 where the span is 0: all candidates equal)."""
    return [w / s if s > 0 else 0.0 for w, s in zip(weights, spans, strict=True)]


def ranking_scores(deltas_t: npt.NDArray[np.float64], weights: tuple[float, ...]) -> npt.NDArray[np.float64]:
    """normalised_scores minus a constant, for dimension-major input ``[5, C]``:
    sum_d w_d x_d / span_d ranks candidates exactly as the min-max normalised sum does
    (subtracting each dimension's minimum shifts every candidate by the same amount), summed as
    :func:`cost.weighted` sums, the kernel's order."""
    if deltas_t.shape[1] == 0:
        return np.zeros(0)
    span = deltas_t.max(axis=1) - deltas_t.min(axis=1)
    out: npt.NDArray[np.float64] = weighted(scales(weights, span.tolist()), deltas_t)
    return out


def round_scores(
    delta: npt.NDArray[np.float64], live: npt.NDArray[np.intp], weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """A round's scores for every candidate ([C]): :func:`ranking_scores` over the ``live`` ones
    (``delta`` is the table's [5, C]), infinity for the rest. The specification of every round's
    scores (the kernel's ``Rounds`` keeps them incrementally, tested bit for bit against this)."""
    out = np.full(delta.shape[1], np.inf)
    out[live] = ranking_scores(np.take(delta, live, axis=1), tuple(weights.tolist()))
    return out


def pick(scores: F64, tie_rank: npt.NDArray[np.int64], tie: float) -> int:
    """The candidate with the lowest score ([C], infinity: out of the round); ties within ``tie``
    go to the lowest ``tie_rank``; -1 when none is left. One kernel pass when built."""
    if dispatch.mode(_K) == "kernel":
        return int(_K.pick(scores, tie_rank, tie))
    low = scores.min() if scores.size else np.inf
    if not np.isfinite(low):
        return -1
    tied = np.flatnonzero(scores <= low + tie)
    if tied.size == 1:
        return int(tied[0])
    return int(tied[np.argmin(tie_rank[tied])])


class _Extremes:
    """Min and max of a multiset of floats, under insertions and removals."""

    def __init__(self, values: F64) -> None:
        uniq, counts = np.unique(values, return_counts=True)
        self.counts: dict[float, int] = dict(zip(uniq.tolist(), counts.tolist(), strict=True))
        self.lo = min(self.counts) if self.counts else np.inf
        self.hi = max(self.counts) if self.counts else -np.inf

    def add(self, v: float) -> None:
        self.counts[v] = self.counts.get(v, 0) + 1
        self.lo, self.hi = min(self.lo, v), max(self.hi, v)

    def remove(self, v: float) -> None:
        left = self.counts[v] - 1
        if left:
            self.counts[v] = left
            return
        del self.counts[v]
        if v == self.lo:
            self.lo = min(self.counts) if self.counts else np.inf
        if v == self.hi:
            self.hi = max(self.counts) if self.counts else -np.inf


def live_changes_twin(alive: Bools, retry_at: npt.NDArray[np.int64], n_freed: int, live: Bools) -> Indices:
    """The candidates whose being in play (alive, and not waiting for a retry) differs from
    ``live``, which is brought up to date in place."""
    now = alive & (retry_at <= n_freed)
    flipped: Indices = np.flatnonzero(now != live)
    live[flipped] = now[flipped]
    return flipped


class RoundScores:
    """round_scores(delta, live, weights) for each round's candidates in play, updated
    incrementally: ``live`` follows the table's ``alive`` and ``retry_at`` (read live), and
    :meth:`changed` names the candidates whose ``delta`` column was rewritten since the last round.
    Within a round the caller takes candidates out with :meth:`skip`; the next round puts them
    back before it looks at what changed. With the kernel built, a round is one pass of
    ``ext/ranking.pyx``'s ``Rounds.update`` (each dimension's extremes kept with how many live
    values hold them); the Python form below is its twin. The form is chosen once, at creation.
    The kernel looks only at the candidates it is told about (:meth:`touch`, the table's
    ``watch_live``) and at those waiting for a retry, not at every one, and picks (:meth:`best`)
    from a heap of the scores: a round's cost follows what changed, not the candidate count."""

    def __init__(
        self,
        delta: F64,
        weights: F64,
        alive: Bools,
        retry_at: npt.NDArray[np.int64],
        tie_rank: npt.NDArray[np.int64] | None = None,
        tie: float = 0.0,
    ) -> None:
        self.delta, self.weights, self.alive, self.retry_at = delta, weights, alive, retry_at
        #: :meth:`best`'s tie rule (:func:`pick`'s arguments)
        self.tie_rank = np.zeros(delta.shape[1], np.int64) if tie_rank is None else tie_rank
        self.tie = tie
        self.live: Bools = np.zeros(delta.shape[1], bool)
        self.n_live = 0
        self.counted = delta.copy()  # each live candidate's column as the extremes count it
        self.dims = [_Extremes(np.zeros(0)) for _ in range(delta.shape[0])]
        self.scores: F64 = np.full(delta.shape[1], np.inf)
        self.span: tuple[float, ...] | None = None
        self._dirty: set[int] = set()
        #: the kernel's live set follows these instead of a pass over every candidate: the ones
        #: whose alive or retry_at was written (:meth:`touch`) and the ones waiting for a retry
        self._touched: list[int] = []
        self._waiting: set[int] = set()
        self._skipped: list[tuple[int, float]] = []
        self._changes: Indices = np.empty(delta.shape[1], np.intp)
        #: the kernel's form (ext/ranking.pyx Rounds), bound to these arrays; None: the twin below
        self._kernel: Any = None
        if dispatch.mode(_K) == "kernel":
            self._kernel = _K.Rounds(
                delta,
                self.counted,
                alive.view(np.uint8),
                retry_at,
                self.live.view(np.uint8),
                self._changes,
                weights,
                self.scores,
                self.tie_rank,
                tie,
            )

    def changed(self, candidates: list[int]) -> None:
        self._dirty.update(candidates)

    def touch(self, i: int) -> None:
        """Candidate ``i``'s ``alive`` or ``retry_at`` was written: the next round looks at it."""
        self._touched.append(i)

    def skip(self, i: int) -> None:
        """Leave candidate ``i`` out for the rest of this round."""
        self._skipped.append((i, float(self.scores[i])))
        self.scores[i] = np.inf

    def best(self) -> int:
        """:func:`pick` over this round's scores (skips applied). The kernel keeps the scores in a
        heap, so a pick costs the candidates tied at the top, not a pass over all of them."""
        if self._kernel is not None:
            return int(self._kernel.pick())
        return pick(self.scores, self.tie_rank, self.tie)

    def round(self, n_freed: int) -> F64:
        """Scores for this round's candidates in play; infinity elsewhere. The array is this
        object's: read it, and leave candidates out with :meth:`skip` (or copy it)."""
        for i, v in reversed(self._skipped):
            if self._kernel is not None:
                self._kernel.restore(i, v)
            else:
                self.scores[i] = v
        self._skipped.clear()
        delta, counted = self.delta, self.counted
        if self._kernel is not None:
            return self._round_kernel(n_freed)
        moved = live_changes_twin(self.alive, self.retry_at, n_freed, self.live).tolist()
        live = self.live
        if self.span is None:  # the first round counts everything at once
            self._dirty.clear()
            counted[:] = delta
            self.dims = [_Extremes(delta[d, live]) for d in range(delta.shape[0])]
            self.n_live = int(live.sum())
            self.span = tuple(ext.hi - ext.lo for ext in self.dims)
            self.scores = round_scores(delta, np.flatnonzero(live), self.weights)
            return self.scores
        leaving = [i for i in moved if not live[i]]
        entering = [i for i in moved if live[i]]
        moved_set = set(moved)
        dirty = [i for i in self._dirty if live[i] and i not in moved_set]
        self._dirty.clear()
        self.n_live += len(entering) - len(leaving)
        dims = self.dims
        for i in leaving:
            for ext, v in zip(dims, counted[:, i].tolist(), strict=True):
                ext.remove(v)
        for i in entering:
            column = delta[:, i].tolist()
            counted[:, i] = column
            for ext, v in zip(dims, column, strict=True):
                ext.add(v)
        for i in dirty:
            column = delta[:, i].tolist()
            for ext, u, v in zip(dims, counted[:, i].tolist(), column, strict=True):
                if u != v:
                    ext.remove(u)
                    ext.add(v)
            counted[:, i] = column
        span = tuple(ext.hi - ext.lo for ext in self.dims)
        if span != self.span:
            self.span = span
            self.scores = round_scores(delta, np.flatnonzero(live), self.weights)
        else:
            scores = self.scores
            for i in leaving:
                scores[i] = np.inf
            scale = scales(self.weights.tolist(), span)
            for i in entering + dirty:  # round_scores' arithmetic, one candidate at a time
                scores[i] = weighted(scale, delta[:, i].tolist())
        return self.scores

    def _round_kernel(self, n_freed: int) -> F64:
        dirty = np.fromiter(self._dirty, np.intp, len(self._dirty))
        self._dirty.clear()
        # whose being in play may have changed: the touched and the waiting (the first round
        # looks at every candidate)
        maybe = self._waiting.union(self._touched)
        self._touched.clear()
        if self.span is None:
            maybe = set(np.flatnonzero(self.retry_at > n_freed).tolist())
        self.span = ()  # counted (the kernel keeps its extremes)
        self.n_live = self._kernel.update(n_freed, dirty, np.fromiter(maybe, np.intp, len(maybe)))
        alive, retry_at = self.alive, self.retry_at
        self._waiting = {i for i in maybe if alive[i] and retry_at[i] > n_freed}
        return self.scores
