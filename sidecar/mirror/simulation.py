"""A Volcano Statement on the columnar state: tentative moves, exact rollback.

Every change records the node rows it touches before touching them, so ``rollback`` restores
the ledger bit for bit (no float subtraction drift), and a later check sees every earlier
tentative move. ``version`` changes with every mutation; derived caches key on it.

A Binding task the ledger refused (it did not fit its node's Idle, see
:mod:`sidecar.snapshot.ledger`) is treated as not on its node, as Volcano's NodeInfo has it: it
holds no resources, pod slot or host ports there and no affinity or spread rule counts it.
``node_of`` still names the snapshot's node, so ``remove`` takes it off (changing nothing on the
node) and ``place`` can put it somewhere else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.mirror import kernels
from sidecar.snapshot.ledger import future_idle, idle
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import ALLOCATED, PIPELINED, RELEASING, TERMINATED_MASK

F64 = npt.NDArray[np.float64]


PortKey = tuple[str, int, str]  # protocol, port, host ip ("" = every address)


@dataclass
class _Undo:
    task: int
    node_of: int
    status: int
    on_node: bool
    rows: list[tuple[int, F64, F64, F64, int]]  # node, used, releasing, pipelined rows, pod count
    ports: list[tuple[int, Counter[PortKey]]]


class Simulation:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.node_of = state.task_node.copy()
        self.status = state.task_status.copy()
        led = state.ledger
        self.used = led.used.copy()
        self.releasing = led.releasing.copy()
        self.pipelined = led.pipelined.copy()
        on_node = (self.node_of >= 0) & ((self.status & TERMINATED_MASK) == 0) & ~led.refused
        self.pod_count = np.bincount(self.node_of[on_node], minlength=state.n_nodes).astype(np.int64)
        self._ports: dict[int, Counter[PortKey]] | None = None
        self._profile_ports: dict[int, Counter[PortKey]] = {}
        self._log: list[_Undo] = []
        self.version = 0
        self._on_node: npt.NDArray[np.bool_] = on_node
        self._idle: F64 = idle(state.node_alloc, self.used)
        self._future: F64 = future_idle(self._idle, self.releasing, self.pipelined)
        self._relocator: Any = None  # the kernel's relocate, bound to these rows on first use

    # -- views ---------------------------------------------------------------------------

    def future_idle(self) -> F64:
        """FutureIdle per node, kept current row by row (read-only for callers)."""
        return self._future

    def idle(self) -> F64:
        """Idle per node, kept current row by row (read-only for callers)."""
        return self._idle

    def _ports_of(self, task: int) -> Counter[PortKey]:
        prof = int(self.state.task_profile[task])
        ports = self._profile_ports.get(prof)
        if ports is None:
            ports = self._profile_ports[prof] = task_ports(self.state.profiles[prof])
        return ports

    def _refresh(self, node: int) -> None:
        self._idle[node] = idle(self.state.node_alloc[node], self.used[node])
        self._future[node] = future_idle(self._idle[node], self.releasing[node], self.pipelined[node])

    def on_node(self) -> npt.NDArray[np.bool_]:
        """Tasks that occupy a node now (not terminated), including pipelined and releasing.
        Kept current entry by entry; read-only for callers."""
        return self._on_node

    def ports(self) -> dict[int, Counter[PortKey]]:
        if self._ports is None:
            ports: dict[int, Counter[PortKey]] = {}
            state = self.state
            profiles = state.profiles
            with_ports = {i for i, p in enumerate(profiles) if p.host_ports and any(hp.port for hp in p.host_ports)}
            if with_ports:
                for t in np.flatnonzero(self.on_node() & np.isin(state.task_profile, list(with_ports))):
                    counter = ports.setdefault(int(self.node_of[t]), Counter())
                    counter.update(task_ports(state.profiles[state.task_profile[t]]))
            self._ports = ports
        return self._ports

    # -- mutations -----------------------------------------------------------------------

    def _save(self, task: int, nodes: list[int]) -> _Undo:
        ports = self.ports()
        has_ports = bool(self._ports_of(task))
        undo = _Undo(
            task,
            int(self.node_of[task]),
            int(self.status[task]),
            bool(self._on_node[task]),
            [
                (n, self.used[n].copy(), self.releasing[n].copy(), self.pipelined[n].copy(), int(self.pod_count[n]))
                for n in nodes
            ],
            [(n, Counter(ports.get(n, ()))) for n in nodes] if has_ports else [],
        )
        self._log.append(undo)
        self.version += 1
        return undo

    def _release(self, node: int, req: F64, status: int) -> None:
        """A task's request leaves its node's rows (Pipelined or Used, Releasing too) and its slot."""
        if status == PIPELINED:
            self.pipelined[node] -= req
        else:
            self.used[node] -= req
            if status == RELEASING:
                self.releasing[node] -= req
        self.pod_count[node] -= 1

    def remove(self, task: int) -> None:
        """Take a placed task off its node (an eviction): its resources and ports become free."""
        node = int(self.node_of[task])
        status = int(self.status[task])
        if node < 0 or status & TERMINATED_MASK:
            raise ValueError(f"task {self.state.task_name[task]} is not on a node")
        if not self._on_node[task]:  # a refused Binding task: nothing on the node to free
            self._save(task, [])
            self.node_of[task] = -1
            return
        self._save(task, [node])
        self._release(node, self.state.task_req[task], status)
        self._refresh(node)
        ports = self._ports_of(task)
        if ports:
            self.ports()[node].subtract(ports)
            self.ports()[node] += Counter()  # drop zero entries
        self.node_of[task] = -1
        self._on_node[task] = False

    def place(self, task: int, node: int) -> None:
        """Put an unplaced task on ``node`` as Allocated."""
        self._put(task, node, self.used, ALLOCATED)

    def pipeline(self, task: int, node: int) -> None:
        """Statement.Pipeline: an unplaced task reserved on ``node`` as Pipelined — its request
        counts against the node's FutureIdle (not its Idle), and it takes a pod slot and its host
        ports there, as a task the snapshot names Pipelined on the node is counted."""
        self._put(task, node, self.pipelined, PIPELINED)

    def _put(self, task: int, node: int, ledger: F64, status: int) -> None:
        """``task`` onto ``node`` in ``status``, its request added to ``ledger`` (used or pipelined)."""
        if self.node_of[task] >= 0 and not self.status[task] & TERMINATED_MASK:
            raise ValueError(f"task {self.state.task_name[task]} is already on a node")
        self._save(task, [node])
        ledger[node] += self.state.task_req[task]
        self.pod_count[node] += 1
        self._refresh(node)
        ports = self._ports_of(task)
        if ports:
            self.ports().setdefault(node, Counter()).update(ports)
        self.node_of[task] = node
        self.status[task] = status
        self._on_node[task] = True

    def relocate(self, tasks: npt.NDArray[np.intp], targets: list[int]) -> None:
        """Committed: ``remove`` every task, then ``place`` each on its target -- the same
        arithmetic in the same order, so the rows are bit-identical -- without undo records, for
        tasks without host ports. Nothing to roll back, so no statement may be open. One pass of
        the mirror's kernel when it is built; :meth:`relocate_twin` is its specification."""
        if self._log:
            raise RuntimeError("relocate needs a committed statement (a checkpoint is open)")
        state = self.state
        for t in tasks.tolist():
            if self.node_of[t] < 0 or self.status[t] & TERMINATED_MASK:
                raise ValueError(f"task {state.task_name[t]} is not on a node")
            if self._ports_of(t):
                raise ValueError(f"task {state.task_name[t]} claims host ports: use move")
        k = kernels.kernel()
        if k is None:
            self.relocate_twin(tasks, targets)
        else:
            if self._relocator is None:  # bound once to this Simulation's rows
                self._relocator = k.Relocator(
                    state.task_req,
                    state.node_alloc,
                    self.used,
                    self.releasing,
                    self.pipelined,
                    self._idle,
                    self._future,
                    self.pod_count,
                    self.node_of,
                    self.status,
                    self._on_node.view(np.uint8),
                    PIPELINED,
                    RELEASING,
                    ALLOCATED,
                )
            self._relocator.run(
                np.ascontiguousarray(tasks, np.intp), np.asarray(targets, np.intp), np.empty(2 * len(targets), np.intp)
            )
        self.version += 1

    def relocate_twin(self, tasks: npt.NDArray[np.intp], targets: list[int]) -> None:
        """The arithmetic of :meth:`relocate` (validated tasks) as plain numpy row operations."""
        state = self.state
        touched: dict[int, None] = {}  # rows are refreshed once each, at the end (same values)
        for t in tasks.tolist():
            node, status = int(self.node_of[t]), int(self.status[t])
            if self._on_node[t]:
                self._release(node, state.task_req[t], status)
                touched[node] = None
            self.node_of[t] = -1
        for t, node in zip(tasks.tolist(), targets, strict=True):
            self.used[node] += state.task_req[t]
            self.pod_count[node] += 1
            touched[node] = None
        for node in touched:
            self._refresh(node)
        self.node_of[tasks] = targets
        self.status[tasks] = ALLOCATED
        self._on_node[tasks] = True

    def move(self, task: int, node: int) -> None:
        self.remove(task)
        self.place(task, node)

    def checkpoint(self) -> int:
        return len(self._log)

    def rollback(self, checkpoint: int = 0) -> None:
        """Undo every change after ``checkpoint`` (Statement.Discard)."""
        while len(self._log) > checkpoint:
            undo = self._log.pop()
            for n, used, rel, pipe, count in undo.rows:
                self.used[n] = used
                self.releasing[n] = rel
                self.pipelined[n] = pipe
                self.pod_count[n] = count
                self._refresh(n)
            if self._ports is not None:
                for n, counter in undo.ports:
                    if counter:
                        self._ports[n] = counter
                    else:
                        self._ports.pop(n, None)
            self.node_of[undo.task] = undo.node_of
            self.status[undo.task] = undo.status
            self._on_node[undo.task] = undo.on_node
        self.version += 1

    def commit(self) -> None:
        """Keep every change (Statement.Commit): nothing left to roll back."""
        self._log.clear()


def task_ports(profile: object) -> Counter[PortKey]:
    """Host ports a pod claims; hostPort 0 claims nothing. Empty IP and 0.0.0.0 are the same."""
    out: Counter[PortKey] = Counter()
    for hp in getattr(profile, "host_ports", ()):
        if hp.port:
            ip = "" if hp.host_ip in ("", "0.0.0.0") else hp.host_ip
            out[(hp.protocol or "TCP", int(hp.port), ip)] += 1
    return out


def claims_ports(profile: object) -> bool:
    """Does the pod claim a host port (``task_ports`` non-empty), without building the claims?"""
    return any(hp.port for hp in getattr(profile, "host_ports", ()))


def ports_conflict(wanted: Counter[PortKey], used: Counter[PortKey] | None) -> bool:
    """NodePorts: same protocol and port, and the same IP or either side on every address."""
    if not wanted or not used:
        return False
    for proto, port, ip in wanted:
        for uproto, uport, uip in used:
            if uproto == proto and uport == port and (ip == uip or not ip or not uip):
                return True
    return False
