"""A planning round's scores, kept from round to round instead of recomputed.

Each round ranks the candidates in play by :func:`sidecar.repack.cost.round_scores`: the weighted
sum of their marginal costs, each dimension scaled by its span (max - min) over the candidates in
play. Between two rounds few candidates change -- the one emptied and the receivers it used leave,
the neighbours sharing its PodGroups get new costs -- and the spans almost never move (2 of 606
rounds at openb size, 97 of 1,934 at 10k nodes). So :class:`RoundScores` keeps, per dimension, a
count of each value in play (its min and max follow from them), and re-scores only the changed
candidates while the spans hold, all of them when one moves. Every round's array is bit-identical
to round_scores over the same candidates (tests/test_ranking.py replays random rounds).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.repack.cost import round_scores

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Indices = npt.NDArray[np.intp]


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


class RoundScores:
    """round_scores(delta, live, weights) for each round's ``live``, updated incrementally.

    ``delta`` ([D, C], the candidate table's) is read live; :meth:`changed` names the candidates
    whose column was rewritten since the last round."""

    def __init__(self, delta: F64, weights: F64) -> None:
        self.delta, self.weights = delta, weights
        self.live: Bools = np.zeros(delta.shape[1], bool)
        self.counted = delta.copy()  # each live candidate's column as the extremes count it
        self.dims = [_Extremes(np.zeros(0)) for _ in range(delta.shape[0])]
        self.scores: F64 = np.full(delta.shape[1], np.inf)
        self.span: tuple[float, ...] | None = None
        self._dirty: set[int] = set()

    def changed(self, candidates: list[int]) -> None:
        self._dirty.update(candidates)

    def round(self, live: Bools) -> F64:
        """Scores for this round's candidates in play (``live``, [C]); infinity elsewhere. The
        caller owns the returned copy."""
        delta, counted = self.delta, self.counted
        if self.span is None:  # the first round counts everything at once
            self._dirty.clear()
            counted[:] = delta
            self.dims = [_Extremes(delta[d, live]) for d in range(delta.shape[0])]
            self.live = live.copy()
            self.span = tuple(ext.hi - ext.lo for ext in self.dims)
            self.scores = round_scores(delta, np.flatnonzero(live), self.weights)
            return self.scores.copy()
        moved = np.flatnonzero(live != self.live).tolist()
        was = self.live
        dirty = [i for i in self._dirty if live[i] and was[i]]
        self._dirty.clear()
        dims = self.dims
        leaving = [i for i in moved if was[i]]
        entering = [i for i in moved if not was[i]]
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
        self.live = live.copy()
        span = tuple(ext.hi - ext.lo for ext in self.dims)
        if span != self.span:
            self.span = span
            self.scores = round_scores(delta, np.flatnonzero(live), self.weights)
        else:
            scores = self.scores
            for i in leaving:
                scores[i] = np.inf
            for i in entering + dirty:
                scores[i] = self._score(delta[:, i].tolist())
        return self.scores.copy()

    def _score(self, column: list[float]) -> float:
        """round_scores' arithmetic for one candidate under the current spans (Python floats are
        IEEE doubles: the same products and sums, in the same order)."""
        scale = [w / s if s > 0 else 0.0 for w, s in zip(self.weights.tolist(), self.span or (), strict=True)]
        out = scale[0] * column[0]
        for d in range(1, len(column)):
            out = out + scale[d] * column[d]
        return out
