"""The tasks of a snapshot -> the task columns of ClusterState, validating as it goes.

Both task forms land in one set of arrays (:class:`TaskArrays`): the columnar tasks first, with
whole-array numpy operations (what makes a 100k-task snapshot cheap), then the row tasks one by one.
Each step is one function, in the order :func:`sidecar.snapshot.decode.decode` calls them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.snapshot.state import nonzero_fallback
from sidecar.snapshot.taskstatus import VALID as VALID_STATUS
from sidecar.snapshot.units import MAX_QUANTITY, PODS
from sidecar.snapshot.validation import check_quantities, check_totals, column_count, quantity, validate_profile


class Interner:
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


def check_size(n_tasks: int, n_res: int, max_tasks: int, max_task_cells: int) -> None:
    if n_tasks > max_tasks:
        raise InputError("tasks", f"{n_tasks} tasks exceed the limit of {max_tasks}")
    if n_tasks * n_res > max_task_cells:
        raise InputError(
            "tasks",
            f"{n_tasks} tasks x {n_res} resource names = {n_tasks * n_res} request cells exceed the limit of "
            f"{max_task_cells} (name fewer resources or send fewer tasks)",
        )


def decode_namespaces(snap: pb.Snapshot) -> tuple[Interner, list[dict[str, str]]]:
    """The snapshot's namespaces (their labels), in order; tasks may add more (without labels)."""
    ns = Interner()
    labels: list[dict[str, str]] = []
    for i, namespace in enumerate(snap.namespaces):
        if not namespace.name:
            raise InputError(f"namespaces[{i}].name", "missing")
        if namespace.name in ns.index:
            raise InputError(f"namespaces[{i}].name", f'duplicate namespace "{namespace.name}"')
        ns.get(namespace.name)
        labels.append(dict(namespace.labels))
    return ns, labels


@dataclass
class TaskArrays:
    """Every task's columns, columnar tasks first (``n_col`` of them), then the row tasks."""

    n_col: int
    uid: list[str]
    name: list[str]
    role: list[str]
    profiles: list[pb.TaskProfile]
    ns: np.ndarray
    node: np.ndarray
    status: np.ndarray
    pod_group: np.ndarray
    priority: np.ndarray
    profile: np.ndarray
    req: np.ndarray
    #: row tasks naming a node the snapshot does not list: (row, the node's name)
    ghost_nodes: list[tuple[int, str]] = field(default_factory=list)
    #: task -> "namespace/name" of its missing PodGroup
    missing_groups: dict[int, str] = field(default_factory=dict)

    @classmethod
    def allocate(cls, snap: pb.Snapshot, n_tasks: int, n_res: int) -> TaskArrays:
        cols = snap.task_columns
        n_col = column_count(cols)

        def ints() -> np.ndarray:
            return np.empty(n_tasks, np.int32)

        return cls(
            n_col,
            list(cols.uid),
            list(cols.name),
            list(cols.role) if len(cols.role) else [""] * n_col,
            list(snap.profiles),
            ints(),
            ints(),
            ints(),
            ints(),
            ints(),
            ints(),
            np.zeros((n_tasks, n_res)),
        )


def fill_columns(t: TaskArrays, snap: pb.Snapshot, ns: Interner, n_nodes: int, res_index: dict[str, int]) -> None:
    """The columnar tasks, whole columns at a time."""
    cols, n = snap.task_columns, t.n_col
    t.ns[:n] = cols.namespace
    t.node[:n] = cols.node
    t.status[:n] = cols.status
    t.pod_group[:n] = cols.pod_group
    t.priority[:n] = cols.priority
    t.profile[:n] = cols.profile
    _check_index("task_columns.node", t.node[:n], n_nodes, "node")
    _check_index("task_columns.pod_group", t.pod_group[:n], len(snap.pod_groups), "pod_group")
    _check_index("task_columns.profile", t.profile[:n], len(t.profiles), "profile")
    for k in np.unique(t.profile[:n]).tolist():
        if k >= 0:
            validate_profile(t.profiles[k], f"profiles[{k}]")
    ns_col = t.ns[:n]
    bad = np.flatnonzero((ns_col < 0) | (ns_col >= len(ns.values)))
    if bad.size:
        i = int(bad[0])
        raise InputError(
            f"task_columns.namespace[{i}]", f"unknown namespace index {int(ns_col[i])} ({len(ns.values)} namespaces)"
        )
    bad = np.flatnonzero(~np.isin(t.status[:n], list(VALID_STATUS)))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"task_columns.status[{i}]", f"invalid task status {int(t.status[i])}")
    if t.profile[:n].min(initial=0) < 0:
        i = int(np.flatnonzero(t.profile[:n] < 0)[0])
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
        t.req[:n, res_index[column.resource]] = values


def fill_rows(
    t: TaskArrays,
    snap: pb.Snapshot,
    ns: Interner,
    ns_labels: list[dict[str, str]],
    node_index: dict[str, int],
    pg_index: dict[tuple[str, str], int],
    res_index: dict[str, int],
) -> None:
    """The row tasks, one by one; a namespace only tasks name joins ``ns`` without labels, a
    dangling node or PodGroup is recorded (``ghost_nodes``, ``missing_groups``), not refused."""
    profile_index: dict[bytes, int] = {}
    # columns gathered as lists and written once: a numpy item write per field per task cost more
    # than the rest of the loop
    cols: list[list[int]] = [[], [], [], [], [], []]  # ns, node, pod_group, status, priority, profile
    ns_col, node_col, pg_col, status_col, priority_col, profile_col = cols
    req_rows: list[int] = []
    req_cols: list[int] = []
    req_values: list[float] = []
    for k, task in enumerate(snap.tasks):
        i = t.n_col + k
        if not task.name:
            raise InputError(f"tasks[{k}].name", "missing")
        if not task.namespace:
            raise InputError(f"tasks[{k}].namespace", "missing")
        if task.status not in VALID_STATUS:
            status = task.status
            raise InputError(f"tasks[{k}].status", "missing" if status == 0 else f"invalid status {status}")
        t.uid.append(task.uid or f"{task.namespace}/{task.name}")
        t.name.append(task.name)
        t.role.append(task.role)
        ns_col.append(ns.get(task.namespace))
        if len(ns_labels) < len(ns.values):
            ns_labels.append({})
        node_i = -1
        if task.node:
            node_i = node_index.get(task.node, -1)
            if node_i < 0:
                t.ghost_nodes.append((k, task.node))
        node_col.append(node_i)
        pg_i = -1
        if task.pod_group:
            pg_i = pg_index.get((task.namespace, task.pod_group), -1)
            if pg_i < 0:
                t.missing_groups[i] = f"{task.namespace}/{task.pod_group}"
        pg_col.append(pg_i)
        status_col.append(task.status)
        priority_col.append(task.priority)
        requests = task.requests  # read by key: a protobuf map's items() is the slow generic view
        for res in requests:
            value = requests[res]
            if not 0 <= value < MAX_QUANTITY:
                quantity(f'tasks[{k}].requests["{res}"]', value)  # raises, naming the field
            req_rows.append(i)
            req_cols.append(res_index[res])
            req_values.append(value)
        key = task.profile.SerializeToString(deterministic=True)
        prof_i = profile_index.get(key)
        if prof_i is None:
            validate_profile(task.profile, f"tasks[{k}].profile")
            prof_i = profile_index[key] = len(t.profiles)
            t.profiles.append(task.profile)
        profile_col.append(prof_i)
    rows = slice(t.n_col, t.n_col + len(snap.tasks))
    for array, column in zip((t.ns, t.node, t.pod_group, t.status, t.priority, t.profile), cols, strict=True):
        array[rows] = column
    t.req[req_rows, req_cols] = req_values


def check_requests(
    t: TaskArrays, snap: pb.Snapshot, resources: tuple[str, ...], res_index: dict[str, int]
) -> np.ndarray:
    """Every task's pod slot (Volcano: each requests one), each resource's total within range, and
    the non-zero requests (returned)."""
    n_col = t.n_col
    t.req[:, res_index[PODS]] = 1.0
    column_of = {c.resource: j for j, c in enumerate(snap.task_columns.requests)}

    def request_path(i: int, res: str) -> str:
        if i < n_col:
            return f"task_columns.requests[{column_of[res]}].values[{i}]"
        return f'tasks[{i - n_col}].requests["{res}"]'

    check_totals(request_path, t.req, resources, "request")
    nonzero = _decode_nonzero(snap, t.req[:, 0], t.req[:, 1], n_col)

    def nonzero_path(i: int, r: str) -> str:
        return f"task_columns.nonzero_{r}[{i}]" if i < n_col else f"tasks[{i - n_col}].nonzero_requests.{r}"

    check_totals(nonzero_path, nonzero, ("cpu", "memory"), "non-zero request")
    return nonzero


def check_identities(t: TaskArrays, namespaces: list[str]) -> None:
    """Every uid present and unique; every (namespace, name) unique; columnar names present."""
    n_col, n_tasks = t.n_col, len(t.uid)
    uids = set(t.uid)
    if "" in uids:  # only a column task can lack one: a row task's uid defaults to namespace/name
        raise InputError(f"task_columns.uid[{t.uid.index('')}]", "missing")
    if len(uids) != n_tasks:
        _raise_duplicate_uid(t.uid, n_col)
    names = set(t.name)
    if len(names) != n_tasks and len(set(zip(t.ns.tolist(), t.name, strict=True))) != n_tasks:
        _raise_duplicate_name(t.ns, t.name, namespaces, n_col)
    if "" in names:  # a row task without a name was refused already
        raise InputError(f"task_columns.name[{t.name.index('')}]", "missing")
