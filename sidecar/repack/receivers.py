"""Where a leaving pod goes: the guide's receiver rules ("Filling Receiving Nodes").

Rule 1, which nodes may receive at all, is :attr:`Receivers.allowed`: never a node being emptied
or already freed, never a node whose goal resource is idle (re-lighting it only moves the
fragment): only nodes that hold it (:func:`sidecar.snapshot.holding.holding_nodes`, the definition
fragmentation and Execute read too). Rules 2-4 order the feasible allowed receivers by one key, smallest first::

    (not stays[n], -capacity[n], -cost[n], free[n, goal] - req[goal], rank[n])
                                        with capacity[n] = cost[n] = 0 where stays[n]

that is: nodes that stay occupied anyway (unmovable pods, out of scope, a PodDisruptionBudget
forbids emptying them, already receiving) first (rule 2); then, among the nodes that may still be
emptied later, those that will cost more to empty later (rule 3), measured first by what the node
can hold -- its goal capacity: a larger node keeps more pods, and the fragmentation minimum keeps
the largest nodes occupied, so filling a large node and reserving a small one is what keeps the
distribution compact -- then by a candidate's weighted marginal interruption cost of emptying it
on top of the plan so far and the candidate being emptied (kept current by the candidate table; 0
for a node that is no candidate); then, among nodes of the same type, the least goal capacity
left after the move (rule 4); then node name (``rank``). Measured on the churned multi-GPU trace
(bench.report): ordering rule 3 by interruption cost alone filled 70 two-card nodes and emptied
eight-card ones, 476 nodes freed against a plain first-fit drain's 513; by capacity first, 518.

The key is written once in Python, :func:`key_columns` (:func:`order` sorts by them; the reference
loops in tests/repack take one node's), and once for the kernels, ``receiver_after`` in ``ext/volcano.pxd``. Three forms
of the first choice must agree (tests/repack/test_receivers.py): the loop that specifies it
(tests/repack/reference_receivers.py: production never runs it); :func:`order`, the numpy order
the planner walks; and the Cython kernel ``ext/receivers.pyx`` behind :func:`best_receiver`,
which finds the first choice of a pod with node-level constraints only in one pass over the nodes.
:mod:`sidecar.dispatch` picks the implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.mirror import kernels
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import S_OK, Subject
from sidecar.snapshot.holding import holding_nodes
from sidecar.snapshot.units import TOLERANCE, less_equal

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bools = npt.NDArray[np.bool_]
Nodes = npt.NDArray[np.intp]

_K = dispatch.load("sidecar.repack._receivers")


def available() -> bool:
    return _K is not None


def kernel() -> Any | None:
    """The compiled ``_receivers`` module while it is in use, else None: the one place it is loaded
    (``search`` binds its NodeSearch through here)."""
    return _K if dispatch.mode(_K) == "kernel" else None


# -- the key, three ways ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiverInput:
    """What the first choice reads: one pod's request and, per node ([N]), its state."""

    req: F64  # [R] the pod's request
    dims: Nodes  # dimensions LessEqual compares (Predicates.fit_dims)
    free: F64  # [N, R] FutureIdle
    pod_count: I64  # pods on the node
    pod_cap: F64  # allocatable pods
    static_ok: U8  # node-only checks passed
    allowed: U8  # rule 1
    stays: U8  # rule 2
    capacity: F64  # rule 3, first: the goal resource's allocatable (ignored where stays)
    cost: F64  # rule 3, then (ignored where stays)
    rank: I64  # node-name rank
    goal: int  # the goal resource's column


Columns = tuple[Bools, F64, F64, F64, I64]


def key_columns(stays: Bools, capacity: F64, cost: F64, left: F64, rank: I64) -> Columns:
    """The module docstring's key, per node, as columns most significant first (smaller is
    better): not staying (rule 2), minus the goal capacity and minus the cost, both 0 where the
    node stays (rule 3), the goal capacity ``left`` after the move (rule 4), the name rank."""
    return (~stays, -np.where(stays, 0.0, capacity), -np.where(stays, 0.0, cost), left, rank)


def order(nodes: Nodes, stays: Bools, capacity: F64, cost: F64, left: F64, rank: I64) -> Iterator[int]:
    """``nodes`` in the key's order (numpy). ``left`` (goal capacity left after the move) is
    aligned with ``nodes``; ``stays``, ``capacity``, ``cost`` and ``rank`` are per node. The first
    choice is found without sorting (it is usually taken); the full order only when more is asked
    for."""
    if nodes.size == 0:
        return
    columns = key_columns(stays[nodes], capacity[nodes], cost[nodes], left, rank[nodes])
    pick = np.arange(nodes.size)
    for column in columns[:-1]:  # the smallest key: column by column, the ties of the last
        values = column[pick]
        pick = pick[values == values.min()]
    first = int(pick[np.argmin(columns[-1][pick])])
    yield int(nodes[first])
    for k in np.lexsort(columns[::-1]):
        if k != first:
            yield int(nodes[k])


def best_receiver_vectorised(inp: ReceiverInput) -> int:
    """The first choice from numpy: among allowed nodes that pass the node-only checks, the pod
    count and resource fit, :func:`order`'s first; -1 if none."""
    ok = inp.allowed.astype(bool) & inp.static_ok.astype(bool) & (inp.pod_count < inp.pod_cap)
    if inp.dims.size:
        ok &= less_equal(inp.req[inp.dims][None, :], inp.free[:, inp.dims]).all(axis=1)
    nodes = np.flatnonzero(ok)
    left = inp.free[nodes, inp.goal] - inp.req[inp.goal]
    return next(order(nodes, inp.stays.astype(bool), inp.capacity, inp.cost, left, inp.rank), -1)


def kernel_in_use() -> bool:
    """The planner takes its one-pass fast path only with the compiled kernel; otherwise it walks
    :func:`order` over the mirror's Filter (the loop that specifies the kernel is far too slow)."""
    return kernel() is not None


def best_receiver(inp: ReceiverInput) -> int:
    if dispatch.mode(_K) != "kernel":
        return best_receiver_vectorised(inp)
    c = np.ascontiguousarray
    return int(
        _K.best_receiver(
            c(inp.req),
            c(inp.dims),
            c(inp.free),
            c(inp.pod_count),
            c(inp.pod_cap),
            c(inp.static_ok),
            c(inp.allowed),
            c(inp.stays),
            c(inp.capacity),
            c(inp.cost),
            c(inp.rank),
            inp.goal,
            TOLERANCE,
        )
    )


# -- the planner's receiver state ------------------------------------------------------------------


class Receivers:
    """Per-node receiver state of one planning loop (every array is indexed by node)."""

    def __init__(self, mirror: Mirror, sim: Simulation, goal: int, stays: Bools, cost: F64, rank: I64) -> None:
        self.mirror, self.sim, self.goal = mirror, sim, goal
        #: rule 1: the nodes holding the goal resource in the snapshot; a node leaves the set when
        #: it is emptied, and only then
        self.allowed: Bools = holding_nodes(mirror.state, goal)
        #: rule 2: will stay occupied (unmovable pods, out of scope, a PDB, or receiving in this plan)
        self.stays = stays
        #: rule 3, first: what the node can hold of the goal resource
        self.capacity: F64 = np.ascontiguousarray(mirror.state.node_alloc[:, goal])
        #: rule 3, then: marginal cost of emptying the node on top of the plan so far (0 for
        #: non-candidates); the candidate table's array, updated in place (CandidateTable.trial)
        self.cost = cost
        self.rank = rank  # node-name rank
        self.pod_cap = mirror.predicates.pod_cap
        self._static_rows: dict[int, U8] = {}

    def exclude(self, node: int) -> bool:
        """Rule 1 while ``node`` is being emptied: it receives nothing. Returns its standing
        before, for :meth:`restore` when the try fails."""
        was = bool(self.allowed[node])
        self.allowed[node] = False
        return was

    def restore(self, node: int, was: bool) -> None:
        """The try that excluded ``node`` failed: it takes back its rule-1 standing."""
        self.allowed[node] = was

    def mark_stays(self, nodes: list[int]) -> None:
        """Rule 2: ``nodes`` received pods in this plan, so they stay occupied."""
        self.stays[nodes] = True

    def for_subject(self, subj: Subject) -> Iterator[int]:
        """Feasible receivers for one pod, best first. A pod with node-level constraints only gets
        its first choice from the Cython kernel in one pass; the full order, and every pod with
        affinity, spread or ports, comes from the mirror's Filter and :func:`order`."""
        sim, g, p = self.sim, self.goal, self.mirror.predicates
        req = float(self.mirror.state.task_req[subj.task, g]) if subj.task is not None else float(subj.req[g])
        first = -1
        if kernel_in_use() and not subj.unknown_resources and not p.pod_level(subj):
            first = best_receiver(
                ReceiverInput(
                    subj.req,
                    p.fit_dims(subj.req),
                    sim.future_idle(),
                    sim.pod_count,
                    self.pod_cap,
                    self._static_u8(subj),
                    self.allowed.view(np.uint8),
                    self.stays.view(np.uint8),
                    self.capacity,
                    self.cost,
                    self.rank,
                    g,
                )
            )
            if first < 0:
                return
            yield first
        # Only allowed receivers with room for the goal resource that pass the node-only checks
        # can pass; check just those.
        near = np.flatnonzero(self.allowed & less_equal(req, sim.future_idle()[:, g]) & self._static_bool(subj))
        nodes = p.feasible_nodes(subj, sim, near)
        left = sim.future_idle()[nodes, g] - req
        for target in order(nodes, self.stays, self.capacity, self.cost, left, self.rank):
            if target != first:
                yield target

    def _static_bool(self, subj: Subject) -> Bools:
        row: Bools = self._static_u8(subj).view(np.bool_)
        return row

    def _static_u8(self, subj: Subject) -> U8:
        key = subj.profile_index if subj.profile_index is not None else -1
        row = self._static_rows.get(key)
        if row is None:
            static = self.mirror.predicates.static(subj.profile, profile_index=subj.profile_index)
            row = (static.code == S_OK).astype(np.uint8)
            if key >= 0:
                self._static_rows[key] = row
        return row

    def node_checks_pass(self, subj: Subject) -> bool:
        """Would some allowed receiver take the pod if pod-level constraints were ignored? (False
        for a pod without pod-level constraints: nothing to ignore.)"""
        p, sim = self.mirror.predicates, self.sim
        if not p.pod_level(subj):
            return False
        fits = kernels.first_insufficient(subj.req, sim.future_idle(), p.fit_dims(subj.req)) < 0
        room = sim.pod_count < p.pod_cap
        static_ok = p.static(subj.profile, profile_index=subj.profile_index).code == S_OK
        return bool((fits & room & static_ok & self.allowed).any())
