# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernel for sidecar.repack.receivers; best_receiver_twin there is the specification."""

from libc.stdint cimport int64_t, uint8_t


def best_receiver(const double[::1] req, const Py_ssize_t[::1] dims, const double[:, ::1] free,
                  const int64_t[::1] pod_count, const double[::1] pod_cap, const uint8_t[::1] static_ok,
                  const uint8_t[::1] allowed, const uint8_t[::1] stays, const double[::1] cost,
                  const int64_t[::1] rank, Py_ssize_t goal, double tol):
    cdef Py_ssize_t n, k, d, best = -1, n_nodes = free.shape[0], n_dims = dims.shape[0]
    cdef bint fits, better
    cdef double left, best_left = 0.0, c, best_cost = 0.0
    cdef uint8_t best_stays = 0
    with nogil:
        for n in range(n_nodes):
            if not allowed[n] or not static_ok[n] or pod_count[n] >= pod_cap[n]:
                continue
            fits = True
            for k in range(n_dims):
                d = dims[k]
                if req[d] - free[n, d] >= tol:
                    fits = False
                    break
            if not fits:
                continue
            left = free[n, goal] - req[goal]
            c = 0.0 if stays[n] else cost[n]
            if best < 0:
                better = True
            elif stays[n] != best_stays:
                better = stays[n] > best_stays
            elif c != best_cost:
                better = c > best_cost
            elif left != best_left:
                better = left < best_left
            else:
                better = rank[n] < rank[best]
            if better:
                best, best_stays, best_cost, best_left = n, stays[n], c, left
    return best
