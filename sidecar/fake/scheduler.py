"""The simulated Volcano scheduler: binds pending ``volcano`` pods as Volcano's allocate action would.

Each cycle reads the fake's objects into a Snapshot (``sidecar.snapshot.kube``), decodes it and runs
the mirror's allocate cycle (``sidecar.mirror.allocate``, not a copy of Volcano's logic) job by
job: a pod's ``status.nominatedNodeName`` first when it fits there, else Volcano's node order; a
gang binds only when it is ready (Statement commit), else its placements are undone. Pods with
``spec.schedulingGates`` wait until the last gate is removed (their gang waits with them), as
Volcano skips ``SchGated`` tasks; a pod naming a PodGroup that does not exist waits for it.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import structlog

from sidecar.fake.cluster import FakeCluster
from sidecar.kubeobj import Obj
from sidecar.mirror.allocate import allocate_job
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot.decode import decode
from sidecar.snapshot.kube import GROUP_NAME, snapshot_from_objects
from sidecar.snapshot.state import ClusterState
from sidecar.watcher.kit.port import NAMESPACES, NODES, PDBS, PODGROUPS, PODS, ApiError

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
        """(task, node) bindings for the ``waiting`` (namespace, name) pods, job by job, each an
        allocate cycle of the mirror (``sidecar.mirror.allocate``): a gang binds only when ready.
        Pipelined placements (waiting for releasing pods) are not bound: the next cycle retries."""
        mirror, sim = Mirror(state), Simulation(state)
        members: dict[int, list[int]] = defaultdict(list)
        for t in range(state.n_tasks):
            members[int(state.task_pod_group[t])].append(t)
        out: list[tuple[int, str]] = []
        for group in sorted(members, key=lambda g: (g < 0, state.pod_group_key(g) if g >= 0 else "")):
            pending = [
                t for t in members[group] if (state.namespaces[state.task_namespace[t]], state.task_name[t]) in waiting
            ]
            for job in [[t] for t in pending] if group < 0 else [pending]:
                if not job:
                    continue
                done = allocate_job(mirror, sim, group, job)
                if done.ready:
                    out += [(t, state.node_names[n]) for t, n in done.placed if t not in done.pipelined]
        return out
