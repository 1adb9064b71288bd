# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for a planning round's candidate order; sidecar.repack.cost.ranking_scores and
CandidateTable.best are the specifications."""

from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t


def round_scores(const double[:, ::1] delta, const Py_ssize_t[::1] live, const double[::1] weights,
                 double[::1] out):
    """out[i] = sum_d (weights[d] / span_d) * delta[d, i] for i in live (span over live, a zero
    span contributes nothing), summed in dimension order; INFINITY elsewhere."""
    cdef Py_ssize_t n_dims = delta.shape[0], n_live = live.shape[0], d, k, i
    cdef double lo, hi, x, s
    cdef double scale[16]
    if n_dims > 16:
        raise ValueError("at most 16 cost dimensions")
    with nogil:
        for i in range(out.shape[0]):
            out[i] = INFINITY
        for d in range(n_dims):
            lo = INFINITY
            hi = -INFINITY
            for k in range(n_live):
                x = delta[d, live[k]]
                if x < lo:
                    lo = x
                if x > hi:
                    hi = x
            scale[d] = weights[d] / (hi - lo) if n_live > 0 and hi - lo > 0 else 0.0
        for k in range(n_live):
            i = live[k]
            s = scale[0] * delta[0, i]
            for d in range(1, n_dims):
                s = s + scale[d] * delta[d, i]
            out[i] = s


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


def live_changes(const uint8_t[::1] alive, const int64_t[::1] retry_at, int64_t n_freed, uint8_t[::1] live,
                 Py_ssize_t[::1] out):
    """ranking.live_changes_twin in one pass: flips ``live`` to alive & retry_at <= n_freed and
    writes the flipped candidates to ``out``; returns how many."""
    cdef Py_ssize_t i, count = 0
    cdef uint8_t now
    with nogil:
        for i in range(alive.shape[0]):
            now = alive[i] and retry_at[i] <= n_freed
            if now != live[i]:
                live[i] = now
                out[count] = i
                count += 1
    return count


cdef inline void _drop_value(Py_ssize_t d, double u, double[::1] lo, double[::1] hi, int64_t[::1] n_lo,
                             int64_t[::1] n_hi, uint8_t* rescan) noexcept nogil:
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


cdef inline void _add_value(Py_ssize_t d, double v, double[::1] lo, double[::1] hi, int64_t[::1] n_lo,
                            int64_t[::1] n_hi, uint8_t* rescan) noexcept nogil:
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


def round_update(const double[:, ::1] delta, double[:, ::1] counted, const uint8_t[::1] live,
                 const Py_ssize_t[::1] moved, const Py_ssize_t[::1] dirty, double[::1] lo, double[::1] hi,
                 int64_t[::1] n_lo, int64_t[::1] n_hi, const double[::1] weights, double[::1] scores,
                 Py_ssize_t n_live, bint first):
    """ranking.RoundScores.round (the twin) on arrays: ``live`` already holds this round's set and
    ``moved`` the candidates whose membership flipped; ``dirty`` those whose ``delta`` column was
    rewritten. Per dimension the live values' extremes are kept with how many values hold each
    (``lo``/``hi``, ``n_lo``/``n_hi``); ``counted`` is each live column as they count it. When a
    span moves every live candidate is scored again (round_scores' arithmetic), else only the
    changed ones. ``first``: count everything. Returns the number of live candidates."""
    cdef Py_ssize_t n_dims = delta.shape[0], n = delta.shape[1], d, k, i
    cdef double v, u, s, span
    cdef double scale[16]
    cdef double old_span[16]
    cdef uint8_t rescan[16]
    cdef uint8_t counting[16]  # all zero: the rescan's own adds always count
    cdef bint full = first
    if n_dims > 16:
        raise ValueError("at most 16 cost dimensions")
    with nogil:
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
            for k in range(moved.shape[0]):  # leaving: their values as counted
                i = moved[k]
                if not live[i]:
                    n_live -= 1
                    scores[i] = INFINITY
                    for d in range(n_dims):
                        _drop_value(d, counted[d, i], lo, hi, n_lo, n_hi, rescan)
            for k in range(moved.shape[0]):  # entering: their values now
                i = moved[k]
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
            scale[d] = weights[d] / span if n_live > 0 and span > 0 else 0.0
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
            for k in range(moved.shape[0]):
                i = moved[k]
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
    return n_live
