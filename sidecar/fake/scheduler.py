"""The simulated Volcano scheduler: binds pending ``volcano`` pods as Volcano's allocate action would.

Each cycle reads the fake's objects into a Snapshot (``sidecar.snapshot.kube``), decodes it and asks
the mirror core — not a copy of Volcano's logic — where each pending pod goes: its
``status.nominatedNodeName`` first when it passes the predicates there against FutureIdle, else
``Mirror.allocate`` (Volcano's node order). Gangs are all-or-nothing per cycle: a PodGroup's
placements are kept only when, with the members already bound or running, at least minMember are
placed (Statement commit/discard, here Simulation checkpoint/rollback). Pods with
``spec.schedulingGates`` wait until the last gate is removed (their gang waits with them), as
Volcano skips ``SchGated`` tasks; a pod naming a PodGroup that does not exist waits for it.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np
import structlog

from sidecar.fake.cluster import FakeCluster
from sidecar.kubeobj import Obj
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from sidecar.snapshot.kube import GROUP_NAME, snapshot_from_objects
from sidecar.snapshot.state import ClusterState
from sidecar.watcher.kit.port import NAMESPACES, NODES, PDBS, PODGROUPS, PODS, ApiError

#: tasks that count towards a gang's minMember (Volcano's ready tasks)
_READY = ts.ALLOCATED | ts.BINDING | ts.BOUND | ts.RUNNING | ts.SUCCEEDED
log = structlog.get_logger("sidecar.fake")


class Loop:
    """Calls ``cycle`` every ``period`` seconds on a daemon thread until ``stop``; tests call
    ``cycle`` themselves to drive a component step by step."""

    name = "component"

    def __init__(self, cluster: FakeCluster, period: float) -> None:
        self.cluster, self.period = cluster, period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one cycle at a time: the thread's and a test's never interleave

    def run_once(self) -> int:  # pragma: no cover - every component defines it
        raise NotImplementedError

    def cycle(self) -> int:
        """One pass now; returns how many objects it changed."""
        with self._lock:
            return self.run_once()

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"fake-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.cycle()
            except Exception as exc:  # a bad object must not stop the component; the next cycle retries
                log.error(f"{self.name} cycle failed", error=f"{type(exc).__name__}: {exc}")


class Scheduler(Loop):
    """Binds Pending pods whose schedulerName is ``scheduler_name``; ``cycle()`` is one session."""

    name = "scheduler"

    def __init__(self, cluster: FakeCluster, *, period: float = 1.0, scheduler_name: str = "volcano") -> None:
        super().__init__(cluster, period)
        self.scheduler_name = scheduler_name

    def run_once(self) -> int:
        c = self.cluster
        pods = c.items(PODS)
        if not any(self._wants(p) for p in pods):
            return 0
        groups = c.items(PODGROUPS)
        snap = snapshot_from_objects(c.items(NAMESPACES), c.items(NODES), pods, groups, c.items(PDBS))
        state = decode(snap)
        known = {(g["metadata"].get("namespace", ""), g["metadata"]["name"]) for g in groups}
        waiting = {
            (p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in pods
            if self._wants(p)
            and (
                not (g := (p["metadata"].get("annotations") or {}).get(GROUP_NAME))
                or (p["metadata"].get("namespace", ""), g) in known
            )
        }
        done = 0
        for t, node in self.place(state, waiting):
            try:
                c.bind(state.namespaces[state.task_namespace[t]], state.task_name[t], node)
                done += 1
            except ApiError:  # bound, deleted or changed since the read: the next cycle sees it
                continue
        return done

    def _wants(self, pod: Obj) -> bool:
        spec, meta = pod.get("spec", {}), pod.get("metadata", {})
        return (
            spec.get("schedulerName") == self.scheduler_name
            and not spec.get("nodeName")
            and not spec.get("schedulingGates")
            and not meta.get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
        )

    @staticmethod
    def place(state: ClusterState, waiting: set[tuple[str, str]]) -> list[tuple[int, str]]:
        """(task, node) bindings for the ``waiting`` (namespace, name) pods, gang by gang."""
        mirror, sim = Mirror(state), Simulation(state)
        members: dict[int, list[int]] = defaultdict(list)
        for t in range(state.n_tasks):
            members[int(state.task_pod_group[t])].append(t)
        out: list[tuple[int, str]] = []
        for group in sorted(members, key=lambda g: (g < 0, state.pod_group_key(g) if g >= 0 else "")):
            pending = [
                t for t in members[group] if (state.namespaces[state.task_namespace[t]], state.task_name[t]) in waiting
            ]
            pending.sort(key=lambda t: (-int(state.task_priority[t]), state.task_name[t]))
            if group < 0:  # no gang: each pod on its own
                for t in pending:
                    out += _try(mirror, sim, state, [t], 1)
                continue
            ready = sum(bool(int(state.task_status[t]) & _READY) for t in members[group])
            need = max(1, state.pod_groups[group].min_member) - ready
            out += _try(mirror, sim, state, pending, need)
        return out


def _try(mirror: Mirror, sim: Simulation, state: ClusterState, tasks: list[int], need: int) -> list[tuple[int, str]]:
    """Place ``tasks`` in order; keep the placements only when at least ``need`` succeeded."""
    mark = sim.checkpoint()
    placed: list[tuple[int, str]] = []
    for t in tasks:
        node = _node_for(mirror, sim, state, t)
        if node >= 0:
            sim.place(t, node)
            placed.append((t, state.node_names[node]))
    if len(placed) < need:
        sim.rollback(mark)
        return []
    return placed


def _node_for(mirror: Mirror, sim: Simulation, state: ClusterState, t: int) -> int:
    """The nominated node when the pod fits there, else Volcano's best node; -1 when none.
    A pipelined task leaves its reservation first (it is the one being placed)."""
    subj = mirror.subject_for_task(t)
    nominated = int(state.task_node[t]) if int(state.task_status[t]) == ts.PIPELINED else -1
    if nominated >= 0:
        fits = mirror.filter(subj, np.array([nominated], np.intp), sim, explain=False).feasible[nominated]
        sim.remove(t)
        if fits:
            return nominated
    return mirror.allocate(subj, sim)
