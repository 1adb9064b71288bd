"""The mirror core's front door: one object per snapshot that answers Filter and Prioritize.

It owns what is worth keeping between calls on the same snapshot (label columns, per-profile
node checks); each call runs on a fresh or caller-provided :class:`Simulation`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror import kernels
from sidecar.mirror.conf import SchedulerConf, from_proto
from sidecar.mirror.predicates import P_OK, S_OK, T_OK, FilterResult, Predicates, Subject, static_key
from sidecar.mirror.scoring import NodeOrder, Scores
from sidecar.mirror.selectors import NodeLabels, check_tolerations
from sidecar.mirror.simulation import Simulation, ports_conflict, task_ports
from sidecar.snapshot.errors import SnapshotError
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import PODS


@dataclass(frozen=True)
class Verdict:
    filter: FilterResult
    scores: Scores | None = None


class Mirror:
    def __init__(self, state: ClusterState, conf: SchedulerConf | None = None) -> None:
        self.state = state
        self.conf = conf or from_proto(state.scheduler_config)
        self.labels = NodeLabels(state.nodes)
        self.predicates = Predicates(state, self.conf, self.labels)
        self.order = NodeOrder(self.predicates, self.conf)

    # -- subjects ----------------------------------------------------------------------------

    def subject_for_uid(self, uid: str, path: str = "task_uid") -> Subject:
        try:
            t = self.state.task_uid.index(uid)
        except ValueError:
            raise SnapshotError(path, f'no task with uid "{uid}" in the snapshot') from None
        return self.subject_for_task(t)

    def subject_for_task(self, t: int) -> Subject:
        s = self.state
        return Subject(
            name=s.task_name[t],
            namespace=s.namespaces[s.task_namespace[t]],
            req=s.task_req[t],
            profile=s.profiles[s.task_profile[t]],
            task=t,
            profile_index=int(s.task_profile[t]),
        )

    def subject_from_message(self, task: pb.Task, path: str = "task") -> Subject:
        if not task.name:
            raise SnapshotError(f"{path}.name", "missing")
        if not task.namespace:
            raise SnapshotError(f"{path}.namespace", "missing")
        req = np.zeros(len(self.state.resources))
        unknown = []
        for name, value in sorted(task.requests.items()):
            if not np.isfinite(value) or value < 0:
                raise SnapshotError(f'{path}.requests["{name}"]', f"negative or non-finite quantity {value}")
            if self.state.has_resource(name):
                req[self.state.resource(name)] = value
            elif value > 0:
                unknown.append(name)
        req[self.state.resource(PODS)] = 1.0
        check_tolerations(task.profile.tolerations, f"{path}.profile.tolerations")
        return Subject(task.name, task.namespace, req, task.profile, None, tuple(unknown))

    def node_indices(self, names: list[str], path: str = "nodes") -> npt.NDArray[np.intp] | None:
        if not names:
            return None
        out = np.empty(len(names), np.intp)
        for i, name in enumerate(names):
            try:
                out[i] = self.state.node(name)
            except KeyError:
                raise SnapshotError(f"{path}[{i}]", f'unknown node "{name}"') from None
        return out

    # -- Filter / Prioritize -------------------------------------------------------------------

    def filter(
        self,
        subj: Subject,
        nodes: npt.NDArray[np.intp] | None = None,
        sim: Simulation | None = None,
        *,
        explain: bool = True,
    ) -> FilterResult:
        """Where could ``subj`` go now? A placed task is taken off its node for the check."""
        sim = sim or Simulation(self.state)
        mark = sim.checkpoint()
        try:
            if subj.task is not None and sim.node_of[subj.task] >= 0 and sim.on_node()[subj.task]:
                sim.remove(subj.task)
            return self.predicates.filter(subj, sim, nodes, explain=explain)
        finally:
            sim.rollback(mark)

    def prioritize(
        self, subj: Subject, nodes: npt.NDArray[np.intp] | None = None, sim: Simulation | None = None
    ) -> Verdict:
        """Filter, then score the feasible candidates (Volcano scores only those)."""
        sim = sim or Simulation(self.state)
        mark = sim.checkpoint()
        try:
            if subj.task is not None and sim.on_node()[subj.task]:
                sim.remove(subj.task)
            result = self.predicates.filter(subj, sim, nodes, explain=True)
            candidates = np.flatnonzero(result.feasible)
            return Verdict(result, self.order.score(subj, sim, candidates))
        finally:
            sim.rollback(mark)

    # -- many tasks at once ----------------------------------------------------------------------

    def feasible_counts(
        self, tasks: npt.NDArray[np.intp], sim: Simulation | None = None, *, use_kernel: bool | None = None
    ) -> npt.NDArray[np.int64]:
        """For each task, the number of nodes it could be placed on now, *in addition* to what
        is placed (the task keeps its own place). Tasks are grouped into classes (request
        vector x node-only constraint set x pod-level constraints); each class is checked
        against all nodes once by the kernel."""
        state, p = self.state, self.predicates
        sim = sim or Simulation(state)
        tasks = np.asarray(tasks, np.intp)
        # Classes: identical (profile, namespace, request) tasks are one class; profiles with the
        # same node-only constraints share one row of static results.
        keys = np.column_stack([state.task_profile[tasks], state.task_namespace[tasks], state.task_req[tasks]])
        uniq, task_class = np.unique(keys, axis=0, return_inverse=True)
        static_rows: dict[bytes, int] = {}
        static_ok: list[npt.NDArray[np.uint8]] = []
        dyn_ok: list[npt.NDArray[np.uint8]] = []
        dyn_rows: dict[tuple[int, int], int] = {}
        class_req = uniq[:, 2:]
        class_dims = np.zeros(class_req.shape, np.uint8)
        class_static = np.empty(len(uniq), np.int32)
        class_dyn = np.full(len(uniq), -1, np.int32)
        for c, row in enumerate(uniq):
            prof_i, ns_i = int(row[0]), int(row[1])
            prof = state.profiles[prof_i]
            skey = static_key(prof)
            s_row = static_rows.get(skey)
            if s_row is None:
                s_row = static_rows[skey] = len(static_ok)
                static_ok.append((p.static(prof).code == S_OK).astype(np.uint8))
            class_static[c] = s_row
            class_dims[c, p.fit_dims(class_req[c])] = 1
            if prof.pod_affinity or prof.pod_anti_affinity or prof.topology_spread_constraints or task_ports(prof):
                d_row = dyn_rows.get((prof_i, ns_i))
                if d_row is None:
                    d_row = dyn_rows[(prof_i, ns_i)] = len(dyn_ok)
                    subj = Subject(f"class-{c}", state.namespaces[ns_i], class_req[c], prof, profile_index=prof_i)
                    dyn_ok.append(self._pod_level_ok(subj, sim).astype(np.uint8))
                class_dyn[c] = d_row
        if len(uniq) == 0:
            return np.zeros(0, np.int64)
        pod_room = (sim.pod_count < state.node_alloc[:, p.pods_dim]).astype(np.uint8)
        counts = kernels.feasible_counts(
            np.ascontiguousarray(class_req),
            class_dims,
            class_static,
            np.array(static_ok),
            class_dyn,
            np.array(dyn_ok) if dyn_ok else np.zeros((0, state.n_nodes), np.uint8),
            sim.future_idle(),
            pod_room,
            use_kernel=use_kernel,
        )
        return counts[task_class.ravel()]

    def _pod_level_ok(self, subj: Subject, sim: Simulation) -> npt.NDArray[np.bool_]:
        p = self.predicates
        ok = np.ones(self.state.n_nodes, bool)
        if self.conf.predicate_on("InterPodAffinity"):
            ok &= p.interpod(subj, sim) == P_OK
        if self.conf.predicate_on("PodTopologySpread"):
            ok &= p.spread(subj, sim) == T_OK
        wanted = task_ports(subj.profile)
        if wanted and self.conf.predicate_on("NodePorts"):
            used = sim.ports()
            ok &= ~np.array([ports_conflict(wanted, used.get(n)) for n in range(self.state.n_nodes)], bool)
        return ok
