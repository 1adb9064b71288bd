# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for sidecar.mirror.kernels; the Python twins there are the specification."""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t


def first_insufficient(const double[::1] req, const double[:, ::1] free, const Py_ssize_t[::1] dims,
                       double tol, int16_t[::1] out):
    cdef Py_ssize_t n, k, d, n_nodes = free.shape[0], n_dims = dims.shape[0]
    with nogil:
        for n in range(n_nodes):
            out[n] = -1
            for k in range(n_dims):
                d = dims[k]
                if req[d] - free[n, d] >= tol:
                    out[n] = <int16_t>d
                    break


def feasible_counts(const double[:, ::1] class_req, const uint8_t[:, ::1] class_dims,
                    const int32_t[::1] class_static, const uint8_t[:, ::1] static_ok,
                    const int32_t[::1] class_dynamic, const uint8_t[:, ::1] dynamic_ok,
                    const double[:, ::1] free, const uint8_t[::1] pod_room, double tol,
                    int64_t[::1] counts):
    cdef Py_ssize_t c, n, r, n_classes = class_req.shape[0], n_nodes = free.shape[0], n_res = free.shape[1]
    cdef int32_t s, dyn
    cdef int64_t total
    cdef bint fits
    with nogil:
        for c in range(n_classes):
            s = class_static[c]
            dyn = class_dynamic[c]
            total = 0
            for n in range(n_nodes):
                if not pod_room[n] or not static_ok[s, n]:
                    continue
                if dyn >= 0 and not dynamic_ok[dyn, n]:
                    continue
                fits = True
                for r in range(n_res):
                    if class_dims[c, r] and class_req[c, r] - free[n, r] >= tol:
                        fits = False
                        break
                if fits:
                    total += 1
            counts[c] = total
