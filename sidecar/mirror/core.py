"""The mirror core's front door: one object per snapshot that answers Filter and Prioritize.

It owns what is worth keeping between calls on the same snapshot (label columns, per-profile
node checks); each call runs on a fresh or caller-provided :class:`Simulation`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror import kernels, podchecks
from sidecar.mirror.conf import SchedulerConf, from_proto
from sidecar.mirror.nodechecks import static_key
from sidecar.mirror.predicates import Predicates
from sidecar.mirror.scoring import NodeOrder, Scores
from sidecar.mirror.selectors import NodeLabels, check_tolerations
from sidecar.mirror.simulation import Simulation, ports_conflict, task_ports
from sidecar.mirror.types import P_OK, S_OK, T_OK, FilterResult, Subject, task_subject
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import PODS
from sidecar.snapshot.validation import quantity, validate_profile


@dataclass(frozen=True)
class TaskClasses:
    """Tasks grouped for the feasibility kernel: each task's class and the classes' node masks."""

    task_class: npt.NDArray[np.intp]  # [tasks] -> class
    masks: kernels.ClassMasks

    @property
    def n_classes(self) -> int:
        return self.masks.n_classes


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
        self.node_name_array = np.array(state.node_names, dtype=object)
        self._uid_index: dict[str, int] | None = None

    def names(self, nodes: npt.NDArray[np.intp] | npt.NDArray[np.bool_]) -> list[str]:
        """Node names for indices (or a boolean mask), fast enough for 10k-node answers."""
        out: list[str] = self.node_name_array[nodes].tolist()
        return out

    # -- subjects ----------------------------------------------------------------------------

    def task_index(self, uid: str, path: str = "task_uid") -> int:
        if self._uid_index is None:
            self._uid_index = {u: i for i, u in enumerate(self.state.task_uid)}
        t = self._uid_index.get(uid)
        if t is None:
            raise InputError(path, f'no task with uid "{uid}" in the snapshot')
        return t

    def subject_for_uid(self, uid: str, path: str = "task_uid") -> Subject:
        return self.subject_for_task(self.task_index(uid, path))

    def subject_for_task(self, t: int) -> Subject:
        return task_subject(self.state, t)

    def subject_from_message(self, task: pb.Task, path: str = "task") -> Subject:
        if not task.name:
            raise InputError(f"{path}.name", "missing")
        if not task.namespace:
            raise InputError(f"{path}.namespace", "missing")
        req = np.zeros(len(self.state.resources))
        unknown = []
        for name, value in sorted(task.requests.items()):
            quantity(f'{path}.requests["{name}"]', value)
            if self.state.has_resource(name):
                req[self.state.resource(name)] = value
            elif value > 0:
                unknown.append(name)
        req[self.state.resource(PODS)] = 1.0
        check_tolerations(task.profile.tolerations, f"{path}.profile.tolerations")
        validate_profile(task.profile, f"{path}.profile")
        nonzero = None
        if task.HasField("nonzero_requests"):
            nz = task.nonzero_requests
            for name in ("cpu", "memory"):
                quantity(f"{path}.nonzero_requests.{name}", getattr(nz, name))
            nonzero = np.array([nz.cpu, nz.memory])
        return Subject(task.name, task.namespace, req, task.profile, None, tuple(unknown), nonzero=nonzero)

    def node_indices(self, names: list[str], path: str = "nodes") -> npt.NDArray[np.intp] | None:
        if not names:
            return None
        out = np.empty(len(names), np.intp)
        for i, name in enumerate(names):
            try:
                out[i] = self.state.node(name)
            except KeyError:
                raise InputError(f"{path}[{i}]", f'unknown node "{name}"') from None
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

    def allocate(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None) -> int:
        """The node Volcano's allocate would bind ``subj`` to among ``nodes`` (default all), or -1
        when none passes (:meth:`best_node`). Nothing is placed: the caller decides."""
        return self.best_node(subj, sim, nodes)[0]

    def best_node(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None) -> tuple[int, bool]:
        """(node, fits Idle) as allocate's prioritizeNodes chooses (volcano v1.14.1
        pkg/scheduler/actions/allocate/allocate.go): the feasible nodes where the task fits Idle
        are scored first, and only when there is none those where it fits FutureIdle (it is
        pipelined there); the best score wins, ties by name. (-1, False) when none passes."""
        idx = np.arange(self.state.n_nodes) if nodes is None else nodes
        for fits_idle, gradient in zip(
            (True, False), self.predicates.feasible_by_gradient(subj, sim, idx), strict=True
        ):
            if gradient.size == 1:
                return int(gradient[0]), fits_idle
            if gradient.size:
                return int(gradient[self.order.score(subj, sim, gradient).best(self.state.node_names)]), fits_idle
        return -1, False

    # -- many tasks at once ----------------------------------------------------------------------

    def feasible_counts(self, tasks: npt.NDArray[np.intp], sim: Simulation | None = None) -> npt.NDArray[np.int64]:
        """For each task, the number of nodes it could be placed on now, *in addition* to what
        is placed (the task keeps its own place). Tasks are grouped into classes (request
        vector x node-only constraint set x pod-level constraints); each class is checked
        against all nodes once by the kernel."""
        sim = sim or Simulation(self.state)
        classes = self.classes(np.asarray(tasks, np.intp), sim)
        if classes.n_classes == 0:
            return np.zeros(0, np.int64)
        return kernels.feasible_counts(classes.masks)[classes.task_class]

    def classes(self, tasks: npt.NDArray[np.intp], sim: Simulation) -> TaskClasses:
        """Group ``tasks`` into equivalence classes and precompute their node masks."""
        state, p = self.state, self.predicates
        # Node-only checks depend on the profile's constraint set: one row per distinct set.
        static_rows: dict[bytes, int] = {}
        static_ok: list[npt.NDArray[np.uint8]] = []
        profile_static = np.empty(len(state.profiles), np.int32)
        used_profiles = np.unique(state.task_profile[tasks])
        for prof_i in used_profiles:
            prof = state.profiles[prof_i]
            skey = static_key(prof)
            row = static_rows.get(skey)
            if row is None:
                row = static_rows[skey] = len(static_ok)
                static_ok.append((p.static(prof).code == S_OK).astype(np.uint8))
            profile_static[prof_i] = row
        # Pod-level checks (affinity, spread, ports, existing anti-affinity) depend on the profile
        # and the namespace: one mask per (profile, namespace) pair that has any.
        task_dyn = np.full(len(tasks), -1, np.int64)
        dyn_ok: list[npt.NDArray[np.uint8]] = []
        pairs = np.column_stack([state.task_profile[tasks], state.task_namespace[tasks]])
        uniq_pairs, pair_of = np.unique(pairs, axis=0, return_inverse=True)
        pair_row = np.full(len(uniq_pairs), -1, np.int64)
        for k, (prof_i, ns_i) in enumerate(uniq_pairs):
            subj = Subject(
                "class",
                state.namespaces[ns_i],
                np.zeros(len(state.resources)),
                state.profiles[prof_i],
                profile_index=int(prof_i),
            )
            if p.pod_level(subj):
                pair_row[k] = len(dyn_ok)
                dyn_ok.append(self._pod_level_ok(subj, sim).astype(np.uint8))
        task_dyn[:] = pair_row[pair_of.ravel()]
        keys = np.ascontiguousarray(
            np.column_stack([profile_static[state.task_profile[tasks]], task_dyn, state.task_req[tasks]])
        )
        rows = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
        _, first, task_class = np.unique(rows, return_index=True, return_inverse=True)
        uniq = keys[first]
        class_req = np.ascontiguousarray(uniq[:, 2:])
        class_dims = np.zeros(class_req.shape, np.uint8)
        for c in range(len(uniq)):
            class_dims[c, p.fit_dims(class_req[c])] = 1
        class_static = uniq[:, 0].astype(np.int32)
        class_dyn = uniq[:, 1].astype(np.int32)
        n = state.n_nodes
        return TaskClasses(
            task_class.ravel(),
            kernels.ClassMasks(
                class_req=class_req,
                class_dims=class_dims,
                class_static=class_static,
                static_ok=np.array(static_ok) if static_ok else np.zeros((0, n), np.uint8),
                class_dynamic=class_dyn,
                dynamic_ok=np.array(dyn_ok) if dyn_ok else np.zeros((0, n), np.uint8),
                free=sim.future_idle(),
                pod_room=(sim.pod_count < p.pod_cap).astype(np.uint8),
            ),
        )

    def _pod_level_ok(self, subj: Subject, sim: Simulation) -> npt.NDArray[np.bool_]:
        p = self.predicates
        checks = p.checks(subj)
        ok = np.ones(self.state.n_nodes, bool)
        if checks & podchecks.INTER_POD:
            ok &= p.interpod.filter(subj, sim) == P_OK
        if "PodTopologySpread" in checks:
            ok &= p.spread.filter(subj, sim) == T_OK
        if "NodePorts" in checks:
            wanted, used = task_ports(subj.profile), sim.ports()
            ok &= ~np.array([ports_conflict(wanted, used.get(n)) for n in range(self.state.n_nodes)], bool)
        return ok
