"""Which pods a label selector or affinity term reaches, and where they sit.

Labels and namespaces never change during a simulation, so the set of matching tasks is a pure
function of the question and is cached; only where those tasks sit (:meth:`PodIndex.domain_counts`)
is read from the simulation on each call. InterPodAffinity, PodTopologySpread and the scorers
share one index so they share its caches.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.domaincount import counted
from sidecar.mirror.selectors import NodeLabels, label_selector_matches
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Namespaces, Subject
from sidecar.snapshot.state import ClusterState

Tasks = npt.NDArray[np.intp]


class PodIndex:
    def __init__(self, state: ClusterState, labels: NodeLabels) -> None:
        self.state = state
        self.labels = labels
        self._profile_match: dict[bytes, Tasks] = {}
        self._task_match: dict[tuple[bytes, Namespaces], Tasks] = {}
        self._by_profile: list[Tasks] | None = None
        self._labels_index: dict[tuple[str, str], list[int]] | None = None
        self._keys_index: dict[str, list[int]] | None = None
        #: Pods with required anti-affinity, grouped by (profile, namespace): they share their terms.
        self.anti_groups: list[tuple[pb.TaskProfile, str, Tasks]] = []
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
                self.anti_groups.append(
                    (state.profiles[state.task_profile[t0]], state.namespaces[state.task_namespace[t0]], members)
                )
        self._anti_by_profile: dict[int, list[tuple[int, str, Namespaces]]] | None = None

    def term_namespaces(self, term: pb.PodAffinityTerm | pb.TopologySpreadConstraint, owner_ns: str) -> Namespaces:
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

    def _profile_tasks(self) -> list[Tasks]:
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

    def _key_index(self) -> dict[str, list[int]]:
        if self._keys_index is None:
            keys: dict[str, list[int]] = {}
            for (k, _), profiles in self._label_index().items():
                keys.setdefault(k, []).extend(profiles)
            self._keys_index = keys
        return self._keys_index

    def matching_profiles(self, selector: pb.LabelSelector) -> Tasks:
        """Profiles whose labels a selector matches (inverted index on matchLabels, then a check)."""
        key = selector.SerializeToString(deterministic=True)
        hit = self._profile_match.get(key)
        if hit is None:
            index = self._label_index()
            # Narrow by what a match requires (matchLabels pairs; In: one of its values; Exists: the
            # key); label_selector_matches below stays the judge of every survivor.
            needs = [set(index.get(kv, ())) for kv in selector.match_labels.items()]
            for req in selector.match_expressions:
                if req.operator == "In":
                    needs.append(set().union(*(index.get((req.key, v), ()) for v in req.values)))
                elif req.operator == "Exists":
                    needs.append(set(self._key_index().get(req.key, ())))
            candidates = set.intersection(*needs) if needs else set(range(len(self.state.profiles)))
            profiles = self.state.profiles
            hit = np.array(
                sorted(i for i in candidates if label_selector_matches(selector, profiles[i].labels)), np.intp
            )
            self._profile_match[key] = hit
        return hit

    def matching_tasks(self, selector: pb.LabelSelector, namespaces: Namespaces) -> Tasks:
        """Indices of tasks (placed or not) whose labels and namespace match, ascending; cached
        per question."""
        key = (selector.SerializeToString(deterministic=True), namespaces)
        hit = self._task_match.get(key)
        if hit is None:
            hit = self._task_match[key] = self._matching_tasks(selector, namespaces)
        return hit

    def _matching_tasks(self, selector: pb.LabelSelector, namespaces: Namespaces) -> Tasks:
        by_profile = self._profile_tasks()
        chosen = [by_profile[i] for i in self.matching_profiles(selector)]
        tasks = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.intp)
        if namespaces is not None and tasks.size:
            ids = [i for i, name in enumerate(self.state.namespaces) if name in namespaces]
            tasks = tasks[np.isin(self.state.task_namespace[tasks], ids)]
        return tasks

    def domain_counts(
        self, key: str, tasks: Tasks, sim: Simulation, include_releasing: bool = True
    ) -> npt.NDArray[np.int64]:
        """How many of ``tasks`` sit in each domain of label ``key`` (index = value code)."""
        codes, values, _ = self.labels.column(key)
        placed = counted(sim, tasks, include_releasing=include_releasing)
        node_codes = codes[sim.node_of[placed]]
        return np.bincount(node_codes[node_codes >= 0], minlength=len(values)).astype(np.int64)

    def anti_targets(self, subj: Subject) -> list[tuple[int, str]]:
        """(anti-affinity group, topology key) pairs whose required term matches ``subj``.

        For profiles of the snapshot an inverted map is built once (group terms -> matching
        profiles); inline subjects are checked term by term.
        """
        if subj.profile_index is None:
            return [
                (g, term.topology_key)
                for g, (gprof, owner_ns, _) in enumerate(self.anti_groups)
                for term in gprof.pod_anti_affinity
                if ((nss := self.term_namespaces(term, owner_ns)) is None or subj.namespace in nss)
                and label_selector_matches(term.label_selector, subj.labels)
            ]
        if self._anti_by_profile is None:
            targets: dict[int, list[tuple[int, str, Namespaces]]] = {}
            for g, (gprof, owner_ns, _) in enumerate(self.anti_groups):
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
