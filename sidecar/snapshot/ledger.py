"""Volcano's node accounting (NodeInfo.AddTask), the one ledger every check reads.

For each task placed on a node and not terminated (Succeeded/Failed):
Pipelined tasks add to ``pipelined`` only; every other status adds to ``used`` (and so
consumes ``idle``); Releasing tasks also add to ``releasing``.
``idle = allocatable - used`` and ``future_idle = idle + releasing - pipelined``.

The hot loop has a Cython kernel (``ext/ledger.pyx``); :func:`accumulate_reference` is its
readable specification and the fallback when the extension is not built (it serves as both the
twin and the vectorised form; :mod:`sidecar.dispatch` picks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.snapshot.taskstatus import PIPELINED, RELEASING, TERMINATED_MASK

F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]

Kernel = Callable[[I32, I32, F64, F64, F64, F64, int, int, int], None]


@dataclass(frozen=True)
class NodeLedger:
    used: F64  # [N, R]
    releasing: F64
    pipelined: F64
    idle: F64
    future_idle: F64


def accumulate_reference(
    task_node: I32,
    task_status: I32,
    task_req: F64,
    used: F64,
    releasing: F64,
    pipelined: F64,
    pipelined_flag: int,
    releasing_flag: int,
    terminated_mask: int,
) -> None:
    """numpy twin of the kernel: add each task's request to its node's columns in place."""
    on_node = (task_node >= 0) & ((task_status & terminated_mask) == 0)
    is_pipe = on_node & (task_status == pipelined_flag)
    is_used = on_node & ~is_pipe
    is_rel = is_used & (task_status == releasing_flag)
    np.add.at(used, task_node[is_used], task_req[is_used])
    np.add.at(releasing, task_node[is_rel], task_req[is_rel])
    np.add.at(pipelined, task_node[is_pipe], task_req[is_pipe])


_K = dispatch.load("sidecar.snapshot._ledger")


def build_ledger(task_node: I32, task_status: I32, task_req: F64, alloc: F64) -> NodeLedger:
    """Accumulate the ledger for ``alloc.shape[0]`` nodes from the task columns."""
    n, r = alloc.shape
    used = np.zeros((n, r))
    releasing = np.zeros((n, r))
    pipelined = np.zeros((n, r))
    fn: Kernel = _K.accumulate if dispatch.mode(_K) == "kernel" else accumulate_reference
    fn(task_node, task_status, task_req, used, releasing, pipelined, PIPELINED, RELEASING, TERMINATED_MASK)
    idle = alloc - used
    return NodeLedger(used, releasing, pipelined, idle, idle + releasing - pipelined)
