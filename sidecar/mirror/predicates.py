"""Feasibility of one task on every node, in Volcano's order and with its fit-error wording.

Fidelity target: Volcano v1.14.1 on its Kubernetes v1.34.1 scheduler libraries
(:data:`sidecar.mirror.VOLCANO_RELEASE`), the release go/plugin and the real control plane
build; ``volcano-oracle`` runs its compiled code.

Order (allocate action, then the predicates plugin, pkg/scheduler/plugins/predicates/predicates.go):

1. resource fit: request <= FutureIdle on cpu, memory and every scalar the task requests (0.1
   tolerance); on failure the only reason is ``Insufficient <first failing resource>``, walking
   cpu, memory, then the task's scalars (a resource no node provides is such a scalar, so it is
   never named before cpu or memory). Among several failing scalars Volcano's choice is Go map
   order (random); the mirror's is fixed: by name;
2. pod count (``node(s) pod number exceeded``, Unschedulable), recorded but not final;
3. NodeUnschedulable, NodeAffinity, TaintToleration (UnschedulableAndUnresolvable): the first
   failure ends the check;
4. NodePorts (Unschedulable, recorded); InterPodAffinity: the pod's own affinity
   (UnschedulableAndUnresolvable, ends the check), else its own anti-affinity or existing pods'
   anti-affinity (Unschedulable, recorded); PodTopologySpread (recorded; it is the last check).
   Volcano stops only on ``util.ShouldAbort`` (UnschedulableAndUnresolvable, Error), so every
   Unschedulable reason before it is reported, in order.

The rules themselves live in their own modules (see :mod:`sidecar.mirror`); this one only
decides which run, in which order, and how their results combine.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.mirror import kernels, podchecks
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.domainrules import DomainRule, domain_rules
from sidecar.mirror.explain import group_reasons
from sidecar.mirror.interpod import InterPodAffinity
from sidecar.mirror.nodechecks import NodeChecks
from sidecar.mirror.podindex import PodIndex
from sidecar.mirror.selectors import NodeLabels
from sidecar.mirror.simulation import Simulation, ports_conflict, task_ports
from sidecar.mirror.spread import TopologySpread
from sidecar.mirror.types import I8, P_OK, S_OK, T_OK, Evaluation, FilterResult, Mask, Subject
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import BASE_RESOURCES, PODS

_NO_BOOL: Mask = np.zeros(0, bool)
_NO_CODE: I8 = np.zeros(0, np.int8)


class Predicates:
    def __init__(self, state: ClusterState, conf: SchedulerConf, labels: NodeLabels | None = None) -> None:
        self.state = state
        self.conf = conf
        self.labels = labels or NodeLabels(state.nodes)
        self.node_checks = NodeChecks(state, conf, self.labels)
        self.index = PodIndex(state, self.labels)
        self.interpod = InterPodAffinity(state, self.labels, self.index)
        self.spread = TopologySpread(state, self.labels, self.index, self.node_checks)
        # What the planner and the benchmarks ask directly, bound once (no extra call per question).
        self.pods_dim = self.node_checks.pods_dim
        self.pod_cap = self.node_checks.pod_cap
        self.fit_dims = self.node_checks.fit_dims
        self.static = self.node_checks.static
        self.matching_tasks = self.index.matching_tasks
        self._own: dict[int, frozenset[str]] = {}  # profile row -> podchecks.own
        self._checks: dict[tuple[int, str], frozenset[str]] = {}  # (profile row, namespace) -> checks
        self._domain_rules: dict[tuple[int, str], list[DomainRule] | None] = {}

    def checks(self, subj: Subject) -> frozenset[str]:
        """The pod-level checks the pod faces (:func:`podchecks.active`): a function of the profile
        and the namespace only, so cached per pair for the snapshot's profiles."""
        key = (subj.profile_index, subj.namespace) if subj.profile_index is not None else None
        if key is not None:
            hit = self._checks.get(key)
            if hit is not None:
                return hit
        own = self.own_checks(subj.profile_index) if subj.profile_index is not None else None
        answer = podchecks.active(self.conf, self.index, subj, own)
        if key is not None:
            self._checks[key] = answer
        return answer

    def own_checks(self, profile_index: int) -> frozenset[str]:
        """:func:`podchecks.own` of a snapshot profile, cached per row."""
        hit = self._own.get(profile_index)
        if hit is None:
            hit = self._own[profile_index] = podchecks.own(self.conf, self.state.profiles[profile_index])
        return hit

    def countable(self, profile_index: int) -> bool:
        """:func:`podchecks.countable` of a snapshot profile."""
        return podchecks.countable(self.conf, None, self.own_checks(profile_index))

    def faces_none(self, profile_index: int) -> bool:
        """Does every pod of this profile face no pod-level check, whatever its namespace? (Its
        own spec gives none work and no existing pod has required anti-affinity.) A shortcut of
        :meth:`checks` that needs no Subject."""
        return not self.index.anti_groups and not self.own_checks(profile_index)

    def pod_level(self, subj: Subject) -> bool:
        """Does the pod face checks beyond its node-only ones (its own affinity, spread or host
        ports, or an existing pod's anti-affinity toward it), as the conf runs them?"""
        return bool(self.checks(subj))

    def domain_rules(self, subj: Subject) -> list[DomainRule] | None:
        """The pod's pod-level checks as per-domain counting rules (:mod:`domainrules`), or None
        when one of them is not such a rule; cached per (profile row, namespace)."""
        key = (subj.profile_index, subj.namespace) if subj.profile_index is not None else None
        if key is not None and key in self._domain_rules:
            return self._domain_rules[key]
        checks = self.checks(subj)
        rules: list[DomainRule] | None = []  # no check: no rule
        if checks:
            rules = domain_rules(self.conf, checks, self.spread, self.interpod, self.index, self.labels, subj)
        if key is not None:
            self._domain_rules[key] = rules
        return rules

    def filter(
        self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None, *, explain: bool = True
    ) -> FilterResult:
        """Check ``subj`` against ``nodes`` (default: all), with reasons when ``explain``."""
        n = self.state.n_nodes
        idx = np.arange(n) if nodes is None else np.asarray(nodes, np.intp)
        ev = self._evaluate(subj, sim, idx, fits_idle=explain)
        feasible = np.zeros(n, bool)
        feasible[idx] = ev.ok
        idle_ok = np.zeros(n, bool)
        idle_ok[idx] = ev.ok & ev.fits_idle
        result = FilterResult(feasible, idle_ok)
        if explain:
            groups = group_reasons(self.state, subj, ev)
            result.groups = [(reasons, idx[members]) for reasons, members in groups]
        return result

    def feasible_nodes(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """The nodes of ``nodes`` where ``subj`` passes every check (the planner's hot path)."""
        ok: npt.NDArray[np.intp] = nodes[self._evaluate(subj, sim, nodes, fits_idle=False).ok]
        return ok

    def feasible_by_gradient(
        self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The feasible nodes of ``nodes`` in allocate's two gradients: those where ``subj`` fits
        Idle, and those where it fits only FutureIdle (it would be pipelined there)."""
        ev = self._evaluate(subj, sim, nodes, fits_idle=True)
        idle: npt.NDArray[np.intp] = nodes[ev.ok & ev.fits_idle]
        future: npt.NDArray[np.intp] = nodes[ev.ok & ~ev.fits_idle]
        return idle, future

    def _evaluate(self, subj: Subject, sim: Simulation, idx: npt.NDArray[np.intp], *, fits_idle: bool) -> Evaluation:
        """Every check on the nodes ``idx``, per position. Pod-level checks (affinity, spread,
        ports) run only when the pod faces them (:meth:`checks`)."""
        prof = subj.profile
        dims = self.fit_dims(subj.req)
        first_fail = kernels.first_insufficient(subj.req, sim.future_idle()[idx], dims)
        if subj.unknown_resources:
            first_fail = self._name_unknown(first_fail, subj.unknown_resources)
        fits = first_fail < 0
        idle = kernels.first_insufficient(subj.req, sim.idle()[idx], dims) < 0 if fits_idle else fits
        pod_full = sim.pod_count[idx] >= self.pod_cap[idx]
        static = self.static(prof, profile_index=subj.profile_index)
        static_code = static.code[idx]
        reached = fits & (static_code == S_OK)  # where Volcano runs the remaining predicates
        ok = reached & ~pod_full
        checks = self.checks(subj)
        ports = _NO_BOOL
        if "NodePorts" in checks:
            ports = np.zeros(idx.size, bool)
            wanted_ports = task_ports(prof)
            used = sim.ports()
            # A full node is reported with its port conflict too (both are Unschedulable).
            for k in np.flatnonzero(reached if fits_idle else ok):
                ports[k] = ports_conflict(wanted_ports, used.get(int(idx[k])))
            ok &= ~ports
        inter = _NO_CODE
        if checks & podchecks.INTER_POD:
            inter = self.interpod.filter(subj, sim, idx)
            ok &= inter == P_OK
        spread = _NO_CODE
        if "PodTopologySpread" in checks:
            spread = self.spread.filter(subj, sim, idx)
            ok &= spread == T_OK
        n = idx.size
        return Evaluation(
            ok,
            idle,
            first_fail,
            pod_full,
            static_code,
            ports if ports.size == n else np.zeros(n, bool),
            inter if inter.size == n else np.zeros(n, np.int8),
            spread if spread.size == n else np.zeros(n, np.int8),
            static.taint[idx],
            static.taints,
        )

    def _name_unknown(self, first_fail: npt.NDArray[np.int16], unknown: tuple[str, ...]) -> npt.NDArray[np.int16]:
        """Resources no node provides fail everywhere, as scalars: they are named only where cpu and
        memory fit and no scalar before them by name fails (``unknown`` is sorted by name; pods
        comes after every scalar, :meth:`NodeChecks.fit_dims`)."""
        names = self.state.resources
        after = np.array([name == PODS or (name not in BASE_RESOURCES and name > unknown[0]) for name in names], bool)
        take = (first_fail < 0) | after[np.maximum(first_fail, 0)]
        out = first_fail.copy()
        out[take] = len(names)  # the first unknown resource (see Evaluation.first_fail)
        return out
