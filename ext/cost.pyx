# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Cython kernel for a try's re-costing of its neighbours; sidecar.repack.candidates
CandidateTable.trial's Python form (neighbours, GangState.trial, cost.marginal_many, cost.weighted)
is the specification."""

from libc.stdint cimport int64_t, uint8_t


cdef void _sort(Py_ssize_t[::1] a, Py_ssize_t n) noexcept nogil:
    """Insertion sort of a[:n] (neighbour lists are short)."""
    cdef Py_ssize_t i, j, x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef class TrialCosts:
    """CandidateTable.trial's arrays bound once (typed memoryviews cost microseconds to acquire
    per call, more than a short try's arithmetic); :meth:`run` re-costs one candidate's neighbours."""

    cdef const Py_ssize_t[::1] start, group, group_start, group_cands, cand_node
    cdef const int64_t[::1] pods, safe
    cdef const double[::1] cards, usage, weights
    cdef const uint8_t[::1] alive
    cdef int64_t[::1] moves
    cdef double[::1] taken, node_cost, old_cost, saved
    cdef uint8_t[::1] mark
    cdef Py_ssize_t[::1] others
    cdef double[:, ::1] deltas

    def __init__(self, const Py_ssize_t[::1] start, const Py_ssize_t[::1] group, const int64_t[::1] pods,
                 const double[::1] cards, const Py_ssize_t[::1] group_start, const Py_ssize_t[::1] group_cands,
                 const uint8_t[::1] alive, int64_t[::1] moves, double[::1] taken, const int64_t[::1] safe,
                 const double[::1] usage, const double[::1] weights, const Py_ssize_t[::1] cand_node,
                 double[::1] node_cost, uint8_t[::1] mark, Py_ssize_t[::1] others, double[:, ::1] deltas,
                 double[::1] old_cost, double[::1] saved):
        if deltas.shape[0] != 5 or weights.shape[0] != 5:
            raise ValueError("five cost dimensions")
        self.start, self.group, self.pods, self.cards = start, group, pods, cards
        self.group_start, self.group_cands, self.alive = group_start, group_cands, alive
        self.moves, self.taken, self.safe, self.usage, self.weights = moves, taken, safe, usage, weights
        self.cand_node, self.node_cost, self.mark, self.others = cand_node, node_cost, mark, others
        self.deltas, self.old_cost, self.saved = deltas, old_cost, saved

    def run(self, Py_ssize_t tried):
        """Candidate ``tried``'s live neighbours (candidates sharing a PodGroup with it,
        ascending) in ``others``; each one's marginal cost with ``tried``'s moves in the plan in
        ``deltas[:, k]`` (marginal_many's arithmetic, pairs summed in order); their weighted costs
        written to ``node_cost`` (the old ones kept in ``old_cost``). ``moves``/``taken`` (the
        gang's per-group totals) are restored exactly (``saved``: scratch of the tried candidate's
        pair count); ``mark`` is all zero before and after. Returns how many."""
        cdef Py_ssize_t n = 0, j, k, c, g, q
        cdef int64_t moved, safe_g
        cdef double w, b, aff, crd, pd, before, after, s
        cdef bint was_below, now_below
        cdef const Py_ssize_t[::1] start = self.start, group = self.group
        cdef const int64_t[::1] pods = self.pods
        cdef const double[::1] cards = self.cards, usage = self.usage, weights = self.weights
        cdef int64_t[::1] moves = self.moves
        cdef double[::1] taken = self.taken
        cdef double[:, ::1] deltas = self.deltas
        with nogil:
            for j in range(start[tried], start[tried + 1]):
                g = group[j]
                for q in range(self.group_start[g], self.group_start[g + 1]):
                    c = self.group_cands[q]
                    if c != tried and self.alive[c] and not self.mark[c]:
                        self.mark[c] = 1
                        self.others[n] = c
                        n += 1
            _sort(self.others, n)
            for k in range(n):
                self.mark[self.others[k]] = 0
            for j in range(start[tried], start[tried + 1]):  # GangState.trial: the tried moves join
                g = group[j]
                self.saved[j - start[tried]] = taken[g]
                moves[g] = moves[g] + pods[j]
                taken[g] = taken[g] + cards[j]
            for k in range(n):
                c = self.others[k]
                w = 0.0
                b = 0.0
                aff = 0.0
                crd = 0.0
                pd = 0.0
                for j in range(start[c], start[c + 1]):
                    g = group[j]
                    moved = moves[g]
                    safe_g = self.safe[g]
                    was_below = moved > safe_g
                    now_below = moved + pods[j] > safe_g
                    after = usage[g] if now_below else taken[g] + cards[j]
                    before = usage[g] if was_below else taken[g]
                    w = w + (1.0 if moved == 0 else 0.0)
                    b = b + (1.0 if now_below and not was_below else 0.0)
                    aff = aff + (after - before)
                    crd = crd + cards[j]
                    pd = pd + <double>pods[j]
                deltas[0, k] = w
                deltas[1, k] = b
                deltas[2, k] = aff
                deltas[3, k] = crd
                deltas[4, k] = pd
                s = weights[0] * w
                s = s + weights[1] * b
                s = s + weights[2] * aff
                s = s + weights[3] * crd
                s = s + weights[4] * pd
                self.old_cost[k] = self.node_cost[self.cand_node[c]]
                self.node_cost[self.cand_node[c]] = s
            for j in range(start[tried], start[tried + 1]):  # and leave again, exactly
                g = group[j]
                moves[g] = moves[g] - pods[j]
                taken[g] = self.saved[j - start[tried]]
        return n
