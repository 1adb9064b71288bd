"""Pod-level checks that count pods per topology domain, in the one form the planner's kernel reads.

Two of the Filter's pod-level checks come down to counting, per value of a node label (a domain),
the pods of some set placed there:

* PodTopologySpread (spread.py), per DoNotSchedule constraint: a node fails when it lacks the key,
  or when its domain's count plus one (if the pod matches its own selector) minus the minimum over
  the eligible domains exceeds maxSkew. Only pods on eligible nodes count, releasing ones do not.
* InterPodAffinity's required anti-affinity (interpod.py), the pod's own terms and every existing
  pod's terms that select it: a node fails when its domain holds one of those pods (releasing ones
  included); a node without the key passes.

So both are one rule, "count + self - min > maxSkew fails", with anti-affinity as maxSkew 0 and a
minimum of 0, written once in :mod:`sidecar.mirror.domaincount` (``too_skewed`` in
``ext/volcano.pxd`` for the kernel). Pod affinity and host ports are not counts of this kind: a pod
with either has no rules (None) and is planned with the Filter itself. The Filter stays the reference; the planner's
kernel is checked against it on real states (tests/repack/test_search.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.mirror import podchecks
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.domaincount import counted
from sidecar.mirror.interpod import InterPodAffinity
from sidecar.mirror.podindex import PodIndex
from sidecar.mirror.selectors import NodeLabels
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.spread import TopologySpread
from sidecar.mirror.types import Mask, Subject

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Tasks = npt.NDArray[np.intp]


@dataclass(frozen=True)
class DomainRule:
    ident: tuple[object, ...]  # pods sharing a rule share its identity (and its counts)
    tasks: Tasks  # the pods that count, placed or not (ascending)
    codes: npt.NDArray[np.int32]  # each node's domain (-1: no key)
    n_values: int
    eligible: Mask | None  # nodes whose pods count (None: every node)
    domains: npt.NDArray[np.int32]  # the domains the minimum is taken over
    self_match: int  # the pod counts in its own domain
    max_skew: int
    zero_min: bool  # the minimum is 0 (anti-affinity; spread with fewer domains than minDomains)
    missing_ok: bool  # a node without the key passes
    include_releasing: bool

    def domain_counts(self, sim: Simulation, skip: Tasks) -> tuple[I32, I64]:
        """The domains holding the rule's pods (ascending) and how many each, without ``skip``
        (pods as if evicted); sparse, as a rule's pods sit in few of a key's many domains."""
        tasks = self.tasks
        if skip.size:
            gone = np.sort(skip)
            at = np.minimum(np.searchsorted(gone, tasks), gone.size - 1)
            tasks = tasks[gone[at] != tasks]
        tasks = counted(sim, tasks, include_releasing=self.include_releasing)
        if self.eligible is not None:
            tasks = tasks[self.eligible[sim.node_of[tasks]]]
        codes = self.codes[sim.node_of[tasks]]
        domains, counts = np.unique(codes[codes >= 0], return_counts=True)
        return domains.astype(np.int32), counts.astype(np.int64)

    def contains(self, tasks: Tasks) -> npt.NDArray[np.bool_]:
        """Which of ``tasks`` the rule counts (``self.tasks`` is ascending)."""
        if not self.tasks.size:
            return np.zeros(tasks.size, bool)
        at = np.minimum(np.searchsorted(self.tasks, tasks), self.tasks.size - 1)
        found: npt.NDArray[np.bool_] = self.tasks[at] == tasks
        return found


def domain_rules(
    conf: SchedulerConf,
    checks: frozenset[str],
    spread: TopologySpread,
    interpod: InterPodAffinity,
    index: PodIndex,
    labels: NodeLabels,
    subj: Subject,
) -> list[DomainRule] | None:
    """Every pod-level check ``subj`` faces (``checks``, :func:`podchecks.active`) as domain
    rules, or None when one of them is not (the predicates' parts it reads are passed in:
    ``Predicates.domain_rules`` is the caller)."""
    prof = subj.profile
    if not podchecks.countable(conf, prof):
        return None
    rules: list[DomainRule] = []
    key = (subj.profile_index, subj.namespace)
    if "PodTopologySpread" in checks:
        for j, r in enumerate(spread.rules(subj)):
            rules.append(
                DomainRule(
                    ("spread", *key, j),
                    r.tasks,
                    r.codes,
                    r.n_values,
                    r.eligible,
                    r.domains.astype(np.int32),
                    r.self_match,
                    r.constraint.max_skew,
                    r.min_forced_zero,
                    False,
                    False,
                )
            )
    none = np.zeros(0, np.int32)
    for j, term in enumerate(prof.pod_anti_affinity if "PodAntiAffinity" in checks else ()):
        t = interpod.term(term, subj.namespace)
        codes, values, _ = labels.column(t.key)
        tasks = index.matching_tasks(t.selector, t.namespaces)
        rules.append(DomainRule(("anti", *key, j), tasks, codes, len(values), None, none, 0, 0, True, True, True))
    for g, topology in index.anti_targets(subj) if "ExistingAntiAffinity" in checks else []:
        codes, values, _ = labels.column(topology)
        members = index.anti_groups[g][2]
        rules.append(
            DomainRule(("group", g, topology), members, codes, len(values), None, none, 0, 0, True, True, True)
        )
    return rules
