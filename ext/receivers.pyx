# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernels for sidecar.repack.receivers (best_receiver) and sidecar.repack.search (place_pods);
tests/repack/reference_receivers.py and reference_search.py are their specifications. LessEqual,
FutureIdle, the receiver order and the domain rule come from volcano.pxd."""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t

from volcano cimport domain_min, future_idle, less_equal, receiver_after, too_skewed


def best_receiver(const double[::1] req, const Py_ssize_t[::1] dims, const double[:, ::1] free,
                  const int64_t[::1] pod_count, const double[::1] pod_cap, const uint8_t[::1] static_ok,
                  const uint8_t[::1] allowed, const uint8_t[::1] stays, const double[::1] capacity,
                  const double[::1] cost, const int64_t[::1] rank, Py_ssize_t goal, double tol):
    cdef Py_ssize_t n, k, d, best = -1, n_nodes = free.shape[0], n_dims = dims.shape[0]
    cdef bint fits, better
    cdef double left, best_left = 0.0
    with nogil:
        for n in range(n_nodes):
            if not allowed[n] or not static_ok[n] or pod_count[n] >= pod_cap[n]:
                continue
            fits = True
            for k in range(n_dims):
                d = dims[k]
                if not less_equal(req[d], free[n, d], tol):
                    fits = False
                    break
            if not fits:
                continue
            left = free[n, goal] - req[goal]
            better = best < 0 or receiver_after(stays[best], capacity[best], cost[best], best_left, rank[best],
                                                stays[n], capacity[n], cost[n], left, rank[n])
            if better:
                best, best_left = n, left
    return best


cdef class NodeSearch:
    """The node-level search (tests/repack/reference_search.py) over one planning loop's arrays,
    bound once: ``place(a, b, budget)`` searches for pods a..b-1 of ``req``. The node arrays are the caller's live arrays (read, never
    written); the node-only checks come as each static row's passing nodes (``static_nodes``
    between ``static_bounds``), and of those a pod scans only the live ones: nodes still allowed
    with room for the smallest goal request of the loop (``min_goal``). An allowed node's room only
    shrinks and a node never becomes allowed again, so ``retire`` (called with the nodes a
    committed move touched) drops a node for good. ``slot`` ([N], all -1) maps a node to the level
    whose placement overlays its rows and is all -1 again on return."""

    cdef const double[:, ::1] req, alloc, used, releasing, pipelined, future
    cdef const uint8_t[:, ::1] fit
    cdef const Py_ssize_t[::1] static_row, static_nodes, static_bounds
    cdef Py_ssize_t[::1] live_nodes, live_count
    cdef Py_ssize_t[:, ::1] live_pos
    cdef double min_goal
    cdef const int64_t[::1] pod_count, rank
    cdef const double[::1] pod_cap, capacity, cost
    cdef const uint8_t[::1] allowed, stays
    cdef Py_ssize_t goal
    cdef double tol
    cdef Py_ssize_t[::1] slot, prev_slot, targets
    cdef uint8_t[::1] stuck_at
    cdef double[:, ::1] ov_used, ov_future
    cdef int64_t[::1] ov_count
    # one try's PodTopologySpread rules (search.RulesInput); n_rules = 0 without
    cdef Py_ssize_t n_rules
    cdef int64_t[::1] counts, self_match, max_skew, mins
    cdef const Py_ssize_t[::1] count_off, domain_off, pod_rule_off, pod_rules, code_row, eligible_row
    cdef const int32_t[:, ::1] codes
    cdef const int32_t[::1] domains
    cdef const uint8_t[:, ::1] eligible, member
    cdef const uint8_t[::1] zero_min, missing_ok

    def __init__(self, const double[:, ::1] req, const uint8_t[:, ::1] fit, const Py_ssize_t[::1] static_row,
                 const Py_ssize_t[::1] static_nodes, const Py_ssize_t[::1] static_bounds, const double[:, ::1] alloc, const double[:, ::1] used,
                 const double[:, ::1] releasing, const double[:, ::1] pipelined, const double[:, ::1] future,
                 const int64_t[::1] pod_count, const double[::1] pod_cap, const uint8_t[::1] allowed,
                 const uint8_t[::1] stays, const double[::1] capacity, const double[::1] cost,
                 const int64_t[::1] rank, Py_ssize_t goal,
                 double tol, Py_ssize_t[::1] slot, double[:, ::1] ov_used, double[:, ::1] ov_future,
                 int64_t[::1] ov_count, Py_ssize_t[::1] prev_slot, Py_ssize_t[::1] targets):
        self.req, self.fit, self.static_row = req, fit, static_row
        self.static_nodes, self.static_bounds = static_nodes, static_bounds
        self.alloc, self.used, self.releasing, self.pipelined, self.future = alloc, used, releasing, pipelined, future
        self.pod_count, self.pod_cap, self.allowed, self.stays = pod_count, pod_cap, allowed, stays
        self.capacity, self.cost, self.rank, self.goal, self.tol = capacity, cost, rank, goal, tol
        self.slot, self.ov_used, self.ov_future, self.ov_count = slot, ov_used, ov_future, ov_count
        self.prev_slot, self.targets = prev_slot, targets
        self.stuck_at = np.zeros(targets.shape[0], np.uint8)
        # the smallest goal request among pods that all ask for it (else nothing is retired)
        cdef Py_ssize_t p, j, s, n, n_rows = static_bounds.shape[0] - 1
        self.min_goal = -np.inf
        if req.shape[0] and all(fit[p, goal] for p in range(req.shape[0])):
            self.min_goal = min(req[p, goal] for p in range(req.shape[0]))
        self.live_nodes = np.array(static_nodes, np.intp)
        self.live_count = np.zeros(n_rows, np.intp)
        self.live_pos = np.full((n_rows, future.shape[0]), -1, np.intp)
        for s in range(n_rows):
            for j in range(static_bounds[s], static_bounds[s + 1]):
                n = static_nodes[j]
                if self._useful(n):
                    self.live_nodes[static_bounds[s] + self.live_count[s]] = n
                    self.live_pos[s, n] = self.live_count[s]
                    self.live_count[s] += 1

    cdef bint _useful(self, Py_ssize_t n) noexcept nogil:
        return self.allowed[n] and less_equal(self.min_goal, self.future[n, self.goal], self.tol)

    def retire(self, nodes):
        """Drop from the scan the ``nodes`` that can no longer take any pod of the loop."""
        cdef Py_ssize_t n, s, at, last, moved
        for n in nodes:
            if self._useful(n):
                continue
            for s in range(self.live_count.shape[0]):
                at = self.live_pos[s, n]
                if at < 0:
                    continue
                last = self.live_count[s] - 1
                moved = self.live_nodes[self.static_bounds[s] + last]
                self.live_nodes[self.static_bounds[s] + at] = moved
                self.live_pos[s, moved] = at
                self.live_pos[s, n] = -1
                self.live_count[s] = last

    def place(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t budget, rules=None):
        """The receivers of pods a..b-1 (a list), or None. ``rules`` (a search.RulesInput for
        these pods, its ``counts`` used as scratch and restored) adds their domain rules."""
        if b - a > self.targets.shape[0]:
            raise ValueError("more pods than the scratch rows")
        self.n_rules = 0
        if rules is not None and rules.self_match.shape[0] > 0:
            self.counts, self.count_off = rules.counts, rules.count_off
            self.codes, self.domains, self.domain_off = rules.codes, rules.domains, rules.domain_off
            self.code_row, self.eligible_row = rules.code_row, rules.eligible_row
            self.eligible, self.self_match, self.max_skew = rules.eligible, rules.self_match, rules.max_skew
            self.zero_min, self.missing_ok, self.member = rules.zero_min, rules.missing_ok, rules.member
            self.pod_rules, self.pod_rule_off = rules.pod_rules, rules.pod_rule_off
            self.n_rules = rules.self_match.shape[0]
            if self.member.shape[0] != b - a or self.pod_rule_off.shape[0] != b - a + 1:
                raise ValueError("domain rules for a different number of pods")
            self.mins = np.empty(self.n_rules, np.int64)
        self.stuck_at[: b - a] = 0
        if self._search(a, b, budget):
            return [self.targets[k] for k in range(b - a)]
        return None

    def stuck(self, Py_ssize_t n_pods):
        """The pods (positions) of the last search that found no receiver at all at some point."""
        return [k for k in range(n_pods) if self.stuck_at[k]]

    cdef void _level_mins(self, Py_ssize_t k) noexcept nogil:
        """Each of pod k's rules' global minimum on the current counts."""
        cdef Py_ssize_t j, r
        for j in range(self.pod_rule_off[k], self.pod_rule_off[k + 1]):
            r = self.pod_rules[j]
            self.mins[r] = domain_min(&self.counts[self.count_off[r]], &self.domains[self.domain_off[r]],
                                      self.domain_off[r + 1] - self.domain_off[r], self.zero_min[r])

    cdef bint _rules_ok(self, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t j, r
        cdef int32_t code
        for j in range(self.pod_rule_off[k], self.pod_rule_off[k + 1]):
            r = self.pod_rules[j]
            code = self.codes[self.code_row[r], n]
            if code < 0:
                if self.missing_ok[r]:
                    continue
                return False
            if too_skewed(self.counts[self.count_off[r] + code], self.self_match[r], self.mins[r], self.max_skew[r]):
                return False
        return True

    cdef void _count(self, Py_ssize_t k, Py_ssize_t n, int64_t by) noexcept nogil:
        """Pod k placed on (by=1) or taken off (by=-1) node n, for every rule that counts it there."""
        cdef Py_ssize_t r
        cdef int32_t code
        for r in range(self.n_rules):
            code = self.codes[self.code_row[r], n]
            if self.member[k, r] and self.eligible[self.eligible_row[r], n] and code >= 0:
                self.counts[self.count_off[r] + code] += by

    cdef bint _search(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t budget) noexcept nogil:
        cdef Py_ssize_t n_pods = b - a, n_res = self.future.shape[1]
        cdef Py_ssize_t k = 0, n, d, best, s, p, j
        cdef bint fits, has_last = False, ok = False
        cdef uint8_t st, best_st = 0, last_st = 0
        cdef double c, left, best_c = 0.0, best_left = 0.0, last_c = 0.0, last_left = 0.0, u, tol = self.tol
        cdef double cap, best_cap = 0.0, last_cap = 0.0
        cdef int64_t count, last_rank = 0
        cdef const double* row
        cdef Py_ssize_t goal = self.goal
        while True:
            if k == n_pods:
                ok = True
                break
            p = a + k
            best = -1
            if self.n_rules:
                self._level_mins(k)
            # only the nodes passing the pod's node-only checks (static_ok's row, as node lists)
            # order does not matter: the key is a total order (the node rank breaks ties)
            for j in range(self.static_bounds[self.static_row[p]],
                           self.static_bounds[self.static_row[p]] + self.live_count[self.static_row[p]]):
                n = self.live_nodes[j]
                if not self.allowed[n]:
                    continue
                # the goal dimension first: a goal pod requests it, and it rules most nodes out
                s = self.slot[n]
                row = &self.ov_future[s, 0] if s >= 0 else &self.future[n, 0]
                if self.fit[p, goal] and not less_equal(self.req[p, goal], row[goal], tol):
                    continue
                count = self.ov_count[s] if s >= 0 else self.pod_count[n]
                if count >= self.pod_cap[n]:
                    continue
                fits = True
                for d in range(n_res):
                    if self.fit[p, d] and not less_equal(self.req[p, d], row[d], tol):
                        fits = False
                        break
                if not fits:
                    continue
                if self.n_rules and not self._rules_ok(k, n):
                    continue
                st, cap, c = self.stays[n], self.capacity[n], self.cost[n]
                left = row[goal] - self.req[p, goal]
                if has_last and not receiver_after(st, cap, c, left, self.rank[n],
                                                   last_st, last_cap, last_c, last_left, last_rank):
                    continue
                if best < 0 or receiver_after(best_st, best_cap, best_c, best_left, self.rank[best],
                                              st, cap, c, left, self.rank[n]):
                    best, best_st, best_cap, best_c, best_left = n, st, cap, c, left
            if best < 0 and not has_last:
                self.stuck_at[k] = 1
            if best < 0 or budget <= 0:
                # level k has no (further) receiver: back to the previous pod's next one
                if k == 0:
                    break
                k -= 1
                n = self.targets[k]
                self.slot[n] = self.prev_slot[k]
                if self.n_rules:
                    self._count(k, n, -1)
                last_st, last_cap, last_c = self.stays[n], self.capacity[n], self.cost[n]
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
                self.ov_future[k, d] = future_idle(self.alloc[best, d] - u, self.releasing[best, d],
                                                   self.pipelined[best, d])
            self.ov_count[k] = (self.ov_count[s] if s >= 0 else self.pod_count[best]) + 1
            self.prev_slot[k] = s
            self.slot[best] = k
            self.targets[k] = best
            if self.n_rules:
                self._count(k, best, 1)
            k += 1
            has_last = False
        # leave slot as found
        n = k
        while n > 0:
            n -= 1
            self.slot[self.targets[n]] = self.prev_slot[n]
            if self.n_rules:
                self._count(n, self.targets[n], -1)
        return ok
