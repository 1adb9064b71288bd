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

from sidecar.snapshot.decode import Limits

MIB = 1024 * 1024
#: the estimate's terms, measured on synthetic snapshots (bench/memory.py): decoded columns and the
#: planner's working copies per node and per task, and one float per (node or task) x resource
BASE_BYTES = 4 * MIB
NODE_BYTES = 8 * 1024
TASK_BYTES = 512
CELL_BYTES = 16


def estimated_bytes(nodes: int, tasks: int, resources: int) -> int:
    """Peak working memory of decoding and planning a snapshot of this size, on the safe side."""
    return BASE_BYTES + nodes * NODE_BYTES + tasks * TASK_BYTES + (nodes + tasks) * resources * CELL_BYTES


class Overloaded(Exception):
    """The service cannot take the request now (RESOURCE_EXHAUSTED over gRPC, 503 on HTTP)."""


@dataclass(frozen=True)
class ServiceLimits:
    #: Snapshots beyond these are refused while decoding, before any work is spent on them.
    max_nodes: int = 100_000
    max_tasks: int = 2_000_000
    #: Default lifetime of a session; a request may ask for up to 10x.
    session_ttl_seconds: float = 120.0
    #: Sessions kept; the least recently used is dropped first.
    max_sessions: int = 8
    #: Estimated working memory of all requests being decoded or planned at once.
    memory_budget_mib: float = 1024.0
    #: How long a request waits for budget (within its deadline) before it is refused.
    admission_wait_seconds: float = 10.0

    def decode_limits(self) -> Limits:
        return Limits(max_nodes=self.max_nodes, max_tasks=self.max_tasks)


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
