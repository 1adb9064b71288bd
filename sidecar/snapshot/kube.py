"""Kubernetes objects -> Snapshot: what a Volcano session would see of a cluster's API objects.

The inverse of ``sidecar.fake.objects.objects_from_snapshot``; it lives in the snapshot layer
because both the RepackRun watcher and the fake's simulated scheduler read a cluster this way.
Quantities become Volcano units (pkg/scheduler/api/resource_info.go: cpu milli, memory bytes,
other scalars x1000, pods a count); a pod's status becomes the task status Volcano's
getTaskStatus (pkg/scheduler/api/helpers.go) reads, except that ``status.nominatedNodeName`` on
a pending pod is kept as Pipelined on that node (the snapshot's way to say "reserved there").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.state import DEFAULT_MEMORY, DEFAULT_MILLI_CPU
from sidecar.snapshot.units import CPU, MEMORY, PODS, SCALAR_FACTOR

GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_PRIORITY = "volcano.sh/task-priority"

_SUFFIX = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_INT = re.compile(r"[+-]?[0-9]+")
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def parse_quantity(value: object) -> float:
    """A Kubernetes quantity ("100m", "2Gi", "1e3", 4) in base units (cores, bytes, cards)."""
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    if m is None or m.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def volcano_units(resource: str, value: object) -> float:
    """A quantity in Volcano's units for ``resource``."""
    base = parse_quantity(value)
    if resource in (MEMORY, PODS):
        return float(round(base))
    return float(round(base * (1000.0 if resource == CPU else SCALAR_FACTOR), 6))


def _units(values: dict[str, Any] | None) -> dict[str, float]:
    return {r: volcano_units(r, q) for r, q in (values or {}).items()}


def _node(obj: Obj) -> pb.Node:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    node = pb.Node(name=meta["name"], labels=meta.get("labels") or {}, unschedulable=bool(spec.get("unschedulable")))
    for t in spec.get("taints") or []:
        node.taints.add(key=t.get("key", ""), value=t.get("value", ""), effect=t.get("effect", ""))
    status = obj.get("status", {})
    node.allocatable.update(_units(status.get("allocatable") or status.get("capacity")))
    return node


def _container_requests(c: Obj) -> tuple[dict[str, float], tuple[float, float]]:
    """Requests (limits standing in where only a limit is set, as API defaulting does) and the
    scheduler's non-zero (cpu, memory): 100m/200Mi for a resource the container does not request."""
    res = c.get("resources") or {}
    req = {**_units(res.get("limits")), **_units(res.get("requests"))}
    return req, (req.get(CPU, DEFAULT_MILLI_CPU), req.get(MEMORY, DEFAULT_MEMORY))


def _requests(spec: Obj) -> tuple[dict[str, float], tuple[float, float]]:
    """Sum over containers, then the max with each init container, plus overhead (resource_info.go)."""
    total: dict[str, float] = {}
    cpu = mem = 0.0
    for c in spec.get("containers") or []:
        req, (nc, nm) = _container_requests(c)
        for r, v in req.items():
            total[r] = total.get(r, 0.0) + v
        cpu, mem = cpu + nc, mem + nm
    for c in spec.get("initContainers") or []:
        req, (nc, nm) = _container_requests(c)
        for r, v in req.items():
            total[r] = max(total.get(r, 0.0), v)
        cpu, mem = max(cpu, nc), max(mem, nm)
    for r, v in _units(spec.get("overhead")).items():
        total[r] = total.get(r, 0.0) + v
        cpu, mem = cpu + (v if r == CPU else 0.0), mem + (v if r == MEMORY else 0.0)
    total.pop(PODS, None)
    return {r: v for r, v in total.items() if v}, (cpu, mem)


def _profile(pod: Obj) -> pb.TaskProfile:
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    prof = pb.TaskProfile(
        labels=meta.get("labels") or {},
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        node_selector=spec.get("nodeSelector") or {},
    )
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    prof.owner_kind = owner["kind"] if owner else ""
    doc: Obj = {}
    aff = spec.get("affinity") or {}
    node_aff = aff.get("nodeAffinity") or {}
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    if required.get("nodeSelectorTerms"):
        doc["requiredNodeAffinity"] = required["nodeSelectorTerms"]
    if node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"):
        doc["preferredNodeAffinity"] = node_aff["preferredDuringSchedulingIgnoredDuringExecution"]
    for kind, req_field, pref_field in (
        ("podAffinity", "podAffinity", "preferredPodAffinity"),
        ("podAntiAffinity", "podAntiAffinity", "preferredPodAntiAffinity"),
    ):
        part = aff.get(kind) or {}
        if part.get("requiredDuringSchedulingIgnoredDuringExecution"):
            doc[req_field] = part["requiredDuringSchedulingIgnoredDuringExecution"]
        if part.get("preferredDuringSchedulingIgnoredDuringExecution"):
            doc[pref_field] = [
                {"weight": w.get("weight", 0), "term": w.get("podAffinityTerm", {})}
                for w in part["preferredDuringSchedulingIgnoredDuringExecution"]
            ]
    for key in ("tolerations", "topologySpreadConstraints"):
        if spec.get(key):
            doc[key] = spec[key]
    json_format.ParseDict(doc, prof, ignore_unknown_fields=True)
    for c in spec.get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                proto = "" if p.get("protocol", "TCP") == "TCP" else p["protocol"]  # the contract's default
                prof.host_ports.add(port=p["hostPort"], protocol=proto, host_ip=p.get("hostIP", ""))
    return prof


def task_status(pod: Obj) -> tuple[int, str]:
    """(Volcano task status, node) for a pod, per the table in ``sidecar.fake.objects``."""
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    node, phase = spec.get("nodeName") or "", status.get("phase") or "Pending"
    deleting = bool(meta.get("deletionTimestamp"))
    if phase == "Running":
        return (ts.RELEASING if deleting else ts.RUNNING), node
    if phase == "Pending":
        if deleting:
            return ts.RELEASING, node
        if node:
            return ts.BOUND, node
        nominated = status.get("nominatedNodeName") or ""
        return (ts.PIPELINED, nominated) if nominated else (ts.PENDING, "")
    if phase in ("Succeeded", "Failed"):
        return (ts.SUCCEEDED if phase == "Succeeded" else ts.FAILED), node
    return ts.UNKNOWN, node


def task_priority(pod: Obj) -> int:
    """Volcano's TaskInfo.Priority (api/job_info.go NewTaskInfo): the annotation
    ``volcano.sh/task-priority`` when it is an int32, else ``spec.priority``, else 1 (a pod the
    Priority admission plugin never saw; one it saw has ``spec.priority`` set, 0 by default)."""
    note = ((pod.get("metadata") or {}).get("annotations") or {}).get(TASK_PRIORITY)
    if isinstance(note, str) and _INT.fullmatch(note) and -(2**31) <= int(note) < 2**31:  # strconv.ParseInt(_, 10, 32)
        return int(note)
    priority = (pod.get("spec") or {}).get("priority")
    return 1 if priority is None else int(priority)


def task_from_pod(pod: Obj) -> pb.Task:
    """One pod as a Task, its PodGroup named by its annotation (a PodGroup the snapshot then does
    not list is decode's warning, not this function's silence)."""
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    notes = meta.get("annotations") or {}
    status, node = task_status(pod)
    group = notes.get(GROUP_NAME, "")
    requests, (cpu, mem) = _requests(spec)
    task = pb.Task(
        uid=meta.get("uid") or f"{meta.get('namespace', '')}/{meta['name']}",
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        node=node,
        status=status,  # type: ignore[arg-type]
        pod_group=group,
        requests=requests,
        priority=task_priority(pod),
        profile=_profile(pod),
        role=notes.get(TASK_SPEC, ""),
    )
    task.nonzero_requests.cpu, task.nonzero_requests.memory = cpu, mem
    return task


def _pod_group(obj: Obj) -> pb.PodGroup:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    pg = pb.PodGroup(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        min_member=int(spec.get("minMember") or 0),
        min_task_member={k: int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        labels=meta.get("labels") or {},
        phase=(obj.get("status") or {}).get("phase", ""),
        queue=spec.get("queue") or "",
    )
    for r in meta.get("ownerReferences") or []:
        pg.owner_references.add(
            api_version=r.get("apiVersion", ""),
            kind=r.get("kind", ""),
            name=r.get("name", ""),
            uid=r.get("uid", ""),
            controller=bool(r.get("controller")),
        )
    return pg


def _pdb(obj: Obj) -> pb.PodDisruptionBudget:
    meta = obj.get("metadata", {})
    pdb = pb.PodDisruptionBudget(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        disruptions_allowed=int((obj.get("status") or {}).get("disruptionsAllowed") or 0),
    )
    selector = (obj.get("spec") or {}).get("selector")
    if selector is not None:
        json_format.ParseDict(selector, pdb.selector, ignore_unknown_fields=True)
    return pdb


def snapshot_from_objects(
    namespaces: Iterable[Obj],
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    pod_groups: Iterable[Obj],
    pdbs: Iterable[Obj],
    *,
    name: str = "",
) -> pb.Snapshot:
    """A Snapshot (task rows) of the objects given, as an informer cache holds them: a pod may
    name a node or PodGroup that is gone (decode warns, see its docstring)."""
    snap = pb.Snapshot(name=name)
    for ns in namespaces:
        meta = ns.get("metadata", {})
        snap.namespaces.add(name=meta["name"], labels=meta.get("labels") or {})
    snap.nodes.extend(_node(n) for n in nodes)
    snap.pod_groups.extend(_pod_group(g) for g in pod_groups)
    snap.tasks.extend(task_from_pod(p) for p in pods)
    snap.pdbs.extend(_pdb(p) for p in pdbs)
    return snap
