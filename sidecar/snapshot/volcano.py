"""Volcano's extender-plugin JSON (pkg/scheduler/plugins/extender) -> Snapshot.

Volcano marshals its own structs without json tags, so the session's keys are Go field names
(``Jobs``, ``Nodes``, ``NamespaceInfo``; ``TaskInfo.UID``/``NodeName``/``Status``...), while the
embedded Pod/Node/PodGroup objects use Kubernetes json names. Only what the planner needs is
decoded: ``msgspec`` typed structs skip unknown keys without building them, so ``managedFields``,
node ``images``, ``TaskStatusIndex``, ``SubJobs`` (v1.14+), ``DRAResreq`` (v1.15+) and every
other field cost a scan, not objects. The embedded objects then go through ``kube``'s per-object
helpers (one source of truth for units, requests and profiles); a task's placement is the
session's (``NodeName`` + ``Status``), not the pod's. Each pod appears under its Job's ``Tasks``
(keyed by UID) and under its node (keyed by ``ns/name``): Jobs are read first, and a node task is
decoded only when no Job holds its UID (pods of other schedulers).

Volcano reports every node Ready; the embedded Node's conditions are read here instead: a node
whose Ready condition is not True gets the taint the node lifecycle controller would add.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import orjson

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.snapshot import kube
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.units import CPU, MEMORY, PODS
from sidecar.snapshot.validation import validate_profile

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[Obj] | None = None
    deletionTimestamp: str | None = None


class _PodStatus(msgspec.Struct):
    phase: str = ""
    nominatedNodeName: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: Obj | None = None
    status: _PodStatus | None = None


class _Condition(msgspec.Struct):
    type: str = ""
    status: str = ""


class _NodeStatus(msgspec.Struct):
    allocatable: dict[str, Any] | None = None
    capacity: dict[str, Any] | None = None
    conditions: list[_Condition] | None = None


class _Node(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: Obj | None = None
    status: _NodeStatus | None = None


class _PodGroup(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: Obj | None = None
    status: Obj | None = None


class _Resource(msgspec.Struct):
    MilliCPU: float = 0.0
    Memory: float = 0.0
    ScalarResources: dict[str, float] | None = None
    MaxTaskNum: int = 0


class _Task(msgspec.Struct):
    UID: str = ""
    Name: str = ""
    Namespace: str = ""
    NodeName: str = ""
    Status: int = 0
    Pod: _Pod | None = None


class _TaskUID(msgspec.Struct):
    UID: str = ""


class _Job(msgspec.Struct):
    UID: str = ""
    Name: str = ""
    Namespace: str = ""
    Tasks: dict[str, _Task] | None = None
    PodGroup: _PodGroup | None = None


class _NodeInfo(msgspec.Struct):
    Name: str = ""
    Node: _Node | None = None
    Allocatable: _Resource | None = None
    Tasks: dict[str, msgspec.Raw] | None = None


class _Session(msgspec.Struct):
    Jobs: dict[str, _Job] | None = None
    Nodes: dict[str, _NodeInfo] | None = None


class _Check(msgspec.Struct):
    """predicate ``{task, node}`` and prioritize ``{task, nodes}`` (argument.go json tags)."""

    task: _Task | None = None
    node: _NodeInfo | None = None
    nodes: list[_NodeInfo] | None = None


_SESSION = msgspec.json.Decoder(_Session)
_CHECK = msgspec.json.Decoder(_Check)
_TASK = msgspec.json.Decoder(_Task)
_UID = msgspec.json.Decoder(_TaskUID)
_AT = re.compile(r" - at `(.*)`$")


def _input_error(exc: msgspec.MsgspecError, root: str = "$") -> InputError:
    text = str(exc)
    m = _AT.search(text)
    path = m.group(1) if m else root
    return InputError(path, _AT.sub("", text) if m else text)


def _meta(m: _Meta) -> Obj:
    out: Obj = {"name": m.name, "namespace": m.namespace, "uid": m.uid}
    for key in ("labels", "annotations", "ownerReferences", "deletionTimestamp"):
        value = getattr(m, key)
        if value is not None:
            out[key] = value
    return out


def _pod_obj(p: _Pod) -> Obj:
    status = p.status or _PodStatus()
    return {
        "metadata": _meta(p.metadata),
        "spec": p.spec or {},
        "status": {"phase": status.phase, "nominatedNodeName": status.nominatedNodeName},
    }


class _Templates:
    """Pods of one template (a gang's replicas) differ only in identity and placement: each
    template goes through ``kube.task_from_pod`` once per decode, the others copy its Task."""

    def __init__(self, groups: set[tuple[str, str]]) -> None:
        self.groups = groups
        self._seen: dict[bytes, pb.Task] = {}

    def task(self, pod: Obj) -> pb.Task:
        meta = pod["metadata"]
        spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
        key = orjson.dumps(
            [meta["namespace"], spec, meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences")],
            option=orjson.OPT_SORT_KEYS,
        )
        cached = self._seen.get(key)
        if cached is None:
            cached = self._seen[key] = kube.task_from_pod(pod)
            if (cached.namespace, cached.pod_group) not in self.groups:
                # Volcano's session holds a Job only with its PodGroup: a pod of none is no Job's
                cached.pod_group = ""
        task = pb.Task()
        task.CopyFrom(cached)
        task.uid = meta.get("uid") or f"{meta['namespace']}/{meta['name']}"
        task.name = meta["name"]
        return task


def _task(t: _Task, path: str, group: str | None, templates: _Templates) -> pb.Task:
    """A TaskInfo as a Task: the pod's rules via kube, placement from the session."""
    if t.Pod is None:
        raise InputError(f"{path}.Pod", "missing")
    if t.Status not in ts.VALID:
        raise InputError(f"{path}.Status", f"unknown task status {t.Status}")
    pod = _pod_obj(t.Pod)
    if not pod["metadata"]["name"]:
        raise InputError(f"{path}.Pod.metadata.name", "missing")
    task = templates.task(pod)
    if t.UID:
        task.uid = t.UID
    if group is not None:
        task.pod_group = group
    task.status = t.Status  # type: ignore[assignment]
    task.node = t.NodeName if t.Status not in (ts.PENDING,) else ""
    return task


def _units(r: _Resource | None) -> dict[str, float]:
    if r is None:
        return {}
    out = {CPU: r.MilliCPU, MEMORY: r.Memory, **(r.ScalarResources or {})}
    if r.MaxTaskNum:
        out[PODS] = float(r.MaxTaskNum)
    return out


def _node(name: str, info: _NodeInfo, path: str) -> pb.Node:
    if info.Node is None:  # no Kubernetes object: Volcano's own accounting is all there is
        node = pb.Node(name=info.Name or name)
        node.allocatable.update(_units(info.Allocatable))
        return node
    n = info.Node
    status = n.status or _NodeStatus()
    obj = {
        "metadata": _meta(n.metadata),
        "spec": n.spec or {},
        "status": {"allocatable": status.allocatable, "capacity": status.capacity},
    }
    if not obj["metadata"]["name"]:
        obj["metadata"]["name"] = info.Name or name
    try:
        node = kube._node(obj)
    except ValueError as exc:
        raise InputError(f"{path}.Node.status.allocatable", str(exc)) from None
    ready = next((c.status for c in status.conditions or [] if c.type == "Ready"), "True")
    if ready != "True" and not any(t.key in (NOT_READY, UNREACHABLE) for t in node.taints):
        key = UNREACHABLE if ready == "Unknown" else NOT_READY
        node.taints.add(key=key, effect="NoSchedule")
    return node


def _pod_group(job: _Job, path: str) -> pb.PodGroup | None:
    if job.PodGroup is None:
        return None
    g = job.PodGroup
    obj = {"metadata": _meta(g.metadata), "spec": g.spec or {}, "status": g.status or {}}
    if not obj["metadata"]["name"]:
        raise InputError(f"{path}.PodGroup.metadata.name", "missing")
    obj["metadata"]["namespace"] = obj["metadata"]["namespace"] or job.Namespace
    return kube._pod_group(obj)


def _decode_session(s: _Session, name: str) -> pb.Snapshot:
    snap = pb.Snapshot(name=name)
    for node_name, info in sorted((s.Nodes or {}).items()):
        snap.nodes.append(_node(node_name, info, f"$.Nodes[{node_name!r}]"))
    jobs = s.Jobs or {}
    groups = [pg for job_id, job in jobs.items() if (pg := _pod_group(job, f"$.Jobs[{job_id!r}]")) is not None]
    snap.pod_groups.extend(sorted(groups, key=lambda g: (g.namespace, g.name)))
    templates = _Templates({(g.namespace, g.name) for g in snap.pod_groups})
    seen: set[str] = set()
    tasks: list[pb.Task] = []
    for job_id, job in jobs.items():
        group = job.PodGroup.metadata.name if job.PodGroup is not None else ""
        for uid, t in (job.Tasks or {}).items():
            path = f"$.Jobs[{job_id!r}].Tasks[{uid!r}]"
            tasks.append(_task(t, path, group, templates))
            seen.add(t.UID or uid)
    for node_name, info in (s.Nodes or {}).items():  # pods no Job holds: other schedulers'
        for key, raw in (info.Tasks or {}).items():
            path = f"$.Nodes[{node_name!r}].Tasks[{key!r}]"
            try:
                if _UID.decode(raw).UID in seen:
                    continue
                t = _TASK.decode(raw)
            except msgspec.MsgspecError as exc:
                raise _input_error(exc, path) from None
            tasks.append(_task(t, path, None, templates))
            seen.add(t.UID)
    # the order the informer view has (the API server lists by namespace, then name): Volcano keys
    # Jobs and Tasks by UID, so its order is random, and a plan's ties follow input order
    tasks.sort(key=lambda t: (t.namespace, t.name))
    snap.tasks.extend(tasks)
    return snap


def snapshot_from_session(body: bytes, name: str = "volcano-session") -> pb.Snapshot:
    """An onSessionOpen body as a Snapshot; bad input raises InputError naming the JSON path."""
    try:
        session = _SESSION.decode(body)
    except msgspec.MsgspecError as exc:
        raise _input_error(exc) from None
    return _decode_session(session, name)


def decode_check(body: bytes) -> tuple[pb.Snapshot, str, list[str]]:
    """A predicate/prioritize body as (a snapshot of the request's nodes and task, the task's
    uid, the node names): enough to answer when no fresh session holds the task."""
    check, infos = _check_body(_CHECK, body)
    assert check.task is not None
    names = [i.Name or (i.Node.metadata.name if i.Node else "") for i in infos]
    session = _Session(Nodes={n: i for n, i in zip(names, infos, strict=True)})
    snap = _decode_session(session, "extender-check")
    task = _task(check.task, "$.task", None, _Templates(set()))
    key = (task.namespace, task.name)
    if not any(t.uid == task.uid or (t.namespace, t.name) == key for t in snap.tasks):
        task.status, task.node = ts.PENDING, ""  # type: ignore[assignment]
        snap.tasks.append(task)
    else:  # the pod is already on one of the nodes: ask about that copy
        task.uid = next(t.uid for t in snap.tasks if t.uid == task.uid or (t.namespace, t.name) == key)
    return snap, task.uid, names


def check_names(body: bytes) -> tuple[str, list[str]]:
    """The task's uid and the node names of a predicate/prioritize body (the fresh-session path):
    the nodes by name only, the task read and checked as ``decode_check`` checks it (its status,
    its pod and the pod's rules), so a bad task is refused the same on either path."""
    check, infos = _check_body(_NAMES, body)
    assert check.task is not None
    task = _task(check.task, "$.task", None, _Templates(set()))
    validate_profile(task.profile, "$.task.Pod")
    return check.task.UID or task.uid, [i.Name or (i.Node.metadata.name if i.Node else "") for i in infos]


def _check_body(decoder: Any, body: bytes) -> tuple[Any, list[Any]]:
    """A predicate (``node``) or prioritize (``nodes``) body decoded: the body and its node infos."""
    try:
        check = decoder.decode(body)
    except msgspec.MsgspecError as exc:
        raise _input_error(exc) from None
    if check.task is None:
        raise InputError("$.task", "missing")
    return check, [check.node] if check.node is not None else list(check.nodes or [])


class _NodeName(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _NameOnly(msgspec.Struct):
    """A NodeInfo's name: ``Name``, else its Node's (as ``decode_check`` reads it)."""

    Name: str = ""
    Node: _NodeName | None = None


class _Names(msgspec.Struct):
    task: _Task | None = None
    node: _NameOnly | None = None
    nodes: list[_NameOnly] | None = None


_NAMES = msgspec.json.Decoder(_Names)
