"""The simulated Volcano scheduler: binds pending ``volcano`` pods as Volcano's allocate action would.

Each cycle reads the store into a Snapshot (``sidecar.snapshot.kube``), decodes it and asks the
mirror core — not a copy of Volcano's logic — where each pending pod goes: its
``status.nominatedNodeName`` first when it passes the predicates there against FutureIdle, else
``Mirror.allocate`` (Volcano's node order). Gangs are all-or-nothing per cycle: a PodGroup's
placements are kept only when, with the members already bound or running, at least minMember are
placed (Statement commit/discard, here Simulation checkpoint/rollback). Pods with
``spec.schedulingGates`` are not scheduled until the last gate is removed (their gang waits with
them). Bindings are written as the ``pods/binding`` subresource writes them, so watchers see
MODIFIED events.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from sidecar.kubeobj import Obj
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.rest import PDB_KEY, POD_KEY, Api
from sidecar.sandbox.controlplane import events
from sidecar.sandbox.controlplane.loop import Loop
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from sidecar.snapshot.kube import GROUP_NAME, snapshot_from_objects
from sidecar.snapshot.state import ClusterState

PODGROUP_KEY = "scheduling.volcano.sh/podgroups"
#: tasks that count towards a gang's minMember (Volcano's ready tasks)
_READY = ts.ALLOCATED | ts.BINDING | ts.BOUND | ts.RUNNING | ts.SUCCEEDED


class Scheduler(Loop):
    """Binds Pending pods whose schedulerName is ``scheduler_name``; ``cycle()`` is one session."""

    name = "scheduler"

    def __init__(self, api: Api, *, period: float = 0.1, scheduler_name: str = "volcano") -> None:
        super().__init__(period)
        self.api, self.store, self.scheduler_name = api, api.store, scheduler_name

    def run_once(self) -> int:
        pods, _ = self.store.scan(POD_KEY)
        if not any(self._wants(p) for p in pods):
            return 0
        groups, _ = self.store.scan(PODGROUP_KEY)
        snap = snapshot_from_objects(
            self.store.scan("/namespaces")[0], self.store.scan("/nodes")[0], pods, groups, self.store.scan(PDB_KEY)[0]
        )
        state = decode(snap)
        waiting = {(p["metadata"].get("namespace", ""), p["metadata"]["name"]) for p in pods if self._wants(p)}
        known = {(g["metadata"].get("namespace", ""), g["metadata"]["name"]) for g in groups}
        orphans = {  # a pod naming a PodGroup that does not exist waits for it, as in Volcano
            (p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in pods
            if (g := (p["metadata"].get("annotations") or {}).get(GROUP_NAME))
            and (p["metadata"].get("namespace", ""), g) not in known
        }
        bindings = self.place(state, waiting - orphans)
        done = 0
        for t, node in bindings:
            ns, name = state.namespaces[state.task_namespace[t]], state.task_name[t]
            try:
                self.api.bind(ns, name, {"target": {"name": node}})
                done += 1
            except ApiError:  # bound, deleted or changed since the scan: the next cycle sees it
                continue
            pod = self.store.find(POD_KEY, ns, name)
            if pod is not None:  # Volcano's binder reports each binding (cache.go, "Scheduled")
                events.record(
                    self.api, pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}", "volcano"
                )
        return done

    def _wants(self, pod: Obj) -> bool:
        """A pending pod of this scheduler that is ready for scheduling: a pod with scheduling gates
        waits, as kube-scheduler's SchedulingGates PreEnqueue and Volcano leave it unscheduled."""
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
