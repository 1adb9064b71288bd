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
