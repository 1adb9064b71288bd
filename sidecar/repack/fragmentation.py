"""Fragmentation rate of one resource, exactly as the user guide defines it.

    rate(R) = (occupied nodes - theoretical minimum occupied nodes) / providing nodes x 100

* providing: nodes with Allocatable[R] > 0;
* occupied: providing nodes that hold R (:mod:`sidecar.snapshot.holding`, the one definition
  receiver rule 1 and Execute read too: the ledger's used minus releasing, i.e. every placed,
  non-terminated task except Pipelined and Releasing ones);
* minimum: the fewest providing nodes that could hold those same tasks' R requests, each task
  indivisible (one-dimensional bin packing).  See :func:`min_occupied_nodes`.

The statistic is always cluster-wide; scope only limits what a plan may empty.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import reduce

import numpy as np
import numpy.typing as npt

from sidecar.snapshot.holding import goal_tasks, holding_nodes
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import TOLERANCE, is_goal_resource, to_user_units

I64 = npt.NDArray[np.int64]

EXACT = "divisible-exact"
LOWER_BOUND = "lower-bound"


@dataclass(frozen=True)
class MinOccupied:
    nodes: int
    exact: bool

    @property
    def method(self) -> str:
        return EXACT if self.exact else LOWER_BOUND


@dataclass(frozen=True)
class Fragmentation:
    resource: str
    providing_nodes: int
    occupied_nodes: int
    min_occupied_nodes: int
    min_exact: bool
    allocated: float  # user units (cards)
    allocatable: float

    @property
    def percent(self) -> float:
        if self.providing_nodes == 0:
            return 0.0
        return 100.0 * (self.occupied_nodes - self.min_occupied_nodes) / self.providing_nodes

    @property
    def min_method(self) -> str:
        return EXACT if self.min_exact else LOWER_BOUND


def _is_divisible_chain(sizes: list[int]) -> bool:
    """Each distinct size divides the next larger one (1, 2, 4, 8 ... or 1, 3, 6 ...)."""
    return all(b % a == 0 for a, b in itertools.pairwise(sizes))


def _exact_identical_divisible(capacity: int, sizes: I64) -> int:
    """Optimal bin count for identical bins and a divisible chain of item sizes.

    First-fit-decreasing is optimal here (Coffman, Garey & Johnson 1987).  Its bin count is
    computed without placing items: while packing size s, an open bin can take
    floor(residual / s) more items, and placing an item of size s anywhere lowers
    sum(floor(residual / t)) by exactly s / t for every smaller size t (t divides s).
    So tracking that sum per size suffices: O(k^2) in the number of distinct sizes.
    """
    distinct, counts = np.unique(sizes, return_counts=True)
    order = list(range(len(distinct) - 1, -1, -1))  # largest first
    slots = {int(distinct[k]): 0 for k in order}
    bins = 0
    for k in order:
        s, n = int(distinct[k]), int(counts[k])
        missing = n - slots[s]
        if missing > 0:
            per_bin = capacity // s
            new = -(-missing // per_bin)
            bins += new
            for t in slots:
                slots[t] += new * (capacity // t)
        for t in slots:
            if t <= s:
                slots[t] -= n * (s // t)
    return bins


def _lower_bound(capacities: I64, sizes: I64) -> int:
    """A valid lower bound for arbitrary capacities.

    * volume: a node can hold at most its capacity rounded down to a multiple of g, the gcd
      of all sizes (every load is a sum of sizes); take the fewest largest nodes whose
      rounded capacities cover the total;
    * large items: two items larger than half the largest capacity never share a node.
    """
    g = reduce(math.gcd, (int(s) for s in np.unique(sizes)))
    usable = np.sort((capacities // g) * g)[::-1]
    total = int(sizes.sum())
    cumulative = np.cumsum(usable)
    volume = int(np.searchsorted(cumulative, total, side="left")) + 1
    volume = min(volume, len(usable))
    large = int(np.count_nonzero(2 * sizes > int(usable[0])))
    return max(volume, large)


def min_occupied_nodes(capacities: I64, sizes: I64) -> MinOccupied:
    """Theoretical minimum number of nodes holding ``sizes`` given node ``capacities``.

    Exact when every providing node has the same capacity and the item sizes form a
    divisible chain (power-of-two card counts on identical nodes); otherwise a lower bound
    that never exceeds the optimum, so the rate is never overstated.
    """
    sizes = sizes[sizes > 0]
    if sizes.size == 0:
        return MinOccupied(0, True)
    capacities = capacities[capacities > 0]
    distinct = [int(s) for s in np.unique(sizes)]
    if (
        capacities.size
        and int(capacities.min()) == int(capacities.max())
        and distinct[-1] <= int(capacities[0])
        and _is_divisible_chain(distinct)
    ):
        return MinOccupied(_exact_identical_divisible(int(capacities[0]), sizes), True)
    return MinOccupied(_lower_bound(capacities, sizes), False)


def fragmentation(
    state: ClusterState, resource: str, *, task_node: npt.NDArray[np.int32] | None = None
) -> Fragmentation:
    """Fragmentation of ``resource``; ``task_node`` overrides placements (a plan's simulated state)."""
    if not state.has_resource(resource):
        return Fragmentation(resource, 0, 0, 0, True, 0.0, 0.0)
    r = state.resource(resource)
    alloc = state.node_alloc[:, r]
    providing = alloc > TOLERANCE
    nodes = state.task_node if task_node is None else task_node
    holds = goal_tasks(state, r, nodes)
    on_node = nodes[holds]
    occupied = int(np.count_nonzero(providing & holding_nodes(state, r, nodes)))
    sizes = np.rint(state.task_req[holds, r][providing[on_node]]).astype(np.int64)
    capacities = np.rint(alloc[providing]).astype(np.int64)
    minimum = min_occupied_nodes(capacities, sizes)
    # The current placement is itself a packing, so the optimum never exceeds it.
    min_nodes = min(minimum.nodes, occupied)
    return Fragmentation(
        resource=resource,
        providing_nodes=int(np.count_nonzero(providing)),
        occupied_nodes=occupied,
        min_occupied_nodes=min_nodes,
        min_exact=minimum.exact,
        allocated=to_user_units(resource, float(sizes.sum())),
        allocatable=to_user_units(resource, float(alloc[providing].sum())),
    )


def goal_resources(state: ClusterState) -> list[str]:
    """Scalar resources some node provides: the default set Evaluate reports."""
    out = []
    for i, name in enumerate(state.resources):
        if is_goal_resource(name) and bool((state.node_alloc[:, i] > TOLERANCE).any()):
            out.append(name)
    return out
