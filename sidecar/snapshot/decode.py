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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sidecar import heap
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


@dataclass(frozen=True)
class _Nodes:
    """The nodes' columns the decode needs, read in one pass (labels and taints stay in the
    messages, read lazily by the mirror). Allocatable maps are flattened in node order: entry
    ``e`` is ``values[e]`` of resource ``keys[e]`` on node ``rows[e]`` -- a protobuf map is slow
    to turn into a dict, and 10,000 of them were a fifth of a snapshot's decode."""

    messages: list[pb.Node]
    names: list[str]
    index: dict[str, int]
    unschedulable: np.ndarray
    rows: np.ndarray
    keys: list[str]
    values: np.ndarray

    @classmethod
    def read(cls, snap: pb.Snapshot, limits: Limits) -> _Nodes:
        if len(snap.nodes) > limits.max_nodes:
            raise InputError("nodes", f"{len(snap.nodes)} nodes exceed the limit of {limits.max_nodes}")
        messages = list(snap.nodes)
        names: list[str] = []
        unschedulable: list[bool] = []
        keys: list[str] = []
        values: list[float] = []
        counts: list[int] = []
        for i, node in enumerate(messages):
            names.append(node.name)
            unschedulable.append(node.unschedulable)
            if node.taints:  # tested first: iterating an empty container costs an IndexError
                _check_taints(i, node.taints)
            amap = node.allocatable
            ks = list(amap)
            keys += ks
            values += map(amap.__getitem__, ks)
            counts.append(len(ks))
        index = {name: i for i, name in enumerate(names)}
        if len(index) != len(names) or "" in index:
            seen: dict[str, int] = {}
            for i, name in enumerate(names):
                if not name:
                    raise InputError(f"nodes[{i}].name", "missing")
                if name in seen:
                    raise InputError(f"nodes[{i}].name", f'duplicate node "{name}" (first at nodes[{seen[name]}])')
                seen[name] = i
        rows = np.repeat(np.arange(len(counts)), counts)
        return cls(messages, names, index, np.array(unschedulable, bool), rows, keys, np.array(values, np.float64))


def _check_taints(i: int, taints: Sequence[pb.Taint]) -> None:
    for j, taint in enumerate(taints):
        if not taint.key:
            raise InputError(f"nodes[{i}].taints[{j}].key", "missing")
        if taint.effect not in _TAINT_EFFECTS:
            raise InputError(
                f"nodes[{i}].taints[{j}].effect",
                f'unknown effect "{taint.effect}" (NoSchedule, PreferNoSchedule, NoExecute)',
            )


def _resource_axis(snap: pb.Snapshot, nodes: _Nodes, limit: int) -> tuple[str, ...]:
    names: set[str] = set(nodes.keys)
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
        if "" in nodes.keys:
            i = int(nodes.rows[nodes.keys.index("")])
            raise InputError(f'nodes[{i}].allocatable[""]', "empty resource name")
        for k, task in enumerate(snap.tasks):
            if "" in task.requests:
                raise InputError(f'tasks[{k}].requests[""]', "empty resource name")
    return BASE_RESOURCES + tuple(extra)


def _alloc_matrix(nodes: _Nodes, res_index: dict[str, int]) -> np.ndarray:
    alloc = np.zeros((len(nodes.names), len(res_index)))
    pods = res_index[PODS]
    alloc[:, pods] = np.inf  # no "pods" entry: no task-count limit
    cols = np.array([res_index[k] for k in nodes.keys], np.intp)
    values = nodes.values
    alloc[nodes.rows, cols] = values
    bad = np.flatnonzero(~(values >= 0) | ((values >= MAX_QUANTITY) & ~((values == np.inf) & (cols == pods))))
    if bad.size:
        first = bad[np.lexsort((cols[bad], nodes.rows[bad]))[0]]  # in node order, then the axis's
        i, res = int(nodes.rows[first]), nodes.keys[first]
        quantity(f'nodes[{i}].allocatable["{res}"]', float(values[first]))
    check_totals(lambda i, r: f'nodes[{i}].allocatable["{r}"]', alloc, tuple(res_index), "allocatable")
    return alloc


def _decode_pod_groups(snap: pb.Snapshot) -> dict[tuple[str, str], int]:
    groups = snap.pod_groups
    keys = [(pg.namespace, pg.name) for pg in groups]
    index = {key: i for i, key in enumerate(keys)}
    if len(index) != len(keys) or any(not ns or not name for ns, name in index):
        seen: set[tuple[str, str]] = set()
        for i, (ns, name) in enumerate(keys):
            if not ns:
                raise InputError(f"pod_groups[{i}].namespace", "missing")
            if not name:
                raise InputError(f"pod_groups[{i}].name", "missing")
            if (ns, name) in seen:
                raise InputError(f"pod_groups[{i}].name", f'duplicate PodGroup "{ns}/{name}"')
            seen.add((ns, name))
    for i, pg in enumerate(groups):
        if pg.min_member < 0:
            raise InputError(f"pod_groups[{i}].min_member", f"negative value {pg.min_member}")
        if pg.min_task_member:
            for role, n in pg.min_task_member.items():
                if n < 0:
                    raise InputError(f'pod_groups[{i}].min_task_member["{role}"]', f"negative value {n}")
    return index


def decode(snap: pb.Snapshot, limits: Limits = Limits()) -> ClusterState:
    """Validate ``snap`` and convert it to columns. Raises InputError on bad input."""
    with heap.collection_paused():
        return _decode(snap, limits)


def _decode(snap: pb.Snapshot, limits: Limits) -> ClusterState:
    nodes = _Nodes.read(snap, limits)
    resources = _resource_axis(snap, nodes, limits.max_resources)
    res_index = {r: i for i, r in enumerate(resources)}
    alloc = _alloc_matrix(nodes, res_index)
    pg_index = _decode_pod_groups(snap)
    validate_pdbs(snap.pdbs)
    ns, ns_labels = tasks.decode_namespaces(snap)
    n_tasks = column_count(snap.task_columns) + len(snap.tasks)
    tasks.check_size(n_tasks, len(resources), limits.max_tasks, limits.max_task_cells)
    t = tasks.TaskArrays.allocate(snap, n_tasks, len(resources))
    if t.n_col:
        tasks.fill_columns(t, snap, ns, len(nodes.names), res_index)
    tasks.fill_rows(t, snap, ns, ns_labels, nodes.index, pg_index, res_index)
    nonzero = tasks.check_requests(t, snap, resources, res_index)
    tasks.check_identities(t, ns.values)
    ledger = build_ledger(t.node, t.status, t.req, alloc, resources)
    warnings = producer_warnings(snap.warnings) + dangling_warnings(
        t.node, t.status, t.n_col, t.ghost_nodes, t.missing_groups, lambda i: f"{ns.values[t.ns[i]]}/{t.name[i]}"
    )
    return ClusterState(
        name=snap.name,
        resources=resources,
        node_names=nodes.names,
        node_alloc=alloc,
        node_unschedulable=nodes.unschedulable,
        nodes=nodes.messages,
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
        _node_index=nodes.index,
        _resource_index=res_index,
        warnings=tuple(warnings),
        missing_groups=t.missing_groups,
    )
