# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for a planning round's candidate order: the round's scores kept from round to
round (``Rounds``; ranking.RoundScores' Python form and ranking.round_scores are the
specifications) and the pick (ranking.pick's Python form)."""

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

    def __init__(self, const double[:, ::1] delta, double[:, ::1] counted, const uint8_t[::1] alive,
                 const int64_t[::1] retry_at, uint8_t[::1] live, Py_ssize_t[::1] moved, const double[::1] weights,
                 double[::1] scores):
        cdef Py_ssize_t d
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

    def update(self, int64_t n_freed, const Py_ssize_t[::1] dirty):
        """This round: ``live`` brought to alive & retry_at <= n_freed (live_changes), the
        extremes and ``scores`` to the live set, ``dirty`` naming the candidates whose ``delta``
        column was rewritten since the last round. Returns the number of live candidates."""
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
            for i in range(n):  # live_changes
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
            else:
                for k in range(n_moved):
                    i = self.moved[k]
                    if live[i]:
                        s = scale[0] * delta[0, i]
                        for d in range(1, n_dims):
                            s = s + scale[d] * delta[d, i]
                        scores[i] = s
                for k in range(dirty.shape[0]):
                    i = dirty[k]
                    if live[i]:
                        s = scale[0] * delta[0, i]
                        for d in range(1, n_dims):
                            s = s + scale[d] * delta[d, i]
                        scores[i] = s
        self.n_live = n_live
        return n_live
