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
from sidecar.snapshot.dangling import dangling_warnings, producer_warnings
from sidecar.snapshot.ledger import build_ledger
from sidecar.snapshot.state import ClusterState, nonzero_fallback
from sidecar.snapshot.taskstatus import VALID as VALID_STATUS
from sidecar.snapshot.units import BASE_RESOURCES, MAX_QUANTITY, PODS
from sidecar.snapshot.validation import (
    check_quantities,
    check_totals,
    column_count,
    quantity,
    validate_pdbs,
    validate_profile,
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


class _Interner:
    def __init__(self) -> None:
        self.values: list[str] = []
        self.index: dict[str, int] = {}

    def get(self, value: str) -> int:
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.values)
            self.values.append(value)
        return i


def _check_index(path: str, column: np.ndarray, size: int, what: str) -> None:
    bad = np.flatnonzero((column < -1) | (column >= size))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{path}[{i}]", f"unknown {what} index {int(column[i])} ({size} {what}s in the snapshot)")


def _task_path(i: int, n_col: int, fname: str) -> str:
    return f"task_columns.{fname}[{i}]" if i < n_col else f"tasks[{i - n_col}].{fname}"


def _raise_duplicate_uid(uid: list[str], n_col: int) -> None:
    seen: set[str] = set()
    for i, u in enumerate(uid):
        if not u:
            raise InputError(_task_path(i, n_col, "uid"), "missing")
        if u in seen:
            raise InputError(_task_path(i, n_col, "uid"), f'duplicate task uid "{u}"')
        seen.add(u)


def _raise_duplicate_name(t_ns: np.ndarray, name: list[str], namespaces: list[str], n_col: int) -> None:
    seen: set[tuple[int, str]] = set()
    for i, key in enumerate(zip(t_ns.tolist(), name, strict=True)):
        if key in seen:
            raise InputError(_task_path(i, n_col, "name"), f'duplicate pod "{namespaces[key[0]]}/{key[1]}"')
        seen.add(key)


def _decode_nonzero(snap: pb.Snapshot, cpu: np.ndarray, memory: np.ndarray, n_col: int) -> np.ndarray:
    """Task.nonzero_requests / task_columns.nonzero_{cpu,memory}; absent -> nonzero_fallback."""
    out = nonzero_fallback(cpu, memory)
    cols = snap.task_columns
    if len(cols.nonzero_cpu) or len(cols.nonzero_memory):
        for j, fname in enumerate(("nonzero_cpu", "nonzero_memory")):
            values = np.array(getattr(cols, fname), np.float64)
            check_quantities(f"task_columns.{fname}", values)
            out[:n_col, j] = values
    for k, task in enumerate(snap.tasks):
        if task.HasField("nonzero_requests"):
            nz = task.nonzero_requests
            out[n_col + k, 0] = quantity(f"tasks[{k}].nonzero_requests.cpu", nz.cpu)
            out[n_col + k, 1] = quantity(f"tasks[{k}].nonzero_requests.memory", nz.memory)
    return out


def decode(snap: pb.Snapshot, limits: Limits = Limits()) -> ClusterState:
    """Validate ``snap`` and convert it to columns. Raises InputError on bad input."""
    node_names, node_index, node_alloc = _decode_nodes(snap, limits)
    resources = _resource_axis(snap, node_alloc, limits.max_resources)
    res_index = {r: i for i, r in enumerate(resources)}
    n_res = len(resources)
    alloc = _alloc_matrix(node_alloc, res_index)
    pg_index = _decode_pod_groups(snap)
    validate_pdbs(snap.pdbs)

    ns = _Interner()
    ns_labels: list[dict[str, str]] = []
    for i, namespace in enumerate(snap.namespaces):
        if not namespace.name:
            raise InputError(f"namespaces[{i}].name", "missing")
        if namespace.name in ns.index:
            raise InputError(f"namespaces[{i}].name", f'duplicate namespace "{namespace.name}"')
        ns.get(namespace.name)
        ns_labels.append(dict(namespace.labels))

    cols = snap.task_columns
    n_col = column_count(cols)
    n_row = len(snap.tasks)
    n_tasks = n_col + n_row
    if n_tasks > limits.max_tasks:
        raise InputError("tasks", f"{n_tasks} tasks exceed the limit of {limits.max_tasks}")
    if n_tasks * n_res > limits.max_task_cells:
        raise InputError(
            "tasks",
            f"{n_tasks} tasks x {n_res} resource names = {n_tasks * n_res} request cells exceed the limit of "
            f"{limits.max_task_cells} (name fewer resources or send fewer tasks)",
        )

    profiles: list[pb.TaskProfile] = list(snap.profiles)
    uid = list(cols.uid)
    name = list(cols.name)
    role = list(cols.role) if len(cols.role) else [""] * n_col
    t_ns = np.empty(n_tasks, np.int32)
    t_node = np.empty(n_tasks, np.int32)
    t_status = np.empty(n_tasks, np.int32)
    t_pg = np.empty(n_tasks, np.int32)
    t_prio = np.empty(n_tasks, np.int32)
    t_prof = np.empty(n_tasks, np.int32)
    t_req = np.zeros((n_tasks, n_res))

    if n_col:
        t_ns[:n_col] = cols.namespace
        t_node[:n_col] = cols.node
        t_status[:n_col] = cols.status
        t_pg[:n_col] = cols.pod_group
        t_prio[:n_col] = cols.priority
        t_prof[:n_col] = cols.profile
        _check_index("task_columns.node", t_node[:n_col], len(node_names), "node")
        _check_index("task_columns.pod_group", t_pg[:n_col], len(snap.pod_groups), "pod_group")
        _check_index("task_columns.profile", t_prof[:n_col], len(profiles), "profile")
        for k in np.unique(t_prof[:n_col]).tolist():
            if k >= 0:
                validate_profile(profiles[k], f"profiles[{k}]")
        ns_col = t_ns[:n_col]
        bad = np.flatnonzero((ns_col < 0) | (ns_col >= len(ns.values)))
        if bad.size:
            i = int(bad[0])
            raise InputError(
                f"task_columns.namespace[{i}]",
                f"unknown namespace index {int(ns_col[i])} ({len(ns.values)} namespaces)",
            )
        bad = np.flatnonzero(~np.isin(t_status[:n_col], list(VALID_STATUS)))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"task_columns.status[{i}]", f"invalid task status {int(t_status[i])}")
        if t_prof[:n_col].min(initial=0) < 0:
            i = int(np.flatnonzero(t_prof[:n_col] < 0)[0])
            raise InputError(f"task_columns.profile[{i}]", "missing (every task needs a profile index)")
        seen_res: set[str] = set()
        for j, column in enumerate(cols.requests):
            if not column.resource:
                raise InputError(f"task_columns.requests[{j}].resource", "missing")
            if column.resource in seen_res:
                raise InputError(f"task_columns.requests[{j}].resource", f'duplicate column "{column.resource}"')
            seen_res.add(column.resource)
            values = np.array(column.values, np.float64)
            check_quantities(f"task_columns.requests[{j}].values", values)
            t_req[:n_col, res_index[column.resource]] = values

    profile_index: dict[bytes, int] = {}
    ghost_nodes: list[tuple[int, str]] = []  # (row task, the node it names)
    missing_groups: dict[int, str] = {}  # task -> "namespace/name" of its missing PodGroup
    for k, task in enumerate(snap.tasks):
        i = n_col + k
        path = f"tasks[{k}]"
        if not task.name:
            raise InputError(f"{path}.name", "missing")
        if not task.namespace:
            raise InputError(f"{path}.namespace", "missing")
        if task.status not in VALID_STATUS:
            raise InputError(f"{path}.status", "missing" if task.status == 0 else f"invalid status {task.status}")
        uid.append(task.uid or f"{task.namespace}/{task.name}")
        name.append(task.name)
        role.append(task.role)
        t_ns[i] = ns.get(task.namespace)
        if len(ns_labels) < len(ns.values):
            ns_labels.append({})
        if task.node:
            node_i = node_index.get(task.node)
            if node_i is None:
                ghost_nodes.append((k, task.node))
                node_i = -1
            t_node[i] = node_i
        else:
            t_node[i] = -1
        if task.pod_group:
            pg_i = pg_index.get((task.namespace, task.pod_group))
            if pg_i is None:
                missing_groups[i] = f"{task.namespace}/{task.pod_group}"
                pg_i = -1
            t_pg[i] = pg_i
        else:
            t_pg[i] = -1
        t_status[i] = task.status
        t_prio[i] = task.priority
        for res, value in task.requests.items():
            t_req[i, res_index[res]] = quantity(f'{path}.requests["{res}"]', value)
        key = task.profile.SerializeToString(deterministic=True)
        prof_i = profile_index.get(key)
        if prof_i is None:
            validate_profile(task.profile, f"{path}.profile")
            prof_i = profile_index[key] = len(profiles)
            profiles.append(task.profile)
        t_prof[i] = prof_i

    t_req[:, res_index[PODS]] = 1.0  # Volcano: every task requests one pod slot.
    column_of = {c.resource: j for j, c in enumerate(cols.requests)}

    def request_path(i: int, res: str) -> str:
        if i < n_col:
            return f"task_columns.requests[{column_of[res]}].values[{i}]"
        return f'tasks[{i - n_col}].requests["{res}"]'

    check_totals(request_path, t_req, resources, "request")
    t_nonzero = _decode_nonzero(snap, t_req[:, 0], t_req[:, 1], n_col)
    check_totals(
        lambda i, r: f"task_columns.nonzero_{r}[{i}]" if i < n_col else f"tasks[{i - n_col}].nonzero_requests.{r}",
        t_nonzero,
        ("cpu", "memory"),
        "non-zero request",
    )

    if n_col and not all(uid[:n_col]):
        raise InputError(f"task_columns.uid[{uid.index('')}]", "missing")
    if len(set(uid)) != n_tasks:
        _raise_duplicate_uid(uid, n_col)
    if len(set(name)) != n_tasks and len(set(zip(t_ns.tolist(), name, strict=True))) != n_tasks:
        _raise_duplicate_name(t_ns, name, ns.values, n_col)
    if n_col and not all(name[:n_col]):
        raise InputError(f"task_columns.name[{name.index('')}]", "missing")

    ledger = build_ledger(t_node, t_status, t_req, alloc, resources)
    warnings = producer_warnings(snap.warnings) + dangling_warnings(
        t_node, t_status, n_col, ghost_nodes, missing_groups, lambda i: f"{ns.values[t_ns[i]]}/{name[i]}"
    )
    return ClusterState(
        name=snap.name,
        resources=resources,
        node_names=node_names,
        node_alloc=alloc,
        node_unschedulable=np.fromiter((n.unschedulable for n in snap.nodes), bool, count=len(node_names)),
        nodes=list(snap.nodes),
        task_uid=uid,
        task_name=name,
        task_namespace=t_ns,
        task_node=t_node,
        task_status=t_status,
        task_pod_group=t_pg,
        task_priority=t_prio,
        task_profile=t_prof,
        task_req=t_req,
        task_nonzero=t_nonzero,
        task_role=role,
        profiles=profiles,
        namespaces=ns.values,
        namespace_labels=ns_labels,
        pod_groups=list(snap.pod_groups),
        pdbs=list(snap.pdbs),
        scheduler_config=snap.scheduler_config,
        ledger=ledger,
        _node_index=node_index,
        _resource_index=res_index,
        warnings=tuple(warnings),
        missing_groups=missing_groups,
    )
