"""Placing one candidate's pods: a depth-first search over receivers, bounded by a budget.

Pods go in placement order (largest first), each to its feasible receivers best first (the key
of receivers.py), on the state that holds the earlier pods' placements; a pod with no receiver
sends the search back to the previous pod's next receiver. Every receiver tried spends one unit of
PLACEMENT_BUDGET; once it is spent the candidate fails.

Two forms of the one search:

* :class:`Search` -- any pod: feasibility is the mirror's full Filter on the Simulation (affinity,
  spread and host ports read where other pods sit), placements are Simulation moves.
* :func:`place_pods` -- pods whose pod-level checks are all domain rules (topology spread,
  required anti-affinity: :mod:`sidecar.mirror.domainrules`) or none: feasibility then depends on
  the moving pods' own rows and a few per-domain counts, so the whole search runs in one pass of
  the Cython kernel ``ext/receivers.pyx`` over the ledger arrays, overlaying the rows of nodes it
  places on and counting its placements per rule, writing nothing the caller owns.
  :mod:`sidecar.repack.nodelevel` binds it to a planning loop for every candidate whose pods are
  all such pods (pod affinity and host ports are not). Without the kernel the planner searches
  every candidate with :class:`Search`, so the loop that specifies the kernel never runs in
  production: it lives beside its test (tests/repack/reference_search.py).

tests/repack/test_search.py checks the kernel against that loop on random inputs, the kernel
against :class:`Search` on the same Simulation, and whole plans with and without the kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Subject
from sidecar.repack import receivers
from sidecar.repack.receivers import Receivers
from sidecar.snapshot.units import TOLERANCE

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Nodes = npt.NDArray[np.intp]

#: receiver choices tried per candidate before it is given up (backtracking bound)
PLACEMENT_BUDGET = 256


class Search:
    """The search for any pods, on the Simulation (which keeps the placements on success)."""

    def __init__(self, mirror: Mirror, sim: Simulation, receivers: Receivers, pods: Nodes) -> None:
        self.mirror, self.sim, self.receivers, self.pods = mirror, sim, receivers, pods
        self.budget = PLACEMENT_BUDGET
        self.targets: list[int] = []  # receiver of each pod placed so far
        self.stuck: list[Subject] = []  # pods that found no receiver at all

    def place(self, k: int) -> bool:
        """Place ``pods[k:]`` after ``pods[:k]`` went to ``targets``; the simulation keeps the
        placements on success and is as it was on failure."""
        if k == len(self.pods):
            return True
        t = int(self.pods[k])
        subj = self.mirror.subject_for_task(t)
        options = self.receivers.for_subject(subj)
        first = next(options, None)
        if first is None:
            self.stuck.append(subj)
            return False
        for target in itertools.chain((first,), options):
            if self.budget <= 0:
                return False
            self.budget -= 1
            cp = self.sim.checkpoint()
            self.sim.place(t, target)
            self.targets.append(target)
            if self.place(k + 1):
                return True
            self.sim.rollback(cp)
            self.targets.pop()
        return False


@dataclass(frozen=True, slots=True)
class PodsInput:
    """What the node-level search reads: the pods ([T, ...], placement order) and per node ([N])
    the ledger rows and the receiver state."""

    req: F64  # [T, R] requests
    fit: U8  # [T, R] 1 where LessEqual compares the dimension (NodeChecks.fit_mask)
    static_row: Nodes  # [T] each pod's row of static_ok
    static_ok: U8  # [S, N] node-only checks passed
    alloc: F64  # [N, R]
    used: F64  # [N, R]
    releasing: F64  # [N, R]
    pipelined: F64  # [N, R]
    future: F64  # [N, R] FutureIdle
    pod_count: I64
    pod_cap: F64
    allowed: U8  # rule 1
    stays: U8  # rule 2
    capacity: F64  # rule 3, first (ignored where stays)
    cost: F64  # rule 3, then (ignored where stays)
    rank: I64  # node-name rank
    goal: int
    budget: int = PLACEMENT_BUDGET
    rules: RulesInput | None = None  # the pods' domain rules (spread, anti-affinity)


@dataclass(frozen=True, slots=True)
class RulesInput:
    """The domain rules (:mod:`sidecar.mirror.domainrules`: topology spread, required
    anti-affinity) of one candidate's pods, R rules and T pods, counted on the Simulation with the
    candidate's pods evicted. Per rule its pods per domain (``counts[count_off[r]:count_off[r + 1]]``,
    scratch to the kernel, restored), each node's domain (-1: no key), the domains whose minimum
    the skew is measured from, the nodes whose pods count and the rule's numbers; per pod which
    rules count it (where it lands) and which rules it must satisfy."""

    counts: I64
    count_off: Nodes  # [R + 1]
    codes: npt.NDArray[np.int32]  # [K, N] domain codes of the loop's topology keys
    code_row: Nodes  # [R] each rule's row of codes
    domains: npt.NDArray[np.int32]
    domain_off: Nodes  # [R + 1]
    eligible: U8  # [E, N] distinct masks of nodes whose pods count
    eligible_row: Nodes  # [R] each rule's row of eligible
    self_match: I64  # [R] 1 when the pod counts in its own domain
    max_skew: I64  # [R]
    zero_min: U8  # [R] the minimum is 0
    missing_ok: U8  # [R] a node without the key passes
    member: U8  # [T, R]
    pod_rules: Nodes
    pod_rule_off: Nodes  # [T + 1] pod k satisfies rules pod_rules[pod_rule_off[k]:pod_rule_off[k + 1]]


def place_pods(inp: PodsInput, stuck: set[int] | None = None) -> list[int] | None:
    """The receivers of ``inp``'s pods, or None when the budget or the receivers run out (then
    ``stuck`` gets the positions of the pods that found no receiver at all at some point); the
    compiled kernel's search, which writes nothing the caller owns."""
    rules = dataclasses.replace(inp.rules, counts=inp.rules.counts.copy()) if inp.rules else None
    kernel = bind(inp, inp.req.shape[0])
    targets: list[int] | None = kernel.place(0, inp.req.shape[0], inp.budget, rules)
    if stuck is not None:
        stuck.update(kernel.stuck(inp.req.shape[0]))
    return targets


def bind(inp: PodsInput, max_pods: int) -> Any:
    """The kernel's search bound to ``inp``'s arrays (read live: later changes to them are seen),
    with scratch rows for up to ``max_pods`` pods."""
    n_res, rows = inp.future.shape[1], max(max_pods, 1)
    passing = inp.static_ok.astype(bool)
    static_bounds = np.zeros(passing.shape[0] + 1, np.intp)
    np.cumsum(passing.sum(axis=1), out=static_bounds[1:])
    k = receivers.kernel()
    assert k is not None, "bind needs the compiled _receivers kernel"
    return k.NodeSearch(
        inp.req,
        inp.fit,
        inp.static_row,
        np.nonzero(passing)[1].astype(np.intp),  # row-major: each row's nodes, ascending
        static_bounds,
        inp.alloc,
        inp.used,
        inp.releasing,
        inp.pipelined,
        inp.future,
        inp.pod_count,
        inp.pod_cap,
        inp.allowed,
        inp.stays,
        inp.capacity,
        inp.cost,
        inp.rank,
        inp.goal,
        TOLERANCE,
        np.full(inp.future.shape[0], -1, np.intp),
        np.empty((rows, n_res)),
        np.empty((rows, n_res)),
        np.empty(rows, np.int64),
        np.empty(rows, np.intp),
        np.empty(rows, np.intp),
    )
