# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for a planning round's candidate order: the round's scores kept from round to
round (``Rounds``; ranking.RoundScores' Python form and ranking.round_scores are the
specifications) and the pick (ranking.pick's Python form), over an array or, for a ``Rounds``,
from a heap of the scores in play."""

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t


def pick(const double[::1] scores, const int64_t[::1] tie_rank, double tie):
    """The index of the lowest finite score, ties (within ``tie``) to the lowest tie_rank; -1 if none."""
    cdef Py_ssize_t n = scores.shape[0], i, best = -1
    cdef double low = INFINITY
    with nogil:
        for i in range(n):
            if scores[i] < low:
                low = scores[i]
        if low < INFINITY:
            for i in range(n):
                if scores[i] <= low + tie and (best < 0 or tie_rank[i] < tie_rank[best]):
                    best = i
    return best


cdef inline void _drop_value(Py_ssize_t d, double u, double* lo, double* hi, int64_t* n_lo, int64_t* n_hi,
                             uint8_t* rescan) noexcept nogil:
    """One value ``u`` of dimension d leaves the live set: an extreme held by no value any more is
    found again by a rescan at the end."""
    if rescan[d]:
        return
    if u == lo[d]:
        n_lo[d] -= 1
        if n_lo[d] == 0:
            rescan[d] = 1
    if u == hi[d]:
        n_hi[d] -= 1
        if n_hi[d] == 0:
            rescan[d] = 1


cdef inline void _add_value(Py_ssize_t d, double v, double* lo, double* hi, int64_t* n_lo, int64_t* n_hi,
                            uint8_t* rescan) noexcept nogil:
    if rescan[d]:
        return
    if v < lo[d]:
        lo[d] = v
        n_lo[d] = 1
    elif v == lo[d]:
        n_lo[d] += 1
    if v > hi[d]:
        hi[d] = v
        n_hi[d] = 1
    elif v == hi[d]:
        n_hi[d] += 1


cdef class Rounds:
    """ranking.RoundScores.round (the twin) on arrays bound once (typed memoryviews cost
    microseconds to acquire per call). Per dimension the live values' extremes are kept with how
    many values hold each; ``counted`` is each live column as they count it. When a span moves
    every live candidate is scored again (round_scores' arithmetic), else only the changed ones."""

    cdef const double[:, ::1] delta
    cdef double[:, ::1] counted
    cdef const uint8_t[::1] alive
    cdef const int64_t[::1] retry_at
    cdef uint8_t[::1] live
    cdef Py_ssize_t[::1] moved
    cdef const double[::1] weights
    cdef double[::1] scores
    cdef double lo[16]
    cdef double hi[16]
    cdef int64_t n_lo[16]
    cdef int64_t n_hi[16]
    cdef Py_ssize_t n_live
    cdef bint started
    # a binary min-heap of (score, candidate) entries over the finite scores; an entry whose score
    # is no longer its candidate's is stale and leaves when it reaches the top (or at a rebuild)
    cdef double[::1] h_score
    cdef Py_ssize_t[::1] h_idx
    cdef Py_ssize_t h_size
    cdef Py_ssize_t[::1] h_stack
    cdef const int64_t[::1] tie_rank
    cdef double tie

    def __init__(self, const double[:, ::1] delta, double[:, ::1] counted, const uint8_t[::1] alive,
                 const int64_t[::1] retry_at, uint8_t[::1] live, Py_ssize_t[::1] moved, const double[::1] weights,
                 double[::1] scores, const int64_t[::1] tie_rank, double tie):
        cdef Py_ssize_t d, cap = 2 * delta.shape[1] + 64
        if delta.shape[0] > 16:
            raise ValueError("at most 16 cost dimensions")
        self.delta, self.counted, self.alive, self.retry_at = delta, counted, alive, retry_at
        self.live, self.moved, self.weights, self.scores = live, moved, weights, scores
        for d in range(16):
            self.lo[d] = INFINITY
            self.hi[d] = -INFINITY
            self.n_lo[d] = 0
            self.n_hi[d] = 0
        self.n_live = 0
        self.started = False
        self.h_score = np.empty(cap, np.float64)
        self.h_idx = np.empty(cap, np.intp)
        self.h_stack = np.empty(cap, np.intp)
        self.h_size = 0
        self.tie_rank, self.tie = tie_rank, tie

    def update(self, int64_t n_freed, const Py_ssize_t[::1] dirty, const Py_ssize_t[::1] maybe):
        """This round: ``live`` brought to alive & retry_at <= n_freed (live_changes), the
        extremes and ``scores`` to the live set, ``dirty`` naming the candidates whose ``delta``
        column was rewritten since the last round. After the first round (which looks at every
        candidate) only those in ``maybe`` can change being in play: the caller names every
        candidate whose alive or retry_at was written, and those waiting for a retry. Returns the
        number of live candidates."""
        cdef Py_ssize_t n_dims = self.delta.shape[0], n = self.delta.shape[1], d, k, i, n_moved = 0
        cdef double v, u, s, span
        cdef double scale[16]
        cdef double old_span[16]
        cdef uint8_t rescan[16]
        cdef uint8_t counting[16]  # all zero: the rescan's own adds always count
        cdef uint8_t now
        cdef bint first = not self.started
        cdef bint full = first
        cdef Py_ssize_t n_live = self.n_live
        cdef const double[:, ::1] delta = self.delta
        cdef double[:, ::1] counted = self.counted
        cdef uint8_t[::1] live = self.live
        cdef double[::1] scores = self.scores
        cdef double* lo = self.lo
        cdef double* hi = self.hi
        cdef int64_t* n_lo = self.n_lo
        cdef int64_t* n_hi = self.n_hi
        self.started = True
        with nogil:
            for k in range(n if first else maybe.shape[0]):  # live_changes
                i = k if first else maybe[k]
                now = self.alive[i] and self.retry_at[i] <= n_freed
                if now != live[i]:
                    live[i] = now
                    self.moved[n_moved] = i
                    n_moved += 1
            for d in range(n_dims):
                old_span[d] = hi[d] - lo[d]
                rescan[d] = first
                counting[d] = 0
            if first:
                n_live = 0
                for i in range(n):
                    if live[i]:
                        n_live += 1
                    for d in range(n_dims):
                        counted[d, i] = delta[d, i]
            else:
                for k in range(n_moved):  # leaving: their values as counted
                    i = self.moved[k]
                    if not live[i]:
                        n_live -= 1
                        scores[i] = INFINITY
                        for d in range(n_dims):
                            _drop_value(d, counted[d, i], lo, hi, n_lo, n_hi, rescan)
                for k in range(n_moved):  # entering: their values now
                    i = self.moved[k]
                    if live[i]:
                        n_live += 1
                        for d in range(n_dims):
                            v = delta[d, i]
                            counted[d, i] = v
                            _add_value(d, v, lo, hi, n_lo, n_hi, rescan)
                for k in range(dirty.shape[0]):  # live and rewritten (an entering one is counted already)
                    i = dirty[k]
                    if live[i]:
                        for d in range(n_dims):
                            u = counted[d, i]
                            v = delta[d, i]
                            if u != v:
                                _drop_value(d, u, lo, hi, n_lo, n_hi, rescan)
                                _add_value(d, v, lo, hi, n_lo, n_hi, rescan)
                                counted[d, i] = v
            for d in range(n_dims):
                if rescan[d]:
                    lo[d] = INFINITY
                    hi[d] = -INFINITY
                    n_lo[d] = 0
                    n_hi[d] = 0
                    for i in range(n):
                        if live[i]:
                            _add_value(d, counted[d, i], lo, hi, n_lo, n_hi, counting)
                span = hi[d] - lo[d]
                if span != old_span[d]:
                    full = True
                scale[d] = self.weights[d] / span if n_live > 0 and span > 0 else 0.0
            if full:
                for i in range(n):
                    if live[i]:
                        s = scale[0] * delta[0, i]
                        for d in range(1, n_dims):
                            s = s + scale[d] * delta[d, i]
                        scores[i] = s
                    else:
                        scores[i] = INFINITY
                self._rebuild()
            else:
                for k in range(n_moved):
                    i = self.moved[k]
                    if live[i]:
                        s = scale[0] * delta[0, i]
                        for d in range(1, n_dims):
                            s = s + scale[d] * delta[d, i]
                        scores[i] = s
                        self._push(i)
                for k in range(dirty.shape[0]):
                    i = dirty[k]
                    if live[i]:
                        s = scale[0] * delta[0, i]
                        for d in range(1, n_dims):
                            s = s + scale[d] * delta[d, i]
                        scores[i] = s
                        self._push(i)
        self.n_live = n_live
        return n_live

    # -- the pick from the heap -------------------------------------------------------------

    def restore(self, Py_ssize_t i, double v):
        """Candidate ``i``'s score back to ``v`` after a skip (its entry may have left the heap)."""
        self.scores[i] = v
        self._push(i)

    def pick(self):
        """pick(scores, tie_rank, tie) over this object's scores: the lowest finite score, ties
        within ``tie`` to the lowest tie_rank (then index); -1 if none. Every finite score has an
        entry, so the top's is the minimum, and the entries within ``tie`` of it are a subtree
        walk (a child is never below its parent): the work is the tied band, not the candidates."""
        cdef Py_ssize_t p, i, top, best = -1
        cdef double thr, v
        cdef const double[::1] scores = self.scores
        cdef const int64_t[::1] rank = self.tie_rank
        with nogil:
            while self.h_size > 0 and scores[self.h_idx[0]] != self.h_score[0]:
                self._pop()
            thr = self.h_score[0] + self.tie if self.h_size > 0 else 0.0
            top = 1 if self.h_size > 0 else 0
            self.h_stack[0] = 0
            while top > 0:
                top -= 1
                p = self.h_stack[top]
                v = self.h_score[p]
                if not v <= thr:
                    continue
                i = self.h_idx[p]
                if scores[i] == v and (best < 0 or rank[i] < rank[best] or (rank[i] == rank[best] and i < best)):
                    best = i
                if 2 * p + 1 < self.h_size:
                    self.h_stack[top] = 2 * p + 1
                    top += 1
                if 2 * p + 2 < self.h_size:
                    self.h_stack[top] = 2 * p + 2
                    top += 1
        return best

    cdef void _push(self, Py_ssize_t i) noexcept nogil:
        cdef double v = self.scores[i]
        if not v < INFINITY:  # infinity (out of the round) and NaN have no entry
            return
        if self.h_size == self.h_score.shape[0]:
            self._rebuild()  # the stale entries go; every finite score, this one too, is back
            return
        self.h_score[self.h_size] = v
        self.h_idx[self.h_size] = i
        self.h_size += 1
        self._sift_up(self.h_size - 1)

    cdef void _pop(self) noexcept nogil:
        self.h_size -= 1
        if self.h_size > 0:
            self.h_score[0] = self.h_score[self.h_size]
            self.h_idx[0] = self.h_idx[self.h_size]
            self._sift_down(0)

    cdef void _rebuild(self) noexcept nogil:
        """An entry for every finite score and nothing else (heapified bottom-up)."""
        cdef Py_ssize_t i, n = self.scores.shape[0], p
        cdef double v
        self.h_size = 0
        for i in range(n):
            v = self.scores[i]
            if v < INFINITY:
                self.h_score[self.h_size] = v
                self.h_idx[self.h_size] = i
                self.h_size += 1
        p = self.h_size // 2
        while p > 0:
            p -= 1
            self._sift_down(p)

    cdef void _sift_up(self, Py_ssize_t p) noexcept nogil:
        cdef double v = self.h_score[p]
        cdef Py_ssize_t i = self.h_idx[p], q
        while p > 0:
            q = (p - 1) // 2
            if not v < self.h_score[q]:
                break
            self.h_score[p] = self.h_score[q]
            self.h_idx[p] = self.h_idx[q]
            p = q
        self.h_score[p] = v
        self.h_idx[p] = i

    cdef void _sift_down(self, Py_ssize_t p) noexcept nogil:
        cdef double v = self.h_score[p]
        cdef Py_ssize_t i = self.h_idx[p], c, n = self.h_size
        while True:
            c = 2 * p + 1
            if c >= n:
                break
            if c + 1 < n and self.h_score[c + 1] < self.h_score[c]:
                c += 1
            if not self.h_score[c] < v:
                break
            self.h_score[p] = self.h_score[c]
            self.h_idx[p] = self.h_idx[c]
            p = c
        self.h_score[p] = v
        self.h_idx[p] = i
