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


def trial_costs(Py_ssize_t tried, const Py_ssize_t[::1] start, const Py_ssize_t[::1] group,
                const int64_t[::1] pods, const double[::1] cards, const Py_ssize_t[::1] group_start,
                const Py_ssize_t[::1] group_cands, const uint8_t[::1] alive, int64_t[::1] moves,
                double[::1] taken, const int64_t[::1] safe, const double[::1] usage, const double[::1] weights,
                const Py_ssize_t[::1] cand_node, double[::1] node_cost, uint8_t[::1] mark,
                Py_ssize_t[::1] others, double[:, ::1] deltas, double[::1] old_cost, double[::1] saved):
    """Candidate ``tried``'s live neighbours (candidates sharing a PodGroup with it, ascending) in
    ``others``; each one's marginal cost with ``tried``'s moves in the plan in ``deltas[:, k]``
    (marginal_many's arithmetic, pairs summed in order); their weighted costs written to
    ``node_cost`` (the old ones kept in ``old_cost``). ``moves``/``taken`` (the gang's per-group
    totals) are restored exactly (``saved``: scratch of the tried candidate's pair count); ``mark``
    is all zero before and after. Returns how many."""
    cdef Py_ssize_t n = 0, j, k, c, g, q
    cdef int64_t moved, safe_g
    cdef double w, b, aff, crd, pd, before, after, s
    cdef bint was_below, now_below
    with nogil:
        for j in range(start[tried], start[tried + 1]):
            g = group[j]
            for q in range(group_start[g], group_start[g + 1]):
                c = group_cands[q]
                if c != tried and alive[c] and not mark[c]:
                    mark[c] = 1
                    others[n] = c
                    n += 1
        _sort(others, n)
        for k in range(n):
            mark[others[k]] = 0
        for j in range(start[tried], start[tried + 1]):  # GangState.trial: the tried moves join
            g = group[j]
            saved[j - start[tried]] = taken[g]
            moves[g] = moves[g] + pods[j]
            taken[g] = taken[g] + cards[j]
        for k in range(n):
            c = others[k]
            w = 0.0
            b = 0.0
            aff = 0.0
            crd = 0.0
            pd = 0.0
            for j in range(start[c], start[c + 1]):
                g = group[j]
                moved = moves[g]
                safe_g = safe[g]
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
            old_cost[k] = node_cost[cand_node[c]]
            node_cost[cand_node[c]] = s
        for j in range(start[tried], start[tried + 1]):  # and leave again, exactly
            g = group[j]
            moves[g] = moves[g] - pods[j]
            taken[g] = saved[j - start[tried]]
    return n
