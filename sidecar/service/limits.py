"""The service's own limits; each front door builds them from its flags (the server from ``serve``'s).

Besides the size limits, a memory budget: every request that decodes or plans is admitted by its
*estimated* working memory (nodes, tasks and resource names), not by a flat count, so a few
10k-node Plans cannot take the process past its container limit while small requests still flow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sidecar.api.v1alpha1 import snapshot_pb2
from sidecar.service.deadline import DeadlineExceeded
from sidecar.snapshot.decode import Limits
from sidecar.snapshot.state import ClusterState

MIB = 1024 * 1024
#: the estimate's terms: decoded columns and the planner's working copies per node and per task, and
#: a float or two per (node or task) x resource. Calibrated on the server's peak RSS (bench/memory.py:
#: ~150 MiB per concurrent 10k-node/100k-task Plan, estimated 169 MiB) and on decoding alone.
BASE_BYTES = 4 * MIB
NODE_BYTES = 10 * 1024
TASK_BYTES = 640
CELL_BYTES = 16


def estimated_bytes(nodes: int, tasks: int, resources: int) -> int:
    """Peak working memory of decoding and planning a snapshot of this size, on the safe side."""
    return BASE_BYTES + nodes * NODE_BYTES + tasks * TASK_BYTES + (nodes + tasks) * resources * CELL_BYTES


def snapshot_cost(snapshot: snapshot_pb2.Snapshot) -> int:
    """``estimated_bytes`` of a snapshot as it arrived, before any decoding: the longest task column
    counts (a malformed one is refused later, by the decoder) and every distinct resource name."""
    columns = snapshot.task_columns
    lengths = [len(getattr(columns, name)) for name in _TASK_COLUMNS]
    lengths += [len(column.values) for column in columns.requests]
    resources = {column.resource for column in columns.requests}
    for node in snapshot.nodes:
        resources.update(node.allocatable)
    for task in snapshot.tasks:
        resources.update(task.requests)
    return estimated_bytes(len(snapshot.nodes), len(snapshot.tasks) + max(lengths), len(resources))


def state_cost(state: ClusterState) -> int:
    """``estimated_bytes`` of planning on a decoded state (a session)."""
    return estimated_bytes(state.n_nodes, state.n_tasks, len(state.resources))


_TASK_COLUMNS = (
    "uid", "name", "namespace", "node", "status", "pod_group", "priority", "profile", "role", "nonzero_cpu",
    "nonzero_memory",
)  # fmt: skip


class Overloaded(DeadlineExceeded):
    """The service cannot take the request now: RESOURCE_EXHAUSTED over gRPC. A kind of "not in
    time", so a front door that knows only DeadlineExceeded (the extender's 503) answers it right."""


@dataclass(frozen=True)
class ServiceLimits:
    #: Snapshots beyond these are refused while decoding, before any work is spent on them
    #: (defaults: the decoder's own, ``snapshot.decode.Limits``).
    max_nodes: int = Limits.max_nodes
    max_tasks: int = Limits.max_tasks
    #: Default lifetime of a session; a request may ask for up to 10x.
    session_ttl_seconds: float = 120.0
    #: Sessions kept; the least recently used is dropped first.
    max_sessions: int = 8
    #: Estimated working memory of all requests being decoded or planned at once (None: no budget,
    #: as on the command line; the server's default is ServerConfig.memory_budget_mib).
    memory_budget_mib: float | None = None
    #: How long a request waits for budget (within its deadline) before it is refused.
    admission_wait_seconds: float = 10.0

    def decode_limits(self) -> Limits:
        return Limits(max_nodes=self.max_nodes, max_tasks=self.max_tasks)

    def budget(self) -> MemoryBudget | None:
        if self.memory_budget_mib is None:
            return None
        return MemoryBudget(int(self.memory_budget_mib * MIB), self.admission_wait_seconds)


class MemoryBudget:
    """A weighted semaphore over bytes. A request larger than the whole budget is refused at once;
    one that fits waits (checking ``stop`` between short sleeps) until the bytes are free."""

    FLAG = "--memory-budget-mib"

    def __init__(self, total_bytes: int, wait_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total_bytes
        self.wait_seconds = wait_seconds
        self.used = 0
        self._clock = clock
        self._cond = threading.Condition()

    @contextmanager
    def admit(self, cost: int, stop: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Hold ``cost`` bytes for the block. ``stop`` is called while waiting and may raise (a deadline)."""
        if cost > self.total:
            raise Overloaded(
                f"request needs an estimated {cost / MIB:.0f} MiB of working memory, over the whole budget of "
                f"{self.total / MIB:.0f} MiB: send a smaller snapshot or raise {self.FLAG}"
            )
        give_up = self._clock() + self.wait_seconds
        with self._cond:
            while self.used + cost > self.total:
                stop()
                left = give_up - self._clock()
                if left <= 0:
                    raise Overloaded(
                        f"memory budget busy: {self.used / MIB:.0f} of {self.total / MIB:.0f} MiB in use and this "
                        f"request needs ~{cost / MIB:.0f} MiB; retry later or raise {self.FLAG}"
                    )
                self._cond.wait(min(left, 0.1))
            self.used += cost
        try:
            yield
        finally:
            with self._cond:
                self.used -= cost
                self._cond.notify_all()
