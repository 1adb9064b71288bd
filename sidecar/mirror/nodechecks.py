"""Checks that read the node and the pod's own constraints only (Volcano's resource dimensions,
NodeUnschedulable, NodeAffinity, TaintToleration).

Nothing placed on a node changes their answer, so each is computed once per distinct constraint
set over all nodes (an equivalence class, :func:`static_key`) and reused for the snapshot's life.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror import podchecks
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.explain import taint_reason
from sidecar.mirror.selectors import (
    UNSCHEDULABLE_TAINT,
    NodeLabels,
    check_tolerations,
    first_untolerated,
    node_affinity_mask,
    tolerates,
)
from sidecar.mirror.types import S_AFFINITY, S_OK, S_TAINT, S_UNSCHEDULABLE, StaticResult
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import BASE_RESOURCES, PODS

TaintSets = tuple[npt.NDArray[np.int32], list[tuple[pb.Taint, ...]]]  # node -> set id, the sets


def static_key(profile: pb.TaskProfile) -> bytes:
    """What the node-only checks read of a pod: its equivalence class for them (b"" when it has
    none of them, as most pods: the empty message, without building it)."""
    if not profile.node_selector and not profile.required_node_affinity and not profile.tolerations:
        return b""
    return pb.TaskProfile(
        node_selector=profile.node_selector,
        required_node_affinity=profile.required_node_affinity,
        tolerations=profile.tolerations,
    ).SerializeToString(deterministic=True)


class NodeChecks:
    def __init__(self, state: ClusterState, conf: SchedulerConf, labels: NodeLabels) -> None:
        self.state = state
        self.conf = conf
        self.labels = labels
        self.pods_dim = state.resource(PODS)
        #: the predicates plugin's pod-number check: a node takes a pod while it holds fewer tasks
        #: than its allocatable pods, every task counted, releasing and pipelined ones too
        #: (v1.14.1 plugins/predicates/predicates.go ``Predicate``: ``MaxTaskNum <=
        #: len(nodeInfo.GetPods())`` over the session's NodeMap, framework/util.go
        #: ``GenerateNodeMapAndSlice``). Without the plugin nothing caps the count: only
        #: allocate's fit counts the slot, on FutureIdle, where a releasing pod's slot is free.
        self.pod_cap: npt.NDArray[np.float64] = (
            np.ascontiguousarray(state.node_alloc[:, self.pods_dim])
            if podchecks.switched_on(conf, "pod_number")
            else np.full(state.n_nodes, np.inf)
        )
        self._base_dims = np.array([state.resource(name) for name in BASE_RESOURCES], np.intp)
        self._scalar_dims = np.array(
            [i for i, name in enumerate(state.resources) if name not in BASE_RESOURCES], np.intp
        )
        self._dims: dict[bytes, npt.NDArray[np.intp]] = {}
        self._static: dict[bytes, StaticResult] = {}
        self._static_by_profile: dict[int, StaticResult] = {}
        self._taint_sets: TaintSets | None = None

    def fit_mask(self, req: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
        """[T, R]: 1 where LessEqual compares a request's dimension -- cpu, memory and pods always
        (Volcano v1.14.1 ``GetPodResourceRequest`` gives every task a ``pods: 1`` scalar, and
        ``LessEqualWithResourcesName`` walks every scalar of the request), any other scalar only
        when requested (the rule; :meth:`fit_dims` is its cached index form)."""
        mask = np.zeros(req.shape, np.uint8)
        mask[:, self._base_dims] = 1
        mask[:, self._scalar_dims] = req[:, self._scalar_dims] > 0
        return mask

    def fit_dims(self, req: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        """Dimensions LessEqual compares for one request (:meth:`fit_mask`), in the order the
        first insufficient one is named: cpu, memory, the scalars by name, pods last (Volcano
        walks its scalars, pods among them, in Go map order; the mirror's order is fixed and
        names the scarcer card before the pod slot). Cached per pattern."""
        key = (req[self._scalar_dims] > 0).tobytes()
        dims = self._dims.get(key)
        if dims is None:
            walked = np.flatnonzero(self.fit_mask(req[None, :])[0]).astype(np.intp)
            dims = self._dims[key] = np.r_[walked[walked != self.pods_dim], self.pods_dim].astype(np.intp)
        return dims

    def taint_sets(self) -> TaintSets:
        """Nodes share few distinct taint lists; tolerations are matched once per list."""
        if self._taint_sets is None:
            sets: list[tuple[pb.Taint, ...]] = []
            index: dict[tuple[tuple[str, str, str], ...], int] = {}
            ids = np.empty(self.state.n_nodes, np.int32)
            for i, node in enumerate(self.state.nodes):
                taints = node.taints
                key = tuple((t.key, t.value, t.effect) for t in taints) if taints else ()
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
        """NodeUnschedulable, NodeAffinity, TaintToleration over all nodes; cached per constraint
        set, and per profile row so the planner's repeated questions skip serialising the key."""
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
        taint = np.full(n, -1, np.int32)
        taint_texts: tuple[str, ...] = ()
        check_tolerations(profile.tolerations, f"{path}.tolerations")
        tolerations = list(profile.tolerations)
        # NodeUnschedulable: on with Volcano's predicates plugin, not switchable alone (podchecks)
        if podchecks.switched_on(self.conf, "NodeUnschedulable") and not any(
            tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations
        ):
            code[self.state.node_unschedulable] = S_UNSCHEDULABLE
        if podchecks.switched_on(self.conf, "NodeAffinity"):
            miss = (code == S_OK) & ~node_affinity_mask(self.labels, profile, path)
            code[miss] = S_AFFINITY
        if podchecks.switched_on(self.conf, "TaintToleration"):
            # The reason names the node's first untolerated taint (kubernetes v1.34.1
            # tainttoleration.go Filter), so nodes differ by which taint that is.
            ids, sets = self.taint_sets()
            texts: dict[str, int] = {}
            which = np.full(len(sets) + 1, -1, np.int32)  # per taint set; the last entry: none
            for j, taints in enumerate(sets):
                first = first_untolerated(taints, tolerations)
                if first is not None:
                    which[j] = texts.setdefault(taint_reason(first.key, first.value), len(texts))
            hit = (code == S_OK) & (which[ids] >= 0)
            code[hit] = S_TAINT
            taint[hit] = which[ids[hit]]
            taint_texts = tuple(texts)
        result = StaticResult(code, taint, taint_texts)
        self._static[key] = result
        if profile_index is not None:
            self._static_by_profile[profile_index] = result
        return result
