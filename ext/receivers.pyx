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


def place_pods(const double[:, ::1] req, const uint8_t[:, ::1] fit, const Py_ssize_t[::1] static_row,
               const uint8_t[:, ::1] static_ok, const double[:, ::1] alloc, const double[:, ::1] used,
               const double[:, ::1] releasing, const double[:, ::1] pipelined, const double[:, ::1] future,
               const int64_t[::1] pod_count, const double[::1] pod_cap, const uint8_t[::1] allowed,
               const uint8_t[::1] stays, const double[::1] cost, const int64_t[::1] rank, Py_ssize_t goal,
               double tol, Py_ssize_t budget, Py_ssize_t[::1] slot, double[:, ::1] ov_used,
               double[:, ::1] ov_future, int64_t[::1] ov_count, Py_ssize_t[::1] prev_slot,
               Py_ssize_t[::1] targets):
    """search.place_pods_twin in one pass: 1 when every pod got a receiver (``targets``), else 0.
    ``slot`` ([N], all -1) maps a node to the level whose placement overlays its rows; it is all -1
    again on return, and nothing else the caller passed in is written but the scratch rows."""
    cdef Py_ssize_t n_pods = req.shape[0], n_nodes = future.shape[0], n_res = future.shape[1]
    cdef Py_ssize_t k = 0, n, d, best, s
    cdef bint fits, has_last
    cdef uint8_t st, best_st = 0, last_st = 0
    cdef double c, left, best_c = 0.0, best_left = 0.0, last_c = 0.0, last_left = 0.0, u
    cdef int64_t count, last_rank = 0
    cdef const double* row
    cdef int ok = 0
    with nogil:
        has_last = False
        while True:
            if k == n_pods:
                ok = 1
                break
            best = -1
            for n in range(n_nodes):
                if not allowed[n]:
                    continue
                # the goal dimension first: a goal pod requests it, and it rules most nodes out
                s = slot[n]
                row = &ov_future[s, 0] if s >= 0 else &future[n, 0]
                if (fit[k, goal] and req[k, goal] - row[goal] >= tol) or not static_ok[static_row[k], n]:
                    continue
                count = ov_count[s] if s >= 0 else pod_count[n]
                if count >= pod_cap[n]:
                    continue
                fits = True
                for d in range(n_res):
                    if fit[k, d] and req[k, d] - row[d] >= tol:
                        fits = False
                        break
                if not fits:
                    continue
                st = stays[n]
                c = 0.0 if st else cost[n]
                left = row[goal] - req[k, goal]
                if has_last and not _worse(st, c, left, rank[n], last_st, last_c, last_left, last_rank):
                    continue
                if best < 0 or _worse(best_st, best_c, best_left, rank[best], st, c, left, rank[n]):
                    best, best_st, best_c, best_left = n, st, c, left
            if best < 0 or budget <= 0:
                # level k has no (further) receiver: back to the previous pod's next one
                if k == 0:
                    break
                k -= 1
                n = targets[k]
                slot[n] = prev_slot[k]
                last_st = stays[n]
                last_c = 0.0 if last_st else cost[n]
                s = slot[n]
                row = &ov_future[s, 0] if s >= 0 else &future[n, 0]
                last_left = row[goal] - req[k, goal]
                last_rank = rank[n]
                has_last = True
                continue
            budget -= 1
            s = slot[best]
            for d in range(n_res):
                u = (ov_used[s, d] if s >= 0 else used[best, d]) + req[k, d]
                ov_used[k, d] = u
                ov_future[k, d] = ((alloc[best, d] - u) + releasing[best, d]) - pipelined[best, d]
            ov_count[k] = (ov_count[s] if s >= 0 else pod_count[best]) + 1
            prev_slot[k] = s
            slot[best] = k
            targets[k] = best
            k += 1
            has_last = False
        # leave slot as found
        while k > 0:
            k -= 1
            slot[targets[k]] = prev_slot[k]
    return ok
