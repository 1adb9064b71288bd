"""The node-level search bound to one planning loop: which candidates it takes, and what it reads.

A candidate goes to the kernel (search.place_pods) when every pod's pod-level checks are domain
rules -- topology spread, required anti-affinity -- or none; its rules are counted on the
Simulation when it is tried, with its own pods as if evicted. The kernel reads the Simulation's
rows and the receiver state live, and learns from :meth:`NodeLevelPods.retire` which nodes a
committed move made useless.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.mirror.core import Mirror
from sidecar.mirror.domainrules import DomainRule
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import task_subject
from sidecar.repack.candidates import CandidatePods
from sidecar.repack.receivers import Receivers
from sidecar.repack.search import PLACEMENT_BUDGET, PodsInput, RulesInput, bind

I64 = npt.NDArray[np.int64]


class _Rows:
    """Distinct per-node arrays stacked once each ([rows, N]); None stands for all ones."""

    def __init__(self, n_nodes: int, dtype: type) -> None:
        self.matrix: npt.NDArray[Any] = np.zeros((0, n_nodes), dtype)
        self._index: dict[int, int] = {}
        self._kept: list[object] = []  # the arrays whose id() keys the index stay alive

    def row(self, values: npt.NDArray[Any] | None) -> int:
        hit = self._index.get(id(values))
        if hit is None:
            full = np.ones(self.matrix.shape[1], bool) if values is None else values
            self.matrix = np.ascontiguousarray(np.vstack([self.matrix, full.astype(self.matrix.dtype)]))
            hit = self._index[id(values)] = self.matrix.shape[0] - 1
            self._kept.append(values)
        return hit


class NodeLevelPods:
    """The candidates whose pods' pod-level checks are all domain rules (spread, anti-affinity)
    or none, and :func:`place_pods` bound to one planning loop's arrays (the Simulation's rows and
    the receiver state, read live); a candidate's rules are counted on the Simulation at its try."""

    def __init__(self, mirror: Mirror, pods: CandidatePods, sim: Simulation, receivers: Receivers) -> None:
        state, checks = mirror.state, mirror.predicates
        self.mirror, self.sim, self.pods = mirror, sim, pods
        req = np.ascontiguousarray(state.task_req[pods.pods])
        sizes = np.diff(pods.bounds)
        # whether a pod's checks are all domain rules is a property of its profile; the rules
        # themselves (per profile and namespace) are built when a candidate is first tried
        profiles, inverse = np.unique(state.task_profile[pods.pods], return_inverse=True)
        countable = np.array([checks.countable(p) for p in profiles.tolist()], bool)
        unsupported = ~countable[inverse.ravel()] if pods.pods.size else np.zeros(0, bool)
        self.simple = (np.bincount(pods.cand[unsupported], minlength=sizes.size) == 0) & (sizes > 0)
        # candidates none of whose pods faces a pod-level check: no rules to gather at their try
        facing = ~np.array([checks.faces_none(p) for p in profiles.tolist()], bool)
        some = facing[inverse.ravel()] if pods.pods.size else np.zeros(0, bool)
        self._ruleless = np.bincount(pods.cand[some], minlength=sizes.size) == 0
        pair = state.task_profile[pods.pods].astype(np.int64) * max(len(state.namespaces), 1)
        self._pair: list[int] = (pair + state.task_namespace[pods.pods]).tolist()
        self._rules: dict[int, list[DomainRule]] = {}
        # per-node rows the rules share (a topology key's codes, a set of counting nodes), each
        # copied once into the matrix the kernel reads, not per try
        self._codes = _Rows(state.n_nodes, np.int32)
        self._counts: I64 = np.zeros((0, 0), np.int64)  # rules' counts per domain, zero between tries
        self._written: list[tuple[int, npt.NDArray[np.int32]]] = []
        self._eligible = _Rows(state.n_nodes, np.uint8)
        self.inp = PodsInput(
            req,
            checks.node_checks.fit_mask(req),
            pods.static_row,
            pods.static_ok,
            state.node_alloc,
            sim.used,
            sim.releasing,
            sim.pipelined,
            sim.future_idle(),
            sim.pod_count,
            receivers.pod_cap,
            receivers.allowed.view(np.uint8),
            receivers.stays.view(np.uint8),
            receivers.capacity,
            receivers.cost,
            receivers.rank,
            receivers.goal,
        )
        self._search = bind(self.inp, int(sizes.max(initial=0)))  # the compiled kernel (planner: kernel_in_use)

    def retire(self, nodes: list[int]) -> None:
        """A committed move touched ``nodes``: the kernel stops scanning those now of no use."""
        self._search.retire(nodes)

    def place(self, i: int, stuck: set[int] | None = None) -> list[int] | None:
        """Receivers for candidate ``i``'s pods on the current rows, or None (then ``stuck`` gets
        the positions of its pods that found no receiver at all); nothing is changed."""
        a, b = int(self.pods.bounds[i]), int(self.pods.bounds[i + 1])
        rules = None if self._ruleless[i] else self.rules_input(a, b)
        try:
            targets: list[int] | None = self._search.place(a, b, PLACEMENT_BUDGET, rules)
            if targets is None and stuck is not None:
                stuck.update(self._search.stuck(b - a))
            return targets
        finally:
            for r, domains in self._written:  # the scratch is all zeros again
                self._counts[r, domains] = 0
            self._written.clear()

    def _pod_rules(self, k: int) -> list[DomainRule]:
        """Pod k's domain rules (it is in a simple candidate, so it has them, possibly none)."""
        pair = self._pair[k]
        rules = self._rules.get(pair)
        if rules is None:
            state = self.mirror.state
            rules = self.mirror.predicates.domain_rules(task_subject(state, int(self.pods.pods[k]))) or []
            self._rules[pair] = rules
        return rules

    def rules_input(self, a: int, b: int) -> RulesInput | None:
        """The domain rules of pods a..b-1 (one candidate's), counted on the Simulation with those
        pods evicted; None when they have none."""
        pods = self.pods.pods[a:b]
        rules: list[DomainRule] = []
        index: dict[tuple[object, ...], int] = {}
        pod_rules: list[int] = []
        pod_rule_off = [0]
        for k in range(a, b):
            for rule in self._pod_rules(k):
                r = index.setdefault(rule.ident, len(rules))
                if r == len(rules):
                    rules.append(rule)
                pod_rules.append(r)
            pod_rule_off.append(len(pod_rules))
        if not rules:
            return None
        # each rule's counts go into its own row of a zeroed scratch, written and cleared sparsely
        width = max(r.n_values for r in rules)
        if self._counts.shape[0] < len(rules) or self._counts.shape[1] < width:
            self._counts = np.zeros(
                (max(len(rules), self._counts.shape[0]), max(width, self._counts.shape[1])), np.int64
            )
        scratch = self._counts
        for r, rule in enumerate(rules):
            domains, counts = rule.domain_counts(self.sim, pods)
            scratch[r, domains] = counts
            self._written.append((r, domains))
        code_row = np.array([self._codes.row(r.codes) for r in rules], np.intp)
        eligible_row = np.array([self._eligible.row(r.eligible) for r in rules], np.intp)
        return RulesInput(
            counts=scratch.reshape(-1),
            count_off=(np.arange(len(rules) + 1) * scratch.shape[1]).astype(np.intp),
            codes=self._codes.matrix,
            code_row=code_row,
            domains=np.concatenate([r.domains for r in rules]).astype(np.int32),
            domain_off=np.cumsum([0] + [r.domains.size for r in rules]).astype(np.intp),
            eligible=self._eligible.matrix,
            eligible_row=eligible_row,
            self_match=np.array([r.self_match for r in rules], np.int64),
            max_skew=np.array([r.max_skew for r in rules], np.int64),
            zero_min=np.array([r.zero_min for r in rules], np.uint8),
            missing_ok=np.array([r.missing_ok for r in rules], np.uint8),
            member=np.ascontiguousarray(np.stack([r.contains(pods) for r in rules], axis=1), np.uint8),
            pod_rules=np.array(pod_rules, np.intp),
            pod_rule_off=np.array(pod_rule_off, np.intp),
        )
