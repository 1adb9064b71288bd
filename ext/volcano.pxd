# cython: language_level=3
"""Volcano's rules as the kernels read them: one ``cdef inline`` each, cimported by every kernel that
applies it. Each is the same expression as its one Python form (named beside it), so kernels and
twins agree bit for bit (the build passes -ffp-contract=off: no fused multiply-add).

* less_equal      -- LessEqual, ``l - r < tol``            (sidecar.snapshot.units.less_equal)
* future_idle     -- FutureIdle, ``(idle + rel) - pipe``   (sidecar.snapshot.ledger.future_idle)
* receiver_after  -- the receiver order, rules 2-4         (sidecar.repack.receivers.key_columns)
* too_skewed, domain_min -- the per-domain counting rule of topology spread and required
  anti-affinity                                            (sidecar.mirror.domaincount)
"""

from libc.stdint cimport int32_t, int64_t, uint8_t


cdef inline bint less_equal(double l, double r, double tol) noexcept nogil:
    """Volcano's LessEqual on one dimension: ``l < r || |l - r| < tol``, i.e. ``l - r < tol``."""
    return l - r < tol


cdef inline double future_idle(double idle, double releasing, double pipelined) noexcept nogil:
    """Volcano's FutureIdle: Idle + Releasing - Pipelined, summed in that order."""
    return (idle + releasing) - pipelined


cdef inline bint receiver_after(uint8_t stays, double capacity, double cost, double left, int64_t rank,
                                uint8_t b_stays, double b_capacity, double b_cost, double b_left,
                                int64_t b_rank) noexcept nogil:
    """Does the node with (stays, capacity, cost, left, rank) come after the node with the b_ values in
    receiver order? Nodes that stay first (rule 2); among nodes that may still be emptied the larger
    goal capacity, then the larger cost (rule 3: ignored where a node stays); then the less goal
    capacity left (rule 4), then the rank (node name)."""
    if stays != b_stays:
        return stays < b_stays
    if not stays:
        if capacity != b_capacity:
            return capacity < b_capacity
        if cost != b_cost:
            return cost < b_cost
    if left != b_left:
        return left > b_left
    return rank > b_rank


cdef inline bint too_skewed(int64_t count, int64_t self_match, int64_t minimum, int64_t max_skew) noexcept nogil:
    """A node fails a domain rule when its domain's count, plus the pod where it counts in its own
    domain, minus the rule's minimum exceeds maxSkew (anti-affinity: maxSkew 0, minimum 0)."""
    return count + self_match - minimum > max_skew


cdef inline int64_t domain_min(const int64_t* counts, const int32_t* domains, Py_ssize_t n_domains,
                               bint zero_min) noexcept nogil:
    """The minimum a rule's skew is measured from: 0 where forced (or without domains), else the
    smallest count over the rule's domains."""
    cdef Py_ssize_t i
    cdef int64_t low
    if zero_min or n_domains == 0:
        return 0
    low = counts[domains[0]]
    for i in range(1, n_domains):
        if counts[domains[i]] < low:
            low = counts[domains[i]]
    return low
