"""Volcano's node accounting (NodeInfo.AddTask), the one ledger every check reads.

For each task placed on a node and not terminated (Succeeded/Failed):
Pipelined tasks add to ``pipelined`` only; every other status adds to ``used`` (and so
consumes ``idle``); Releasing tasks also add to ``releasing``.
``idle = allocatable - used`` and ``future_idle = idle + releasing - pipelined``: :func:`idle` and
:func:`future_idle`, the one Python form of each (the kernels' is ``future_idle`` in
``ext/volcano.pxd``, the same sums in the same order).

Binding tasks are the one exception (volcano v1.14.1 pkg/scheduler/api/node_info.go, AddTask):
a Binding task whose request does not fit the node's Idle at the moment it is added
(``Resreq.LessEqualWithResourcesName(Idle, Zero)``: cpu, memory and pods always -- every task
requests ``pods: 1`` -- and every other scalar the task requests, 0.1 tolerance) is refused and
not counted at all. It lands in ``refused`` and the Simulation treats it as not on its node.
Volcano adds a node's tasks in Go map order, so which of several Binding tasks is refused is
random there; here the order is fixed: every non-Binding task first, then the Binding tasks in
snapshot order, each checked against the Idle left by everything added before it (a documented
difference).

The hot loop has a Cython kernel (``ext/ledger.pyx``); :func:`accumulate_reference` is its
readable specification and the fallback when the extension is not built (it serves as both the
twin and the vectorised form; :mod:`sidecar.dispatch` picks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.snapshot.taskstatus import BINDING, PIPELINED, RELEASING, TERMINATED_MASK
from sidecar.snapshot.units import CPU, MEMORY, PODS, TOLERANCE, less_equal

F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
I8 = npt.NDArray[np.int8]
U8 = npt.NDArray[np.uint8]

#: how the Binding fit check treats a resource column: always (cpu, memory, pods), or only when
#: the task requests it (every other scalar; Volcano walks the task's ScalarResources). The
#: kernel also skips a column of rule 0, which no column has had since Volcano v1.14 counts pods.
FIT_ALWAYS, FIT_IF_REQUESTED = 1, 2

Kernel = Callable[[I32, I32, F64, F64, F64, F64, F64, U8, I8, int, int, int, int, float], None]


@dataclass(frozen=True)
class NodeLedger:
    used: F64  # [N, R]
    releasing: F64
    pipelined: F64
    idle: F64
    future_idle: F64
    refused: npt.NDArray[np.bool_]  # [T] Binding tasks AddTask refused: counted nowhere


def idle(alloc: F64, used: F64) -> F64:
    """Volcano's ``Idle``: allocatable minus used (rows or whole matrices)."""
    out: F64 = alloc - used
    return out


def future_idle(idle: F64, releasing: F64, pipelined: F64) -> F64:
    """Volcano's ``FutureIdle``: ``(Idle + Releasing) - Pipelined``, summed in that order."""
    out: F64 = idle + releasing - pipelined
    return out


def fit_rule(resources: Sequence[str]) -> I8:
    """Per resource column, which FIT_* rule the Binding check applies."""
    rule = {CPU: FIT_ALWAYS, MEMORY: FIT_ALWAYS, PODS: FIT_ALWAYS}  # every task requests pods: 1
    return np.array([rule.get(r, FIT_IF_REQUESTED) for r in resources], np.int8)


def accumulate_reference(
    task_node: I32,
    task_status: I32,
    task_req: F64,
    alloc: F64,
    used: F64,
    releasing: F64,
    pipelined: F64,
    refused: U8,
    rule: I8,
    pipelined_flag: int,
    releasing_flag: int,
    binding_flag: int,
    terminated_mask: int,
    tolerance: float,
) -> None:
    """numpy twin of the kernel: add each task's request to its node's columns in place;
    Binding tasks last, in order, each refused (``refused[t] = 1``) if it does not fit Idle."""
    on_node = (task_node >= 0) & ((task_status & terminated_mask) == 0)
    is_pipe = on_node & (task_status == pipelined_flag)
    is_bind = on_node & (task_status == binding_flag)
    is_used = on_node & ~is_pipe & ~is_bind
    is_rel = is_used & (task_status == releasing_flag)
    np.add.at(used, task_node[is_used], task_req[is_used])
    np.add.at(releasing, task_node[is_rel], task_req[is_rel])
    np.add.at(pipelined, task_node[is_pipe], task_req[is_pipe])
    for t in np.flatnonzero(is_bind):
        node, req = task_node[t], task_req[t]
        checked = (rule == FIT_ALWAYS) | ((rule == FIT_IF_REQUESTED) & (req > 0))
        if (~less_equal(req, idle(alloc[node], used[node]), tolerance) & checked).any():
            refused[t] = 1
        else:
            used[node] += req


_K = dispatch.load("sidecar.snapshot._ledger")


def build_ledger(
    task_node: I32, task_status: I32, task_req: F64, alloc: F64, resources: Sequence[str] | None = None
) -> NodeLedger:
    """Accumulate the ledger for ``alloc.shape[0]`` nodes from the task columns. ``resources``
    names the columns (default: cpu, memory, then scalars)."""
    n, r = alloc.shape
    used = np.zeros((n, r))
    releasing = np.zeros((n, r))
    pipelined = np.zeros((n, r))
    refused = np.zeros(len(task_node), np.uint8)
    names = list(resources) if resources is not None else [CPU, MEMORY, *(f"scalar-{i}" for i in range(2, r))][:r]
    rule = fit_rule(names)
    fn: Kernel = _K.accumulate if dispatch.mode(_K) == "kernel" else accumulate_reference
    fn(
        np.ascontiguousarray(task_node, np.int32),
        np.ascontiguousarray(task_status, np.int32),
        np.ascontiguousarray(task_req, np.float64),
        np.ascontiguousarray(alloc, np.float64),
        used,
        releasing,
        pipelined,
        refused,
        rule,
        PIPELINED,
        RELEASING,
        BINDING,
        TERMINATED_MASK,
        TOLERANCE,
    )
    free = idle(alloc, used)
    return NodeLedger(used, releasing, pipelined, free, future_idle(free, releasing, pipelined), refused.astype(bool))
