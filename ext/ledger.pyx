# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Cython kernel for sidecar.snapshot.ledger; the numpy twin there is the specification."""

from volcano cimport less_equal

def accumulate(const int[::1] task_node, const int[::1] task_status, const double[:, ::1] task_req,
               const double[:, ::1] alloc, double[:, ::1] used, double[:, ::1] releasing,
               double[:, ::1] pipelined, unsigned char[::1] refused, const signed char[::1] rule,
               int pipelined_flag, int releasing_flag, int binding_flag, int terminated_mask,
               double tolerance):
    cdef Py_ssize_t t, r, n_tasks = task_node.shape[0], n_res = task_req.shape[1]
    cdef int node, status
    cdef bint fits
    with nogil:
        # every task but Binding ones: AddTask never refuses them
        for t in range(n_tasks):
            node = task_node[t]
            status = task_status[t]
            if node < 0 or (status & terminated_mask) != 0 or status == binding_flag:
                continue
            if status == pipelined_flag:
                for r in range(n_res):
                    pipelined[node, r] += task_req[t, r]
                continue
            for r in range(n_res):
                used[node, r] += task_req[t, r]
            if status == releasing_flag:
                for r in range(n_res):
                    releasing[node, r] += task_req[t, r]
        # Binding tasks in order, each against the Idle left so far (LessEqual, 0.1 tolerance)
        for t in range(n_tasks):
            node = task_node[t]
            status = task_status[t]
            if node < 0 or (status & terminated_mask) != 0 or status != binding_flag:
                continue
            fits = True
            for r in range(n_res):
                if rule[r] == 0 or (rule[r] == 2 and not task_req[t, r] > 0):
                    continue
                if not less_equal(task_req[t, r], alloc[node, r] - used[node, r], tolerance):
                    fits = False
                    break
            if not fits:
                refused[t] = 1
                continue
            for r in range(n_res):
                used[node, r] += task_req[t, r]
