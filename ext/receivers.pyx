# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for sidecar.repack.receivers (best_receiver) and sidecar.repack.search (place_pods);
best_receiver_twin and place_pods_twin there are the specifications."""

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


cdef inline bint _worse(uint8_t s, double c, double left, int64_t r,
                        uint8_t bs, double bc, double bleft, int64_t br) noexcept nogil:
    """Is key (s, c, left, r) after key (bs, bc, bleft, br) in receiver order?"""
    if s != bs:
        return s < bs
    if c != bc:
        return c < bc
    if left != bleft:
        return left > bleft
    return r > br


cdef class NodeSearch:
    """search.place_pods_twin over one planning loop's arrays, bound once: ``place(a, b, budget)``
    searches for pods a..b-1 of ``req``. The node arrays are the caller's live arrays (read, never
    written); the node-only checks come as each static row's passing nodes (``static_nodes``
    between ``static_bounds``), so a pod scans only those; ``slot`` ([N], all -1) maps a node to the level whose placement overlays its rows and
    is all -1 again on return."""

    cdef const double[:, ::1] req, alloc, used, releasing, pipelined, future
    cdef const uint8_t[:, ::1] fit
    cdef const Py_ssize_t[::1] static_row, static_nodes, static_bounds
    cdef const int64_t[::1] pod_count, rank
    cdef const double[::1] pod_cap, cost
    cdef const uint8_t[::1] allowed, stays
    cdef Py_ssize_t goal
    cdef double tol
    cdef Py_ssize_t[::1] slot, prev_slot, targets
    cdef double[:, ::1] ov_used, ov_future
    cdef int64_t[::1] ov_count

    def __init__(self, const double[:, ::1] req, const uint8_t[:, ::1] fit, const Py_ssize_t[::1] static_row,
                 const Py_ssize_t[::1] static_nodes, const Py_ssize_t[::1] static_bounds, const double[:, ::1] alloc, const double[:, ::1] used,
                 const double[:, ::1] releasing, const double[:, ::1] pipelined, const double[:, ::1] future,
                 const int64_t[::1] pod_count, const double[::1] pod_cap, const uint8_t[::1] allowed,
                 const uint8_t[::1] stays, const double[::1] cost, const int64_t[::1] rank, Py_ssize_t goal,
                 double tol, Py_ssize_t[::1] slot, double[:, ::1] ov_used, double[:, ::1] ov_future,
                 int64_t[::1] ov_count, Py_ssize_t[::1] prev_slot, Py_ssize_t[::1] targets):
        self.req, self.fit, self.static_row = req, fit, static_row
        self.static_nodes, self.static_bounds = static_nodes, static_bounds
        self.alloc, self.used, self.releasing, self.pipelined, self.future = alloc, used, releasing, pipelined, future
        self.pod_count, self.pod_cap, self.allowed, self.stays = pod_count, pod_cap, allowed, stays
        self.cost, self.rank, self.goal, self.tol = cost, rank, goal, tol
        self.slot, self.ov_used, self.ov_future, self.ov_count = slot, ov_used, ov_future, ov_count
        self.prev_slot, self.targets = prev_slot, targets

    def place(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t budget):
        """The receivers of pods a..b-1 (a list), or None."""
        if b - a > self.targets.shape[0]:
            raise ValueError("more pods than the scratch rows")
        if self._search(a, b, budget):
            return [self.targets[k] for k in range(b - a)]
        return None

    cdef bint _search(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t budget) noexcept nogil:
        cdef Py_ssize_t n_pods = b - a, n_res = self.future.shape[1]
        cdef Py_ssize_t k = 0, n, d, best, s, p, j
        cdef bint fits, has_last = False, ok = False
        cdef uint8_t st, best_st = 0, last_st = 0
        cdef double c, left, best_c = 0.0, best_left = 0.0, last_c = 0.0, last_left = 0.0, u, tol = self.tol
        cdef int64_t count, last_rank = 0
        cdef const double* row
        cdef Py_ssize_t goal = self.goal
        while True:
            if k == n_pods:
                ok = True
                break
            p = a + k
            best = -1
            # only the nodes passing the pod's node-only checks (static_ok's row, as node lists)
            for j in range(self.static_bounds[self.static_row[p]], self.static_bounds[self.static_row[p] + 1]):
                n = self.static_nodes[j]
                if not self.allowed[n]:
                    continue
                # the goal dimension first: a goal pod requests it, and it rules most nodes out
                s = self.slot[n]
                row = &self.ov_future[s, 0] if s >= 0 else &self.future[n, 0]
                if self.fit[p, goal] and self.req[p, goal] - row[goal] >= tol:
                    continue
                count = self.ov_count[s] if s >= 0 else self.pod_count[n]
                if count >= self.pod_cap[n]:
                    continue
                fits = True
                for d in range(n_res):
                    if self.fit[p, d] and self.req[p, d] - row[d] >= tol:
                        fits = False
                        break
                if not fits:
                    continue
                st = self.stays[n]
                c = 0.0 if st else self.cost[n]
                left = row[goal] - self.req[p, goal]
                if has_last and not _worse(st, c, left, self.rank[n], last_st, last_c, last_left, last_rank):
                    continue
                if best < 0 or _worse(best_st, best_c, best_left, self.rank[best], st, c, left, self.rank[n]):
                    best, best_st, best_c, best_left = n, st, c, left
            if best < 0 or budget <= 0:
                # level k has no (further) receiver: back to the previous pod's next one
                if k == 0:
                    break
                k -= 1
                n = self.targets[k]
                self.slot[n] = self.prev_slot[k]
                last_st = self.stays[n]
                last_c = 0.0 if last_st else self.cost[n]
                s = self.slot[n]
                row = &self.ov_future[s, 0] if s >= 0 else &self.future[n, 0]
                last_left = row[goal] - self.req[a + k, goal]
                last_rank = self.rank[n]
                has_last = True
                continue
            budget -= 1
            s = self.slot[best]
            for d in range(n_res):
                u = (self.ov_used[s, d] if s >= 0 else self.used[best, d]) + self.req[p, d]
                self.ov_used[k, d] = u
                self.ov_future[k, d] = ((self.alloc[best, d] - u) + self.releasing[best, d]) - self.pipelined[best, d]
            self.ov_count[k] = (self.ov_count[s] if s >= 0 else self.pod_count[best]) + 1
            self.prev_slot[k] = s
            self.slot[best] = k
            self.targets[k] = best
            k += 1
            has_last = False
        # leave slot as found
        n = k
        while n > 0:
            n -= 1
            self.slot[self.targets[n]] = self.prev_slot[n]
        return ok
