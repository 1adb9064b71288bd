"""The columnar cluster state every algorithm works on.

A decoded snapshot: one numpy column per task attribute, a node x resource matrix for
capacity and the node ledger. Strings and rarely-touched structures stay as Python lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.snapshot.ledger import NodeLedger

F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
Bool = npt.NDArray[np.bool_]

#: Kubernetes' non-zero defaults (pkg/scheduler/util/pod_resources.go), Volcano units
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024


def nonzero_fallback(cpu: F64, memory: F64) -> F64:
    """[T, 2] non-zero (cpu, memory) from pod-level requests when the snapshot gives none:
    the default where the pod-level value is 0 (exact for one container without an explicit 0;
    per-container defaults need ``Task.nonzero_requests``)."""
    return np.column_stack([np.where(cpu > 0, cpu, DEFAULT_MILLI_CPU), np.where(memory > 0, memory, DEFAULT_MEMORY)])


@dataclass(frozen=True)
class ClusterState:
    """A Volcano session in columns. Indices are row numbers in the tables below; -1 = none."""

    name: str
    resources: tuple[str, ...]
    # nodes
    node_names: list[str]
    node_alloc: F64  # [N, R] Volcano units; missing "pods" is +inf
    node_unschedulable: Bool  # [N]
    nodes: list[pb.Node]  # labels and taints are read from here on demand
    # tasks
    task_uid: list[str]
    task_name: list[str]
    task_namespace: I32  # [T] -> namespaces
    task_node: I32  # [T] -> nodes
    task_status: I32  # [T] Volcano TaskStatus flags
    task_pod_group: I32  # [T] -> pod_groups
    task_priority: I32  # [T]
    task_profile: I32  # [T] -> profiles
    task_req: F64  # [T, R] Volcano units, pods column = 1
    task_nonzero: F64  # [T, 2] Kubernetes' non-zero (cpu, memory) request, see nonzero_fallback
    task_role: list[str]
    profiles: list[pb.TaskProfile]
    namespaces: list[str]
    namespace_labels: list[dict[str, str]]
    pod_groups: list[pb.PodGroup]
    pdbs: list[pb.PodDisruptionBudget]
    scheduler_config: pb.SchedulerConfig
    ledger: NodeLedger
    _node_index: dict[str, int] = field(default_factory=dict, repr=False)
    _resource_index: dict[str, int] = field(default_factory=dict, repr=False)
    #: references the snapshot left dangling, and the producer's own notes (decode's docstring);
    #: every answer on this state carries them
    warnings: tuple[str, ...] = ()
    #: task -> "namespace/name" of a PodGroup the snapshot does not list (the task cannot move)
    missing_groups: dict[int, str] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_tasks(self) -> int:
        return len(self.task_uid)

    def resource(self, name: str) -> int:
        """Column of ``name`` on the resource axis; KeyError if no node or task mentions it."""
        return self._resource_index[name]

    def has_resource(self, name: str) -> bool:
        return name in self._resource_index

    def node(self, name: str) -> int:
        return self._node_index[name]

    def pod_group_key(self, index: int) -> str:
        pg = self.pod_groups[index]
        return f"{pg.namespace}/{pg.name}"
