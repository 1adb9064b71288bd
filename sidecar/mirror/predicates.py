"""Feasibility of one task on every node, in Volcano's order and with its fit-error wording.

Order (allocate action, then the predicates plugin, pkg/scheduler/plugins/predicates):

1. resource fit: request <= FutureIdle on cpu, memory and every scalar (0.1 tolerance); on
   failure the only reason is ``Insufficient <first failing resource>`` (cpu, memory, then
   scalars by name: Volcano's own order is Go map order, the mirror's is fixed);
2. pod count (``node(s) pod number exceeded``), recorded but not final;
3. NodeUnschedulable, NodeAffinity, TaintToleration: the first failure ends the check;
4. NodePorts (recorded), InterPodAffinity (ends the check), PodTopologySpread (recorded).

Node-only checks (3) depend on the pod's constraints alone and are computed once per distinct
constraint set over all nodes (an equivalence class), then reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror import kernels
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.selectors import (
    UNSCHEDULABLE_TAINT,
    NodeLabels,
    check_tolerations,
    first_untolerated,
    label_selector_matches,
    node_affinity_mask,
    tolerates,
)
from sidecar.mirror.simulation import Simulation, ports_conflict, task_ports
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import RELEASING
from sidecar.snapshot.units import BASE_RESOURCES, PODS

I8 = npt.NDArray[np.int8]
Mask = npt.NDArray[np.bool_]

INSUFFICIENT = "Insufficient {}"
POD_NUMBER = "node(s) pod number exceeded"
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TAINT = "node(s) had untolerated taint {{{}: {}}}"
PORTS = "node(s) didn't have free ports for the requested pod ports"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"

# static codes
S_OK, S_UNSCHEDULABLE, S_AFFINITY, S_TAINT = 0, 1, 2, 3
# inter-pod codes
P_OK, P_EXISTING_ANTI, P_AFFINITY, P_ANTI = 0, 1, 2, 3
# spread codes
T_OK, T_SKEW, T_LABEL = 0, 1, 2


@dataclass(frozen=True)
class Subject:
    """The task being placed: an existing task of the snapshot or one described inline."""

    name: str
    namespace: str
    req: npt.NDArray[np.float64]  # [R] on the state's resource axis, pods = 1
    profile: pb.TaskProfile
    task: int | None = None  # index in the state when the task exists there
    unknown_resources: tuple[str, ...] = ()  # requested but on no node at all
    profile_index: int | None = None  # the state's profile row, when the profile comes from the state

    @property
    def labels(self) -> Mapping[str, str]:
        return self.profile.labels


@dataclass(frozen=True)
class StaticResult:
    code: I8  # [N] S_* codes
    taint: npt.NDArray[np.int32]  # [N] index of the first untolerated taint on the node, -1 if none


@dataclass
class FilterResult:
    feasible: Mask  # [N] over all nodes (False outside the requested subset)
    fits_idle: Mask  # [N] feasible and fits Idle, not only FutureIdle
    #: infeasible requested nodes grouped by their reason list
    groups: list[tuple[list[str], npt.NDArray[np.intp]]] = field(default_factory=list)

    def reasons(self) -> dict[int, list[str]]:
        """node index -> reasons, for the infeasible requested nodes."""
        return {int(i): reasons for reasons, members in self.groups for i in members}


_NO_BOOL: Mask = np.zeros(0, bool)
_NO_CODE: I8 = np.zeros(0, np.int8)


@dataclass(frozen=True)
class _Eval:
    """Per-position results of every check over a node subset."""

    ok: Mask
    fits_idle: Mask
    first_fail: npt.NDArray[np.int16]
    pod_full: Mask
    static_code: I8
    ports: Mask
    inter: I8
    spread: I8


@dataclass(frozen=True)
class _Term:
    selector: pb.LabelSelector
    namespaces: frozenset[str] | None  # None = every namespace
    key: str
    weight: int = 0


def static_key(profile: pb.TaskProfile) -> bytes:
    """What the node-only checks read of a pod: its equivalence class for them."""
    return pb.TaskProfile(
        node_selector=profile.node_selector,
        required_node_affinity=profile.required_node_affinity,
        tolerations=profile.tolerations,
    ).SerializeToString(deterministic=True)


class Predicates:
    def __init__(self, state: ClusterState, conf: SchedulerConf, labels: NodeLabels | None = None) -> None:
        self.state = state
        self.conf = conf
        self.labels = labels or NodeLabels(state.nodes)
        self._static: dict[bytes, StaticResult] = {}
        self._static_by_profile: dict[int, StaticResult] = {}
        self._dims: dict[bytes, npt.NDArray[np.intp]] = {}
        self._taint_sets: tuple[npt.NDArray[np.int32], list[tuple[pb.Taint, ...]]] | None = None
        self._profile_match: dict[bytes, npt.NDArray[np.intp]] = {}
        self._task_match: dict[tuple[bytes, frozenset[str] | None], npt.NDArray[np.intp]] = {}
        self._spread_static: dict[tuple[bytes, str], tuple[Mask, npt.NDArray[np.int32]]] = {}
        self._by_profile: list[npt.NDArray[np.intp]] | None = None
        self._labels_index: dict[tuple[str, str], list[int]] | None = None
        self.pods_dim = state.resource(PODS)
        self._scalar_dims = np.array(
            [i for i, name in enumerate(state.resources) if name not in BASE_RESOURCES], np.intp
        )
        # Pods with required anti-affinity, grouped by (profile, namespace): they share their terms.
        self._anti_groups: list[tuple[pb.TaskProfile, str, npt.NDArray[np.intp]]] = []
        anti_profiles = [i for i, p in enumerate(state.profiles) if p.pod_anti_affinity]
        if anti_profiles:
            holders = np.flatnonzero(np.isin(state.task_profile, anti_profiles))
            keys = (
                state.task_profile[holders].astype(np.int64) * (len(state.namespaces) + 1)
                + state.task_namespace[holders]
            )
            for k in np.unique(keys):
                members = holders[keys == k]
                t0 = int(members[0])
                self._anti_groups.append(
                    (state.profiles[state.task_profile[t0]], state.namespaces[state.task_namespace[t0]], members)
                )
        self._anti_by_profile: dict[int, list[tuple[int, str, frozenset[str] | None]]] | None = None

    def fit_dims(self, req: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        """Dimensions LessEqual compares: cpu and memory always, a scalar only when requested."""
        requested = req[self._scalar_dims] > 0
        key = requested.tobytes()
        dims = self._dims.get(key)
        if dims is None:
            dims = self._dims[key] = np.concatenate([np.array([0, 1], np.intp), self._scalar_dims[requested]])
        return dims

    # -- node-only checks ------------------------------------------------------------------

    def _taint_set_ids(self) -> tuple[npt.NDArray[np.int32], list[tuple[pb.Taint, ...]]]:
        if self._taint_sets is None:
            sets: list[tuple[pb.Taint, ...]] = []
            index: dict[tuple[tuple[str, str, str], ...], int] = {}
            ids = np.empty(self.state.n_nodes, np.int32)
            for i, node in enumerate(self.state.nodes):
                key = tuple((t.key, t.value, t.effect) for t in node.taints)
                j = index.get(key)
                if j is None:
                    j = index[key] = len(sets)
                    sets.append(tuple(node.taints))
                ids[i] = j
            self._taint_sets = (ids, sets)
        return self._taint_sets

    def static(
        self, profile: pb.TaskProfile, path: str = "task.profile", *, profile_index: int | None = None
    ) -> StaticResult:
        """NodeUnschedulable, NodeAffinity, TaintToleration over all nodes; cached per constraint set."""
        if profile_index is not None:
            hit = self._static_by_profile.get(profile_index)
            if hit is not None:
                return hit
        key = static_key(profile)
        hit = self._static.get(key)
        if hit is not None:
            if profile_index is not None:
                self._static_by_profile[profile_index] = hit
            return hit
        n = self.state.n_nodes
        code = np.zeros(n, np.int8)
        taint_at = np.full(n, -1, np.int32)
        check_tolerations(profile.tolerations, f"{path}.tolerations")
        tolerations = list(profile.tolerations)
        # NodeUnschedulable (always on in Volcano's predicates plugin)
        if self.conf.predicates_plugin:
            if not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
                code[self.state.node_unschedulable] = S_UNSCHEDULABLE
            if self.conf.predicate_on("NodeAffinity"):
                miss = (code == S_OK) & ~node_affinity_mask(self.labels, profile, path)
                code[miss] = S_AFFINITY
            if self.conf.predicate_on("TaintToleration"):
                ids, sets = self._taint_set_ids()
                first = np.full(len(sets), -1, np.int32)
                for j, taints in enumerate(sets):
                    bad = first_untolerated(taints, tolerations)
                    if bad is not None:
                        first[j] = next(k for k, t in enumerate(taints) if t is bad or t == bad)
                per_node = first[ids]
                hit_taint = (code == S_OK) & (per_node >= 0)
                code[hit_taint] = S_TAINT
                taint_at[hit_taint] = per_node[hit_taint]
        result = StaticResult(code, taint_at)
        self._static[key] = result
        if profile_index is not None:
            self._static_by_profile[profile_index] = result
        return result

    # -- pod matching ----------------------------------------------------------------------

    def term_namespaces(
        self, term: pb.PodAffinityTerm | pb.TopologySpreadConstraint, owner_ns: str
    ) -> frozenset[str] | None:
        if isinstance(term, pb.TopologySpreadConstraint):
            return frozenset({owner_ns})  # spread only counts pods of the pod's own namespace
        if term.HasField("namespace_selector"):
            sel = term.namespace_selector
            if not sel.match_labels and not sel.match_expressions:
                return None
            chosen = {
                name
                for name, lab in zip(self.state.namespaces, self.state.namespace_labels, strict=True)
                if label_selector_matches(sel, lab)
            }
            return frozenset(chosen | set(term.namespaces))
        return frozenset(term.namespaces) if term.namespaces else frozenset({owner_ns})

    def _profile_tasks(self) -> list[npt.NDArray[np.intp]]:
        if self._by_profile is None:
            order = np.argsort(self.state.task_profile, kind="stable")
            bounds = np.searchsorted(self.state.task_profile[order], np.arange(len(self.state.profiles) + 1))
            self._by_profile = [order[bounds[i] : bounds[i + 1]] for i in range(len(self.state.profiles))]
        return self._by_profile

    def _label_index(self) -> dict[tuple[str, str], list[int]]:
        if self._labels_index is None:
            index: dict[tuple[str, str], list[int]] = {}
            for i, prof in enumerate(self.state.profiles):
                for kv in prof.labels.items():
                    index.setdefault(kv, []).append(i)
            self._labels_index = index
        return self._labels_index

    def matching_profiles(self, selector: pb.LabelSelector) -> npt.NDArray[np.intp]:
        """Profiles whose labels a selector matches (inverted index on matchLabels, then a check)."""
        key = selector.SerializeToString(deterministic=True)
        hit = self._profile_match.get(key)
        if hit is None:
            if selector.match_labels:
                index = self._label_index()
                candidates = set.intersection(*(set(index.get(kv, ())) for kv in selector.match_labels.items()))
            else:
                candidates = set(range(len(self.state.profiles)))
            profiles = self.state.profiles
            hit = np.array(
                sorted(i for i in candidates if label_selector_matches(selector, profiles[i].labels)), np.intp
            )
            self._profile_match[key] = hit
        return hit

    def matching_tasks(self, selector: pb.LabelSelector, namespaces: frozenset[str] | None) -> npt.NDArray[np.intp]:
        """Indices of tasks (placed or not) whose labels and namespace match, ascending. Labels and
        namespaces never change during a simulation, so the answer is cached per question."""
        key = (selector.SerializeToString(deterministic=True), namespaces)
        hit = self._task_match.get(key)
        if hit is None:
            hit = self._task_match[key] = self._matching_tasks(selector, namespaces)
        return hit

    def _matching_tasks(self, selector: pb.LabelSelector, namespaces: frozenset[str] | None) -> npt.NDArray[np.intp]:
        by_profile = self._profile_tasks()
        chosen = [by_profile[i] for i in self.matching_profiles(selector)]
        tasks = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.intp)
        if namespaces is not None and tasks.size:
            ids = [i for i, name in enumerate(self.state.namespaces) if name in namespaces]
            tasks = tasks[np.isin(self.state.task_namespace[tasks], ids)]
        return tasks

    def domain_counts(
        self, key: str, tasks: npt.NDArray[np.intp], sim: Simulation, include_releasing: bool = True
    ) -> npt.NDArray[np.int64]:
        """How many of ``tasks`` sit in each domain of label ``key`` (index = value code)."""
        codes, values, _ = self.labels.column(key)
        placed = tasks[sim.on_node()[tasks]]
        if not include_releasing:
            placed = placed[sim.status[placed] != RELEASING]
        node_codes = codes[sim.node_of[placed]]
        return np.bincount(node_codes[node_codes >= 0], minlength=len(values)).astype(np.int64)

    # -- dynamic checks --------------------------------------------------------------------

    def interpod(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None) -> I8:
        """InterPodAffinity Filter on ``nodes`` (default all): existing pods' anti-affinity, then
        affinity, then anti-affinity. Returns one code per node of ``nodes``."""
        idx = np.arange(self.state.n_nodes) if nodes is None else nodes
        n = idx.size
        code = np.zeros(n, np.int8)
        # 1. Existing pods whose required anti-affinity terms match this pod.
        targets = self._anti_targets(subj) if self._anti_groups else []
        if targets:
            on_node = sim.on_node()
            for g, key in targets:
                members = self._anti_groups[g][2]
                placed = members[on_node[members]]
                if subj.task is not None:
                    placed = placed[placed != subj.task]
                codes = self.labels.column(key)[0]
                doms = np.unique(codes[sim.node_of[placed]])
                doms = doms[doms >= 0]
                if doms.size:
                    code[(code == P_OK) & np.isin(codes[idx], doms)] = P_EXISTING_ANTI
        prof = subj.profile
        # 2. Required affinity: all terms satisfied by pods matching every term.
        if prof.pod_affinity:
            terms = [self._term(t, subj.namespace) for t in prof.pod_affinity]
            match_all = self.matching_tasks(terms[0].selector, terms[0].namespaces)
            for t in terms[1:]:
                match_all = np.intersect1d(match_all, self.matching_tasks(t.selector, t.namespaces))
            if subj.task is not None:
                match_all = match_all[match_all != subj.task]
            ok = np.ones(n, bool)
            exists = np.ones(n, bool)
            for t in terms:
                codes = self.labels.column(t.key)[0][idx]
                counts = self.domain_counts(t.key, match_all, sim)
                ok &= codes >= 0
                exists &= (codes >= 0) & (counts[np.maximum(codes, 0)] > 0) if counts.size else False
            nobody = not sim.on_node()[match_all].any()
            if nobody and all(
                (t.namespaces is None or subj.namespace in t.namespaces)
                and label_selector_matches(t.selector, subj.labels)
                for t in terms
            ):
                passed = ok  # the first pod of a group with affinity to itself
            else:
                passed = ok & exists
            code[(code == P_OK) & ~passed] = P_AFFINITY
        # 3. Required anti-affinity: no matching pod in the node's domain, term by term.
        for t in (self._term(x, subj.namespace) for x in prof.pod_anti_affinity):
            tasks = self.matching_tasks(t.selector, t.namespaces)
            if subj.task is not None:
                tasks = tasks[tasks != subj.task]
            codes = self.labels.column(t.key)[0][idx]
            counts = self.domain_counts(t.key, tasks, sim)
            blocked = (codes >= 0) & (counts[np.maximum(codes, 0)] > 0) if counts.size else np.zeros(n, bool)
            code[(code == P_OK) & blocked] = P_ANTI
        return code

    def pod_level(self, subj: Subject) -> bool:
        """Does the pod face checks beyond its node-only ones (its own affinity, spread or host
        ports, or an existing pod's anti-affinity toward it)?"""
        prof = subj.profile
        return bool(
            prof.pod_affinity
            or prof.pod_anti_affinity
            or prof.topology_spread_constraints
            or task_ports(prof)
            or (self._anti_groups and self._anti_targets(subj))
        )

    def _anti_targets(self, subj: Subject) -> list[tuple[int, str]]:
        """(anti-affinity group, topology key) pairs whose required term matches ``subj``.

        For profiles of the snapshot an inverted map is built once (group terms -> matching
        profiles); inline subjects are checked term by term.
        """
        if subj.profile_index is None:
            return [
                (g, term.topology_key)
                for g, (gprof, owner_ns, _) in enumerate(self._anti_groups)
                for term in gprof.pod_anti_affinity
                if ((nss := self.term_namespaces(term, owner_ns)) is None or subj.namespace in nss)
                and label_selector_matches(term.label_selector, subj.labels)
            ]
        if self._anti_by_profile is None:
            targets: dict[int, list[tuple[int, str, frozenset[str] | None]]] = {}
            for g, (gprof, owner_ns, _) in enumerate(self._anti_groups):
                for term in gprof.pod_anti_affinity:
                    nss = self.term_namespaces(term, owner_ns)
                    for prof in self.matching_profiles(term.label_selector):
                        targets.setdefault(int(prof), []).append((g, term.topology_key, nss))
            self._anti_by_profile = targets
        return [
            (g, key)
            for g, key, nss in self._anti_by_profile.get(subj.profile_index, ())
            if nss is None or subj.namespace in nss
        ]

    def _term(self, term: pb.PodAffinityTerm, owner_ns: str, weight: int = 0) -> _Term:
        if not term.topology_key:
            raise InputError("pod affinity term.topology_key", "missing")
        return _Term(term.label_selector, self.term_namespaces(term, owner_ns), term.topology_key, weight)

    def spread_selector(self, c: pb.TopologySpreadConstraint, labels: Mapping[str, str]) -> pb.LabelSelector:
        sel = pb.LabelSelector()
        sel.CopyFrom(c.label_selector)
        for key in c.match_label_keys:
            if key in labels:
                sel.match_expressions.add(key=key, operator="In", values=[labels[key]])
        return sel

    def spread_eligible(self, subj: Subject, constraints: Iterable[pb.TopologySpreadConstraint]) -> Mask:
        """Nodes whose pods count for spreading: inclusion policies and every topology key present."""
        cons = list(constraints)
        eligible = np.ones(self.state.n_nodes, bool)
        for c in cons:
            eligible &= self.labels.has(c.topology_key)
        if any((c.node_affinity_policy or "Honor") == "Honor" for c in cons):
            eligible &= node_affinity_mask(self.labels, subj.profile)
        if any((c.node_taints_policy or "Ignore") == "Honor" for c in cons):
            ids, sets = self._taint_set_ids()
            ok_set = np.array([first_untolerated(s, list(subj.profile.tolerations)) is None for s in sets], bool)
            eligible &= ok_set[ids]
        return eligible

    def _spread_nodes(
        self, subj: Subject, hard: list[pb.TopologySpreadConstraint], c: pb.TopologySpreadConstraint
    ) -> tuple[Mask, npt.NDArray[np.int32]]:
        """(eligible nodes, domains among them) for one constraint: node-only, so cached."""
        key = (
            pb.TaskProfile(
                node_selector=subj.profile.node_selector,
                required_node_affinity=subj.profile.required_node_affinity,
                tolerations=subj.profile.tolerations,
                topology_spread_constraints=hard,
            ).SerializeToString(deterministic=True),
            c.topology_key,
        )
        hit = self._spread_static.get(key)
        if hit is None:
            eligible = self.spread_eligible(subj, hard)
            codes = self.labels.column(c.topology_key)[0]
            hit = self._spread_static[key] = (eligible, np.unique(codes[eligible & (codes >= 0)]))
        return hit

    def spread(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None) -> I8:
        """PodTopologySpread Filter over DoNotSchedule constraints, on ``nodes`` (default all);
        one code per node of ``nodes``."""
        idx = np.arange(self.state.n_nodes) if nodes is None else nodes
        code = np.zeros(idx.size, np.int8)
        hard = [c for c in subj.profile.topology_spread_constraints if c.when_unsatisfiable in ("", "DoNotSchedule")]
        if not hard:
            return code
        eligible, _ = self._spread_nodes(subj, hard, hard[0])
        for c in hard:
            if c.max_skew < 1:
                raise InputError("topology_spread_constraints.max_skew", f"must be >= 1, got {c.max_skew}")
            sel = self.spread_selector(c, subj.labels)
            tasks = self.matching_tasks(sel, frozenset({subj.namespace}))
            if subj.task is not None:
                tasks = tasks[tasks != subj.task]
            codes, values, _ = self.labels.column(c.topology_key)
            tasks = tasks[sim.on_node()[tasks] & (sim.status[tasks] != RELEASING)]
            tasks = tasks[eligible[sim.node_of[tasks]]]
            dom_of_task = codes[sim.node_of[tasks]]
            counts = np.bincount(dom_of_task[dom_of_task >= 0], minlength=len(values))
            domains = self._spread_nodes(subj, hard, c)[1]
            min_count = int(counts[domains].min()) if domains.size else 0
            if c.min_domains > 0 and domains.size < c.min_domains:
                min_count = 0
            self_match = 1 if label_selector_matches(sel, subj.labels) else 0
            sub = codes[idx]
            missing = sub < 0
            skew = counts[np.maximum(sub, 0)] + self_match - min_count
            code[(code == T_OK) & missing] = T_LABEL
            code[(code == T_OK) & ~missing & (skew > c.max_skew)] = T_SKEW
        return code

    # -- the whole check ---------------------------------------------------------------------

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
            taint = self.static(subj.profile, profile_index=subj.profile_index).taint[idx]
            result.groups = [(reasons, idx[members]) for reasons, members in self._explain(subj, ev, taint, idx)]
        return result

    def feasible_nodes(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """The nodes of ``nodes`` where ``subj`` passes every check (the planner's hot path)."""
        ok: npt.NDArray[np.intp] = nodes[self._evaluate(subj, sim, nodes, fits_idle=False).ok]
        return ok

    def _evaluate(self, subj: Subject, sim: Simulation, idx: npt.NDArray[np.intp], *, fits_idle: bool) -> _Eval:
        """Every check on the nodes ``idx``, per position. Pod-level checks (affinity, spread,
        ports) run only when the pod, or an existing pod's anti-affinity, gives them work."""
        state = self.state
        prof = subj.profile
        dims = self.fit_dims(subj.req)
        first_fail = kernels.first_insufficient(subj.req, sim.future_idle()[idx], dims)
        fits = first_fail < 0
        if subj.unknown_resources:
            fits[:] = False
        idle = kernels.first_insufficient(subj.req, sim.idle()[idx], dims) < 0 if fits_idle else fits
        pod_full = sim.pod_count[idx] >= state.node_alloc[idx, self.pods_dim]
        static_code = self.static(prof, profile_index=subj.profile_index).code[idx]
        ok = fits & ~pod_full & (static_code == S_OK)
        ports = _NO_BOOL if not prof.host_ports else np.zeros(idx.size, bool)
        if prof.host_ports and self.conf.predicate_on("NodePorts"):
            wanted_ports = task_ports(prof)
            if wanted_ports:
                used = sim.ports()
                for k in np.flatnonzero(ok):
                    ports[k] = ports_conflict(wanted_ports, used.get(int(idx[k])))
                ok &= ~ports
        inter = _NO_CODE
        if self.conf.predicate_on("InterPodAffinity") and (
            prof.pod_affinity or prof.pod_anti_affinity or (self._anti_groups and self._anti_targets(subj))
        ):
            inter = self.interpod(subj, sim, idx)
            ok &= inter == P_OK
        spread = _NO_CODE
        if self.conf.predicate_on("PodTopologySpread") and prof.topology_spread_constraints:
            spread = self.spread(subj, sim, idx)
            ok &= spread == T_OK
        n = idx.size
        return _Eval(
            ok,
            idle,
            first_fail,
            pod_full,
            static_code,
            ports if ports.size == n else np.zeros(n, bool),
            inter if inter.size == n else np.zeros(n, np.int8),
            spread if spread.size == n else np.zeros(n, np.int8),
        )

    def _explain(
        self, subj: Subject, ev: _Eval, taint: npt.NDArray[np.int32], nodes: npt.NDArray[np.intp]
    ) -> list[tuple[list[str], npt.NDArray[np.intp]]]:
        """Failed positions grouped by their reason list (vectorised: one decode per distinct list).
        ``ev`` holds per-position results, ``taint`` the first untolerated taint per position, and
        ``nodes`` maps positions to node indices."""
        idx = np.flatnonzero(~ev.ok)
        if idx.size == 0:
            return []
        if subj.unknown_resources:
            return [([INSUFFICIENT.format(subj.unknown_resources[0])], idx)]
        ids, _sets = self._taint_set_ids()
        n_taint = int(taint.max()) + 2
        # Only what the reasons show goes into the key: checks after a final failure are dropped.
        res_fail = ev.first_fail[idx] >= 0
        static_fail = ~res_fail & (ev.static_code[idx] != S_OK)
        inter_fail = ~res_fail & ~static_fail & (ev.inter[idx] != P_OK)
        taint_key = np.where(taint[idx] >= 0, ids[nodes[idx]].astype(np.int64) * n_taint + taint[idx] + 1, 0)
        taint_key = np.where(static_fail, taint_key, 0)
        key = ev.first_fail[idx].astype(np.int64) + 1
        parts = (
            (np.where(res_fail, 0, ev.pod_full[idx]), 2),
            (np.where(res_fail, 0, ev.static_code[idx]), 4),
            (np.where(res_fail | static_fail, 0, ev.ports[idx]), 2),
            (np.where(res_fail | static_fail, 0, ev.inter[idx]), 4),
            (np.where(res_fail | static_fail | inter_fail, 0, ev.spread[idx]), 3),
        )
        for part, size in parts:
            key = key * size + part.astype(np.int64)
        key = key * (int(taint_key.max()) + 1) + taint_key
        uniq, inverse = np.unique(key, return_inverse=True)
        groups = []
        for g in range(len(uniq)):
            members = idx[inverse.ravel() == g]
            groups.append((self._reasons_of(int(members[0]), ev, taint, nodes), members))
        return groups

    def _reasons_of(self, i: int, ev: _Eval, taint: npt.NDArray[np.int32], nodes: npt.NDArray[np.intp]) -> list[str]:
        if ev.first_fail[i] >= 0:
            return [INSUFFICIENT.format(self.state.resources[ev.first_fail[i]])]
        reasons = [POD_NUMBER] if ev.pod_full[i] else []
        sc = ev.static_code[i]
        if sc != S_OK:
            if sc == S_UNSCHEDULABLE:
                reasons.append(UNSCHEDULABLE)
            elif sc == S_AFFINITY:
                reasons.append(NODE_AFFINITY)
            else:
                t = self.state.nodes[int(nodes[i])].taints[taint[i]]
                reasons.append(TAINT.format(t.key, t.value))
            return reasons
        if ev.ports[i]:
            reasons.append(PORTS)
        if ev.inter[i] != P_OK:
            reasons.append(
                {P_EXISTING_ANTI: EXISTING_ANTI_AFFINITY, P_AFFINITY: AFFINITY, P_ANTI: ANTI_AFFINITY}[int(ev.inter[i])]
            )
            return reasons
        if ev.spread[i] == T_LABEL:
            reasons.append(SPREAD_LABEL)
        elif ev.spread[i] == T_SKEW:
            reasons.append(SPREAD)
        return reasons
