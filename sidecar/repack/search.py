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
  :func:`place_pods_twin` is the loop that specifies it; :mod:`sidecar.repack.nodelevel` binds it
  to a planning loop for every candidate whose pods are all such pods (pod affinity and host
  ports are not).

tests/repack/test_search.py checks the kernel against the twin on random inputs, the twin against
:class:`Search` on the same Simulation, and whole plans with and without the kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.mirror.core import Mirror
from sidecar.mirror.domaincount import domain_min, too_skewed
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Subject
from sidecar.repack import receivers
from sidecar.repack.receivers import Key, Receivers, key
from sidecar.snapshot.ledger import future_idle, idle
from sidecar.snapshot.units import TOLERANCE, less_equal

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


def place_pods_twin(inp: PodsInput, stuck: set[int] | None = None) -> list[int] | None:
    """The search as a plain loop (the specification): each pod's receivers are the allowed nodes
    passing its node-only checks, pod count and resource fit on the rows as earlier placements
    left them, taken in key order; a placement adds the request to the node's Used and recomputes
    FutureIdle exactly as the Simulation does. The receivers, or None when the budget or the
    receivers run out. With ``rules``, a node must also give each of the pod's rules a domain
    (or lack the key where the rule allows it) with skew -- its count, plus the pod when it counts
    in its own domain, minus the rule's minimum over its domains -- within maxSkew; a placement
    counts for every rule counting the pod whose nodes count there. The inputs are left as they
    were; ``stuck`` collects the pods (positions) that found no receiver at all at some point."""
    overlay: dict[int, list[tuple[F64, F64, int]]] = {}  # node -> (used, future, count) per placement
    sp = inp.rules
    counts = [sp.counts[sp.count_off[r] : sp.count_off[r + 1]].copy() for r in range(sp.self_match.size)] if sp else []

    def rules_ok(k: int, n: int) -> bool:
        if sp is None:
            return True
        for r in sp.pod_rules[sp.pod_rule_off[k] : sp.pod_rule_off[k + 1]].tolist():
            code = int(sp.codes[sp.code_row[r], n])
            if code < 0:
                if sp.missing_ok[r]:
                    continue
                return False
            low = domain_min(counts[r], sp.domains[sp.domain_off[r] : sp.domain_off[r + 1]], bool(sp.zero_min[r]))
            if too_skewed(int(counts[r][code]), int(sp.self_match[r]), low, int(sp.max_skew[r])):
                return False
        return True

    def tally(k: int, n: int, by: int) -> None:
        if sp is None:
            return
        for r in range(len(counts)):
            code = int(sp.codes[int(sp.code_row[r]), n])
            if sp.member[k, r] and sp.eligible[int(sp.eligible_row[r]), n] and code >= 0:
                counts[r][code] += by

    def rows(n: int) -> tuple[F64, F64, int]:
        stack = overlay.get(n)
        return stack[-1] if stack else (inp.used[n], inp.future[n], int(inp.pod_count[n]))

    def node_key(k: int, n: int) -> Key:
        left = float(rows(n)[1][inp.goal] - inp.req[k, inp.goal])
        return key(bool(inp.stays[n]), float(inp.capacity[n]), float(inp.cost[n]), left, int(inp.rank[n]))

    def feasible(k: int, n: int) -> bool:
        _, future, count = rows(n)
        if not inp.allowed[n] or not inp.static_ok[inp.static_row[k], n] or count >= inp.pod_cap[n]:
            return False
        dims = np.flatnonzero(inp.fit[k])
        return all(less_equal(float(inp.req[k, d]), float(future[d])) for d in dims) and rules_ok(k, n)

    n_pods, budget = inp.req.shape[0], inp.budget
    targets: list[int] = []
    last: Key | None = None  # key of the receiver just undone at this level
    while len(targets) < n_pods:
        k = len(targets)
        keyed = [(node_key(k, n), n) for n in range(inp.future.shape[0]) if feasible(k, n)]
        later = [kn for kn in keyed if last is None or kn[0] > last]
        if not keyed and last is None and stuck is not None:
            stuck.add(k)
        if not later or budget <= 0:
            if k == 0:
                return None
            n = targets.pop()
            overlay[n].pop()
            tally(k - 1, n, -1)
            last = node_key(k - 1, n)
            continue
        budget -= 1
        _, n = min(later)
        used, _, count = rows(n)
        used = used + inp.req[k]
        future = future_idle(idle(inp.alloc[n], used), inp.releasing[n], inp.pipelined[n])
        overlay.setdefault(n, []).append((used, future, count + 1))
        tally(k, n, 1)
        targets.append(n)
        last = None
    return targets


def place_pods(inp: PodsInput, stuck: set[int] | None = None) -> list[int] | None:
    """:func:`place_pods_twin`'s answer, from the kernel when it is built."""
    if not receivers.kernel_in_use():
        return place_pods_twin(inp, stuck)
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
