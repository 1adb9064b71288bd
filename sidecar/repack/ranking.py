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
        moved = np.flatnonzero(live != self.live)
        dirty = [i for i in self._dirty if live[i] and self.live[i]]
        self._dirty.clear()
        delta, counted = self.delta, self.counted
        for i in moved.tolist():
            if self.live[i]:  # leaves
                for d, ext in enumerate(self.dims):
                    ext.remove(float(counted[d, i]))
            else:  # enters
                counted[:, i] = delta[:, i]
                for d, ext in enumerate(self.dims):
                    ext.add(float(counted[d, i]))
        for i in dirty:
            for d, ext in enumerate(self.dims):
                old, new = float(counted[d, i]), float(delta[d, i])
                if old != new:
                    ext.remove(old)
                    ext.add(new)
            counted[:, i] = delta[:, i]
        self.live = live.copy()
        span = tuple(ext.hi - ext.lo for ext in self.dims)
        if span != self.span:
            self.span = span
            self.scores = round_scores(delta, np.flatnonzero(live), self.weights)
        else:
            self.scores[moved] = np.inf
            again = np.array(sorted(set(moved[live[moved]].tolist()) | set(dirty)), np.intp)
            if again.size:
                self.scores[again] = self._score(again)
        return self.scores.copy()

    def _score(self, idx: Indices) -> F64:
        """round_scores' arithmetic for some candidates under the current spans."""
        span = np.array(self.span)
        scale = np.divide(self.weights, span, out=np.zeros(len(self.weights)), where=span > 0)
        cols = self.delta[:, idx]
        out: F64 = scale[0] * cols[0]
        for d in range(1, cols.shape[0]):
            out = out + scale[d] * cols[d]
        return out
