"""The specification of the receivers kernel's first choice (sidecar/repack/receivers.py,
ext/receivers.pyx best_receiver): a plain loop over the nodes, keyed by receivers.key_columns one
node at a time. Production never runs it (without the kernel the planner walks receivers.order over the Filter),
so it lives here, beside its test (test_receivers.py compares it with the kernel and the numpy
form on random inputs)."""

from __future__ import annotations

import numpy as np

from sidecar.repack.receivers import ReceiverInput, key_columns
from sidecar.snapshot.units import less_equal

Key = tuple[int, float, float, float, int]


def key(stays: bool, capacity: float, cost: float, left: float, rank: int) -> Key:
    """receivers.key_columns for one node, as a tuple (smaller is better)."""
    s, cap, c, lft, r = key_columns(np.array(stays), np.array(capacity), np.array(cost), np.array(left), np.array(rank))
    return (int(s), float(cap), float(c), float(lft), int(r))


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
