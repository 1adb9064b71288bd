# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Cython kernel for sidecar.snapshot.ledger; the numpy twin there is the specification."""

def accumulate(const int[::1] task_node, const int[::1] task_status, const double[:, ::1] task_req,
               double[:, ::1] used, double[:, ::1] releasing, double[:, ::1] pipelined,
               int pipelined_flag, int releasing_flag, int terminated_mask):
    cdef Py_ssize_t t, r, n_tasks = task_node.shape[0], n_res = task_req.shape[1]
    cdef int node, status
    with nogil:
        for t in range(n_tasks):
            node = task_node[t]
            status = task_status[t]
            if node < 0 or (status & terminated_mask) != 0:
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
