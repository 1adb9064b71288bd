# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for sidecar.mirror: kernels.py (specified by tests/mirror/reference_kernels.py, with
numpy forms in kernels.py) and Simulation.relocate (its twin relocate_twin there)."""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

from volcano cimport future_idle, less_equal


def first_insufficient(const double[::1] req, const double[:, ::1] free, const Py_ssize_t[::1] dims,
                       double tol, int16_t[::1] out):
    cdef Py_ssize_t n, k, d, n_nodes = free.shape[0], n_dims = dims.shape[0]
    with nogil:
        for n in range(n_nodes):
            out[n] = -1
            for k in range(n_dims):
                d = dims[k]
                if not less_equal(req[d], free[n, d], tol):
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
                    if class_dims[c, r] and not less_equal(class_req[c, r], free[n, r], tol):
                        fits = False
                        break
                if fits:
                    total += 1
            counts[c] = total


cdef inline Py_ssize_t _note(Py_ssize_t[::1] touched, Py_ssize_t n_touched, Py_ssize_t node) noexcept nogil:
    """Add ``node`` to the first ``n_touched`` entries unless there; the new count."""
    cdef Py_ssize_t j
    for j in range(n_touched):
        if touched[j] == node:
            return n_touched
    touched[n_touched] = node
    return n_touched + 1


cdef class Relocator:
    """Simulation.relocate_twin's arithmetic on the ledger rows, bound once to one Simulation's
    arrays (typed memoryviews cost microseconds to acquire per call)."""

    cdef const double[:, ::1] task_req, alloc
    cdef double[:, ::1] used, releasing, pipelined, idle, future
    cdef int64_t[::1] pod_count
    cdef int32_t[::1] node_of, status
    cdef uint8_t[::1] on_node
    cdef int32_t pipelined_code, releasing_code, allocated_code

    def __init__(self, const double[:, ::1] task_req, const double[:, ::1] alloc, double[:, ::1] used,
                 double[:, ::1] releasing, double[:, ::1] pipelined, double[:, ::1] idle, double[:, ::1] future,
                 int64_t[::1] pod_count, int32_t[::1] node_of, int32_t[::1] status, uint8_t[::1] on_node,
                 int32_t pipelined_code, int32_t releasing_code, int32_t allocated_code):
        self.task_req, self.alloc, self.used, self.releasing = task_req, alloc, used, releasing
        self.pipelined, self.idle, self.future, self.pod_count = pipelined, idle, future, pod_count
        self.node_of, self.status, self.on_node = node_of, status, on_node
        self.pipelined_code, self.releasing_code, self.allocated_code = pipelined_code, releasing_code, allocated_code

    def run(self, const Py_ssize_t[::1] tasks, const Py_ssize_t[::1] targets, Py_ssize_t[::1] touched):
        """Move ``tasks`` to ``targets`` (the caller validated them); ``touched`` is scratch for
        2 x len(tasks) node ids."""
        cdef Py_ssize_t k, j, t, node, d, n_touched = 0, n_res = self.used.shape[1]
        cdef const double[:, ::1] task_req = self.task_req, alloc = self.alloc
        cdef double[:, ::1] used = self.used, releasing = self.releasing, pipelined = self.pipelined
        cdef double[:, ::1] idle = self.idle, future = self.future
        cdef int32_t[::1] node_of = self.node_of, status = self.status
        with nogil:
            for k in range(tasks.shape[0]):
                t = tasks[k]
                node = node_of[t]
                if self.on_node[t]:
                    for d in range(n_res):
                        if status[t] == self.pipelined_code:
                            pipelined[node, d] -= task_req[t, d]
                        else:
                            used[node, d] -= task_req[t, d]
                            if status[t] == self.releasing_code:
                                releasing[node, d] -= task_req[t, d]
                    self.pod_count[node] -= 1
                    n_touched = _note(touched, n_touched, node)
                node_of[t] = -1
            for k in range(tasks.shape[0]):
                t, node = tasks[k], targets[k]
                for d in range(n_res):
                    used[node, d] += task_req[t, d]
                self.pod_count[node] += 1
                n_touched = _note(touched, n_touched, node)
            for j in range(n_touched):
                node = touched[j]
                for d in range(n_res):
                    idle[node, d] = alloc[node, d] - used[node, d]
                    future[node, d] = future_idle(idle[node, d], releasing[node, d], pipelined[node, d])
            for k in range(tasks.shape[0]):
                t = tasks[k]
                node_of[t] = <int32_t>targets[k]
                status[t] = self.allocated_code
                self.on_node[t] = 1
