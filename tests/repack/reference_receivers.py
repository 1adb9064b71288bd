"""The specification of the receivers kernel's first choice (sidecar/repack/receivers.py,
ext/receivers.pyx best_receiver): a plain loop over the nodes with the key of receivers.key.
Production never runs it (without the kernel the planner walks receivers.order over the Filter),
so it lives here, beside its test (test_receivers.py compares it with the kernel and the numpy
form on random inputs)."""

from __future__ import annotations

from sidecar.repack.receivers import ReceiverInput, key
from sidecar.snapshot.units import less_equal


def best_receiver(inp: ReceiverInput) -> int:
    """The first choice, as a plain loop (the specification): among allowed nodes that pass the
    node-only checks, the pod count and resource fit, the one with the smallest key; -1 if none."""
    best, best_key = -1, (0, 0.0, 0.0, 0.0, 0)
    req, free, goal = inp.req, inp.free, inp.goal
    for n in range(free.shape[0]):
        if not inp.allowed[n] or not inp.static_ok[n] or inp.pod_count[n] >= inp.pod_cap[n]:
            continue
        if not all(less_equal(float(req[d]), float(free[n, d])) for d in inp.dims):
            continue
        left = float(free[n, goal] - req[goal])
        k = key(bool(inp.stays[n]), float(inp.capacity[n]), float(inp.cost[n]), left, int(inp.rank[n]))
        if best < 0 or k < best_key:
            best, best_key = n, k
    return best
