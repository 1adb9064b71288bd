"""Vocabulary shared by the predicate modules, so none of them has to import another for it.

Each check reports one small integer code per node rather than a bool, because the fit-error
wording (:mod:`sidecar.mirror.explain`) depends on which rule failed, not only on whether one did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb

if TYPE_CHECKING:
    from sidecar.snapshot.state import ClusterState

I8 = npt.NDArray[np.int8]
Mask = npt.NDArray[np.bool_]
Namespaces = frozenset[str] | None  # None = every namespace

# Node-only codes (NodeUnschedulable, NodeAffinity, TaintToleration), in Volcano's order.
S_OK: Final = 0
S_UNSCHEDULABLE: Final = 1
S_AFFINITY: Final = 2
S_TAINT: Final = 3
# InterPodAffinity codes, in the order its Filter checks (kubernetes v1.34.1
# pkg/scheduler/framework/plugins/interpodaffinity/filtering.go): the pod's own required affinity,
# its own required anti-affinity, then existing pods' required anti-affinity toward it.
P_OK: Final = 0
P_AFFINITY: Final = 1
P_ANTI: Final = 2
P_EXISTING_ANTI: Final = 3
# PodTopologySpread codes.
T_OK: Final = 0
T_SKEW: Final = 1
T_LABEL: Final = 2


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
    nonzero: npt.NDArray[np.float64] | None = None  # inline task's Task.nonzero_requests (cpu, memory)

    @property
    def labels(self) -> Mapping[str, str]:
        return self.profile.labels


def task_subject(state: ClusterState, t: int) -> Subject:
    """The snapshot's task ``t`` as a Subject."""
    return Subject(
        name=state.task_name[t],
        namespace=state.namespaces[state.task_namespace[t]],
        req=state.task_req[t],
        profile=state.profiles[state.task_profile[t]],
        task=t,
        profile_index=int(state.task_profile[t]),
    )


@dataclass(frozen=True)
class StaticResult:
    code: I8  # [N] S_* codes
    #: [N] where code is S_TAINT, which of ``taints`` the node's reason names (else -1)
    taint: npt.NDArray[np.int32]
    #: the distinct TaintToleration reasons (each names the node's first untolerated taint)
    taints: tuple[str, ...] = ()


@dataclass
class FilterResult:
    feasible: Mask  # [N] over all nodes (False outside the requested subset)
    fits_idle: Mask  # [N] feasible and fits Idle, not only FutureIdle
    #: infeasible requested nodes grouped by their reason list
    groups: list[tuple[list[str], npt.NDArray[np.intp]]] = field(default_factory=list)

    def reasons(self) -> dict[int, list[str]]:
        """node index -> reasons, for the infeasible requested nodes."""
        return {int(i): reasons for reasons, members in self.groups for i in members}


@dataclass(frozen=True)
class Evaluation:
    """Per-position results of every check over a node subset: kept apart from the verdict so
    the wording can be derived afterwards, only when someone asks for it."""

    ok: Mask
    fits_idle: Mask
    #: first insufficient resource, -1 if the request fits: an index on the state's resource axis,
    #: or len(axis) + j for the subject's j-th ``unknown_resources`` entry
    first_fail: npt.NDArray[np.int16]
    pod_full: Mask
    static_code: I8
    ports: Mask
    inter: I8
    spread: I8
    #: per position, which of ``taints`` a TaintToleration failure names (-1: none)
    taint: npt.NDArray[np.int32]
    taints: tuple[str, ...] = ()
