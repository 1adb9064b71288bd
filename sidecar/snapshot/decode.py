"""Snapshot message -> ClusterState, validating as it goes.

Every problem raises :class:`InputError` naming the field (``tasks[17].status: invalid status
99``). Two references real sessions dangle are not problems but warnings (``ClusterState.warnings``,
carried in every answer): a task on a node the snapshot does not list (Volcano's cache leaves out a
node whose Node object is gone while its Job keeps the task, until pod GC) is counted on no node,
as Volcano counts it; a task whose PodGroup is missing (deleted first, or not yet seen) stays but
cannot move. Row tasks are converted one by one; columnar tasks are converted with whole-array
numpy operations, which is what makes a 100k-task snapshot cheap (see docs/contract.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.snapshot import tasks
from sidecar.snapshot.dangling import dangling_warnings, producer_warnings
from sidecar.snapshot.ledger import build_ledger
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import BASE_RESOURCES, MAX_QUANTITY, PODS
from sidecar.snapshot.validation import (
    check_totals,
    column_count,
    quantity,
    validate_pdbs,
)

_TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


@dataclass(frozen=True)
class Limits:
    """Size limits beyond which a snapshot is refused (INVALID_ARGUMENT)."""

    max_nodes: int = 100_000
    max_tasks: int = 2_000_000
    #: Distinct resource names over all nodes and tasks: the node and task matrices have one
    #: column each, so this bounds their memory (a real cluster has a few dozen).
    max_resources: int = 256
    #: Tasks x resources: the request matrix's cells (8 bytes each, a few copies while planning).
    #: A small row-form request naming many resources on one node would otherwise cost far more
    #: memory than its size suggests; 2M tasks x 10 resources still fit.
    max_task_cells: int = 20_000_000


def _decode_nodes(snap: pb.Snapshot, limits: Limits) -> tuple[list[str], dict[str, int], list[dict[str, float]]]:
    """Names and allocatable maps; labels and taints stay in the messages (read lazily)."""
    if len(snap.nodes) > limits.max_nodes:
        raise InputError("nodes", f"{len(snap.nodes)} nodes exceed the limit of {limits.max_nodes}")
    names = [n.name for n in snap.nodes]
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names) or "" in index:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if not name:
                raise InputError(f"nodes[{i}].name", "missing")
            if name in seen:
                raise InputError(f"nodes[{i}].name", f'duplicate node "{name}" (first at nodes[{seen[name]}])')
            seen[name] = i
    for i, node in enumerate(snap.nodes):
        for j, taint in enumerate(node.taints):
            if not taint.key:
                raise InputError(f"nodes[{i}].taints[{j}].key", "missing")
            if taint.effect not in _TAINT_EFFECTS:
                raise InputError(
                    f"nodes[{i}].taints[{j}].effect",
                    f'unknown effect "{taint.effect}" (NoSchedule, PreferNoSchedule, NoExecute)',
                )
    return names, index, [dict(n.allocatable) for n in snap.nodes]


def _resource_axis(snap: pb.Snapshot, node_alloc: list[dict[str, float]], limit: int) -> tuple[str, ...]:
    names: set[str] = set().union(*node_alloc) if node_alloc else set()
    for task in snap.tasks:
        names.update(task.requests.keys())
    for col in snap.task_columns.requests:
        names.add(col.resource)
    extra = sorted(names.difference(BASE_RESOURCES))
    if len(extra) + len(BASE_RESOURCES) > limit:
        raise InputError(
            "resources",
            f"{len(names.union(BASE_RESOURCES))} distinct resource names over nodes and tasks exceed "
            f"the limit of {limit}",
        )
    if "" in names:
        for i, amap in enumerate(node_alloc):
            if "" in amap:
                raise InputError(f'nodes[{i}].allocatable[""]', "empty resource name")
        for k, task in enumerate(snap.tasks):
            if "" in task.requests:
                raise InputError(f'tasks[{k}].requests[""]', "empty resource name")
    return BASE_RESOURCES + tuple(extra)


def _alloc_matrix(node_alloc: list[dict[str, float]], res_index: dict[str, int]) -> np.ndarray:
    alloc = np.zeros((len(node_alloc), len(res_index)))
    alloc[:, res_index[PODS]] = np.inf  # no "pods" entry: no task-count limit
    for i, amap in enumerate(node_alloc):
        for res, value in amap.items():
            alloc[i, res_index[res]] = value
    bad = np.argwhere(
        ~(alloc >= 0)
        | ((alloc >= MAX_QUANTITY) & ~((alloc == np.inf) & (np.arange(len(res_index)) == res_index[PODS])))
    )
    if bad.size:
        i, j = (int(x) for x in bad[0])
        res = next(r for r, k in res_index.items() if k == j)
        quantity(f'nodes[{i}].allocatable["{res}"]', float(node_alloc[i][res]))
    check_totals(lambda i, r: f'nodes[{i}].allocatable["{r}"]', alloc, tuple(res_index), "allocatable")
    return alloc


def _decode_pod_groups(snap: pb.Snapshot) -> dict[tuple[str, str], int]:
    index: dict[tuple[str, str], int] = {}
    for i, pg in enumerate(snap.pod_groups):
        if not pg.namespace:
            raise InputError(f"pod_groups[{i}].namespace", "missing")
        if not pg.name:
            raise InputError(f"pod_groups[{i}].name", "missing")
        key = (pg.namespace, pg.name)
        if key in index:
            raise InputError(f"pod_groups[{i}].name", f'duplicate PodGroup "{pg.namespace}/{pg.name}"')
        if pg.min_member < 0:
            raise InputError(f"pod_groups[{i}].min_member", f"negative value {pg.min_member}")
        for role, n in pg.min_task_member.items():
            if n < 0:
                raise InputError(f'pod_groups[{i}].min_task_member["{role}"]', f"negative value {n}")
        index[key] = i
    return index


def decode(snap: pb.Snapshot, limits: Limits = Limits()) -> ClusterState:
    """Validate ``snap`` and convert it to columns. Raises InputError on bad input."""
    node_names, node_index, node_alloc = _decode_nodes(snap, limits)
    resources = _resource_axis(snap, node_alloc, limits.max_resources)
    res_index = {r: i for i, r in enumerate(resources)}
    alloc = _alloc_matrix(node_alloc, res_index)
    pg_index = _decode_pod_groups(snap)
    validate_pdbs(snap.pdbs)
    ns, ns_labels = tasks.decode_namespaces(snap)
    n_tasks = column_count(snap.task_columns) + len(snap.tasks)
    tasks.check_size(n_tasks, len(resources), limits.max_tasks, limits.max_task_cells)
    t = tasks.TaskArrays.allocate(snap, n_tasks, len(resources))
    if t.n_col:
        tasks.fill_columns(t, snap, ns, len(node_names), res_index)
    tasks.fill_rows(t, snap, ns, ns_labels, node_index, pg_index, res_index)
    nonzero = tasks.check_requests(t, snap, resources, res_index)
    tasks.check_identities(t, ns.values)
    ledger = build_ledger(t.node, t.status, t.req, alloc, resources)
    warnings = producer_warnings(snap.warnings) + dangling_warnings(
        t.node, t.status, t.n_col, t.ghost_nodes, t.missing_groups, lambda i: f"{ns.values[t.ns[i]]}/{t.name[i]}"
    )
    return ClusterState(
        name=snap.name,
        resources=resources,
        node_names=node_names,
        node_alloc=alloc,
        node_unschedulable=np.fromiter((n.unschedulable for n in snap.nodes), bool, count=len(node_names)),
        nodes=list(snap.nodes),
        task_uid=t.uid,
        task_name=t.name,
        task_namespace=t.ns,
        task_node=t.node,
        task_status=t.status,
        task_pod_group=t.pod_group,
        task_priority=t.priority,
        task_profile=t.profile,
        task_req=t.req,
        task_nonzero=nonzero,
        task_role=t.role,
        profiles=t.profiles,
        namespaces=ns.values,
        namespace_labels=ns_labels,
        pod_groups=list(snap.pod_groups),
        pdbs=list(snap.pdbs),
        scheduler_config=snap.scheduler_config,
        ledger=ledger,
        _node_index=node_index,
        _resource_index=res_index,
        warnings=tuple(warnings),
        missing_groups=t.missing_groups,
    )
