"""PodTopologySpread Filter over the pod's DoNotSchedule constraints (kubernetes v1.34.1
pkg/scheduler/framework/plugins/podtopologyspread/filtering.go).

Constraints are checked in order and the first failing one decides the node: a node without the
constraint's topology key is UnschedulableAndUnresolvable ("... (missing required label)") — also
when no node at all has the key — and a skew above maxSkew is Unschedulable.

Which nodes count and which domains exist depend on the pod's constraints alone, so they are
cached per constraint set; only the per-domain pod counts are read from the simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror.domaincount import counted, domain_min, too_skewed
from sidecar.mirror.nodechecks import NodeChecks
from sidecar.mirror.podindex import PodIndex
from sidecar.mirror.selectors import NodeLabels, first_untolerated, label_selector_matches, node_affinity_mask
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import I8, T_LABEL, T_OK, T_SKEW, Mask, Subject
from sidecar.snapshot.state import ClusterState


def spread_selector(c: pb.TopologySpreadConstraint, labels: Mapping[str, str]) -> pb.LabelSelector:
    """The constraint's selector narrowed by matchLabelKeys to the pod's own values."""
    sel = pb.LabelSelector()
    sel.CopyFrom(c.label_selector)
    for key in c.match_label_keys:
        if key in labels:
            sel.match_expressions.add(key=key, operator="In", values=[labels[key]])
    return sel


@dataclass(frozen=True)
class SpreadRule:
    """One DoNotSchedule constraint of a pod, with what does not depend on the simulation."""

    constraint: pb.TopologySpreadConstraint
    tasks: npt.NDArray[np.intp]  # pods its selector matches in the pod's namespace (placed or not)
    codes: npt.NDArray[np.int32]  # the topology key's value code per node (-1: no key)
    n_values: int
    domains: npt.NDArray[np.int32]  # domains among the eligible nodes
    self_match: int
    #: nodes whose pods count for this constraint: every hard constraint's key present, and this
    #: constraint's own inclusion policies (Kubernetes applies them per constraint)
    eligible: Mask

    @property
    def min_forced_zero(self) -> bool:
        """Fewer domains than minDomains: the global minimum counts as 0."""
        return self.constraint.min_domains > 0 and self.domains.size < self.constraint.min_domains

    def min_count(self, counts: npt.NDArray[np.int64]) -> int:
        """The global minimum the skew is measured from."""
        return domain_min(counts, self.domains, self.min_forced_zero)


class TopologySpread:
    def __init__(self, state: ClusterState, labels: NodeLabels, index: PodIndex, node_checks: NodeChecks) -> None:
        self.state = state
        self.labels = labels
        self.index = index
        self.node_checks = node_checks
        self._static: dict[tuple[bytes, bytes], tuple[Mask, npt.NDArray[np.int32]]] = {}
        self._rules_cache: dict[tuple[int, str], list[SpreadRule]] = {}

    def eligible(
        self, subj: Subject, constraints: Iterable[pb.TopologySpreadConstraint], c: pb.TopologySpreadConstraint
    ) -> Mask:
        """Nodes whose pods count for constraint ``c``: every constraint's topology key present
        (nodeLabelsMatchSpreadConstraints), then ``c``'s own inclusion policies — per constraint,
        as kubernetes v1.34.1 podtopologyspread/filtering.go calPreFilterState applies
        matchNodeInclusionPolicies (found by bench.fidelity, seed 100271)."""
        eligible = np.ones(self.state.n_nodes, bool)
        for other in constraints:
            eligible &= self.labels.has(other.topology_key)
        if (c.node_affinity_policy or "Honor") == "Honor":
            eligible &= node_affinity_mask(self.labels, subj.profile)
        if (c.node_taints_policy or "Ignore") == "Honor":
            ids, sets = self.node_checks.taint_sets()
            ok_set = np.array([first_untolerated(s, list(subj.profile.tolerations)) is None for s in sets], bool)
            eligible &= ok_set[ids]
        return eligible

    def _nodes(
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
            c.SerializeToString(deterministic=True),
        )
        hit = self._static.get(key)
        if hit is None:
            eligible = self.eligible(subj, hard, c)
            codes = self.labels.column(c.topology_key)[0]
            hit = self._static[key] = (eligible, np.unique(codes[eligible & (codes >= 0)]))
        return hit

    def rules(self, subj: Subject) -> list[SpreadRule]:
        """Everything in the filter that does not depend on where pods sit: per DoNotSchedule
        constraint, its selector's pods, the key's column, its eligible nodes and domains and
        whether the pod matches itself. Cached per (profile row, namespace): the planner asks about the same few
        profiles thousands of times."""
        key = (subj.profile_index, subj.namespace) if subj.profile_index is not None else None
        hit = self._rules_cache.get(key) if key is not None else None
        if hit is not None:
            return hit
        hard = [c for c in subj.profile.topology_spread_constraints if c.when_unsatisfiable in ("", "DoNotSchedule")]
        rules: list[SpreadRule] = []
        for c in hard:
            if c.max_skew < 1:  # refused when the profile is decoded; kept for hand-built subjects
                raise InputError("topology_spread_constraints.max_skew", f"must be >= 1, got {c.max_skew}")
            sel = spread_selector(c, subj.labels)
            codes, values, _ = self.labels.column(c.topology_key)
            eligible, domains = self._nodes(subj, hard, c)
            rules.append(
                SpreadRule(
                    c,
                    self.index.matching_tasks(sel, frozenset({subj.namespace})),
                    codes,
                    max(len(values), 1),
                    domains,
                    1 if label_selector_matches(sel, subj.labels) else 0,
                    eligible,
                )
            )
        if key is not None:
            self._rules_cache[key] = rules
        return rules

    def filter(self, subj: Subject, sim: Simulation, nodes: npt.NDArray[np.intp] | None = None) -> I8:
        """One T_* code per node of ``nodes`` (default all)."""
        idx = np.arange(self.state.n_nodes) if nodes is None else nodes
        code = np.zeros(idx.size, np.int8)
        rules = self.rules(subj)
        if not rules:
            return code
        for r in rules:
            counts = domain_counts(r, r.eligible, sim, subj.task)
            min_count = r.min_count(counts)
            sub = r.codes[idx]
            missing = sub < 0
            skewed = too_skewed(counts[np.maximum(sub, 0)], r.self_match, min_count, r.constraint.max_skew)
            code[(code == T_OK) & missing] = T_LABEL
            code[(code == T_OK) & ~missing & skewed] = T_SKEW
        return code


def domain_counts(r: SpreadRule, eligible: Mask, sim: Simulation, skip: int | None) -> npt.NDArray[np.int64]:
    """Pods the rule's selector matches per domain: placed, not releasing, on a node whose pods
    count (``eligible``), other than the pod being placed (``skip``)."""
    tasks = counted(sim, r.tasks if skip is None else r.tasks[r.tasks != skip], include_releasing=False)
    tasks = tasks[eligible[sim.node_of[tasks]]]
    dom_of_task = r.codes[sim.node_of[tasks]]
    # At least one slot, so that indexing stays valid when no node has the key at all.
    return np.bincount(dom_of_task[dom_of_task >= 0], minlength=r.n_values).astype(np.int64)
