"""Snapshot -> the JSON Volcano's extender plugin would POST to ``onSessionOpen`` (and predicate/prioritize).

Written from the Go types (pkg/scheduler/api: JobInfo, TaskInfo, NodeInfo, Resource; plugins/
extender/argument.go) as ``encoding/json`` marshals them: Go field names as keys (no json
tags), maps keyed by id, ``null`` for nil pointers/maps/slices, the embedded TransactionContext
inlined into TaskInfo, scalars x1000 in ``Resource``. Each Volcano pod appears in five places:
its Job's ``Tasks`` and ``TaskStatusIndex``, the Job's ``SubJobs`` (v1.14+), and its node's
``Tasks`` (keyed ``ns/name``). Padding makes bodies realistic: ``managedFields`` on every object
and ``images`` on nodes.

The Kubernetes objects come from the caller (``sidecar.fake.objects.objects_from_snapshot``,
one layer up), so this module only adds Volcano's wrapping.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.units import CPU, MEMORY, PODS

_TIME = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class Release:
    """Which Volcano release's field set to write."""

    sub_jobs: bool = True  # SubJobs, TaskToSubJob, MinSubJobs (v1.14+)
    dra: bool = True  # DRAResreq, ResourceClaimKeys, ResourceClaimDRAResreq (v1.15+)
    managed_fields: int = 3  # managedFields entries per object (0: none)
    images: int = 20  # images per node (0: none)


V1_13 = Release(sub_jobs=False, dra=False)
V1_14 = Release(dra=False)
MASTER = Release()
BARE = Release(managed_fields=0, images=0)


def _managed(n: int) -> list[Obj] | None:
    if not n:
        return None
    return [
        {
            "manager": f"manager-{i}",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _TIME,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:status": {"f:conditions": {".": {}}}},
        }
        for i in range(n)
    ]


def _resource(units: dict[str, float], null_scalars: bool = True) -> Obj:
    scalars = {r: v for r, v in units.items() if r not in (CPU, MEMORY, PODS)}
    return {
        "MilliCPU": units.get(CPU, 0.0),
        "Memory": units.get(MEMORY, 0.0),
        "ScalarResources": scalars or (None if null_scalars else {}),
        "MaxTaskNum": int(units.get(PODS, 0)),
    }


def _task_info(task: pb.Task, job: str, pod: Obj, rel: Release) -> Obj:
    req = {**dict(task.requests)}
    info: Obj = {
        "UID": task.uid,
        "Job": job,
        "Name": task.name,
        "Namespace": task.namespace,
        "TaskRole": task.role,
        "Resreq": _resource(req),
        "InitResreq": _resource(req),
    }
    if rel.dra:
        info |= {"DRAResreq": None, "ResourceClaimKeys": None, "ResourceClaimDRAResreq": None}
    info |= {
        "NodeName": task.node,
        "EvictionOccurred": False,
        "JobAllocatedHyperNode": "",
        "Status": int(task.status),
        "LastTransaction": None,
        "Priority": task.priority,
        "VolumeReady": False,
        "Preemptable": False,
        "BestEffort": not req,
        "HasRestartableInitContainer": False,
        "SchGated": False,
        "RevocableZone": "",
        "NumaInfo": None,
        "Pod": pod,
        "PodAnnotations": dict(pod["metadata"].get("annotations") or {}),
        "CustomBindErrHandlerSucceeded": False,
    }
    return info


def _sum(tasks: Iterable[pb.Task]) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in tasks:
        for r, v in t.requests.items():
            out[r] = out.get(r, 0.0) + v
    return out


def _job(pg: pb.PodGroup, pg_obj: Obj, infos: list[tuple[pb.Task, Obj]], rel: Release) -> Obj:
    job_id = f"{pg.namespace}/{pg.name}"
    tasks = {t.uid: i for t, i in infos}
    index: dict[str, Obj] = {}
    for t, i in infos:
        index.setdefault(str(int(t.status)), {})[t.uid] = i
    placed = [t for t, _ in infos if t.node and t.status not in (ts.PENDING,)]
    out: Obj = {
        "UID": job_id,
        "PgUID": pg_obj["metadata"].get("uid", ""),
        "Name": pg.name,
        "Namespace": pg.namespace,
        "Queue": pg.queue or "default",
        "Priority": 0,
        "MinAvailable": pg.min_member,
        "WaitingTime": None,
        "JobFitErrors": "",
        "NodesFitErrors": {},
        "AllocatedHyperNode": "",
        "NetworkTopology": None,
    }
    if rel.sub_jobs:
        sub = f"{job_id}/default"
        out["SubJobs"] = {sub: {"UID": sub, "Job": job_id, "MinAvailable": 0, "Tasks": tasks}}
        out["TaskToSubJob"] = {uid: sub for uid in tasks}
        out["MinSubJobs"] = None
    out |= {
        "TaskStatusIndex": index,
        "Tasks": tasks,
        "TaskMinAvailable": dict(pg.min_task_member) or None,
        "TaskMinAvailableTotal": sum(pg.min_task_member.values()),
        "Allocated": _resource(_sum(placed)),
        "TotalRequest": _resource(_sum(t for t, _ in infos)),
        "CreationTimestamp": _TIME,
        "PodGroup": {**pg_obj, "Version": "v1beta1"},
        "ScheduleStartTimestamp": _TIME,
        "Preemptable": False,
        "RevocableZone": "",
        "Budget": {"MinAvailable": "", "MaxUnavailable": ""},
    }
    return out


def _node_info(node: pb.Node, obj: Obj, tasks: dict[str, Obj], rel: Release) -> Obj:
    obj = copy.deepcopy(obj)
    obj.setdefault("status", {})["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": _TIME, "reason": "KubeletReady"}
    ]
    alloc = dict(node.allocatable)
    held = [i for i in tasks.values() if i["Status"] & ~(ts.SUCCEEDED | ts.FAILED)]
    used: dict[str, float] = {}
    for i in held:
        r = i["Resreq"]
        for k, v in ((CPU, r["MilliCPU"]), (MEMORY, r["Memory"]), *(r["ScalarResources"] or {}).items()):
            used[k] = used.get(k, 0.0) + v
    idle = {k: v - used.get(k, 0.0) for k, v in alloc.items() if k != PODS}
    return {
        "Name": node.name,
        "Node": obj,
        "State": {"Phase": 1, "Reason": ""},
        "Releasing": _resource({}),
        "Pipelined": _resource({}),
        "Idle": _resource(idle),
        "Used": _resource(used),
        "Allocatable": _resource(alloc),
        "Capacity": _resource(alloc),
        "ResourceUsage": {"CPUUsageAvg": {}, "MEMUsageAvg": {}},
        "Tasks": tasks,
        "NumaInfo": None,
        "UnassignedNumaPods": None,
        "NumaSchedulerInfo": None,
        "RevocableZone": "",
        "Others": None,
        "OversubscriptionNode": False,
        "OfflineJobEvicting": False,
        "OversubscriptionResource": _resource({}),
        "ImageStates": None,
        "Generation": 1,
        "BindGeneration": 0,
    }


def pad(objects: list[Obj], rel: Release = MASTER) -> list[Obj]:
    """``objects`` (in place) with what a live cluster's carry and the planner skips:
    ``managedFields`` on Pods, Nodes and PodGroups, ``images`` on Nodes. Also used for the bodies
    Volcano's own code marshals (bench.extender)."""
    for o in objects:
        if rel.managed_fields and o["kind"] in ("Pod", "Node", "PodGroup"):
            o["metadata"]["managedFields"] = _managed(rel.managed_fields)
        if rel.images and o["kind"] == "Node":
            o.setdefault("status", {})["images"] = [
                {"names": [f"registry.example.com/team/image-{i}@sha256:{i:064x}"], "sizeBytes": 10**9 + i}
                for i in range(rel.images)
            ]
    return objects


def session_dict(snap: pb.Snapshot, objects: list[Obj], rel: Release = MASTER) -> Obj:
    """The OnSessionOpenRequest of ``snap``; ``objects`` are its Kubernetes objects."""
    rows = to_rows(snap)
    by_kind: dict[str, dict[tuple[str, str], Obj]] = {}
    for o in pad(objects, rel):
        m = o["metadata"]
        by_kind.setdefault(o["kind"], {})[(m.get("namespace", ""), m["name"])] = o
    pods, nodes_k, pgs = by_kind.get("Pod", {}), by_kind.get("Node", {}), by_kind.get("PodGroup", {})
    groups = {(g.namespace, g.name): g for g in rows.pod_groups}
    members: dict[tuple[str, str], list[tuple[pb.Task, Obj]]] = {}
    on_node: dict[str, dict[str, Obj]] = {n.name: {} for n in rows.nodes}
    for t in rows.tasks:
        key = (t.namespace, t.pod_group)
        job = f"{t.namespace}/{t.pod_group}" if key in groups else ""
        info = _task_info(t, job, pods[(t.namespace, t.name)], rel)
        if job:
            members.setdefault(key, []).append((t, info))
        if t.node and t.status != ts.PENDING and t.node in on_node:
            on_node[t.node][f"{t.namespace}/{t.name}"] = info
    jobs = {f"{k[0]}/{k[1]}": _job(g, pgs[k], members.get(k, []), rel) for k, g in groups.items()}
    namespaces = sorted({t.namespace for t in rows.tasks} | {g.namespace for g in rows.pod_groups})
    return {
        "Jobs": jobs,
        "Nodes": {n.name: _node_info(n, nodes_k[("", n.name)], on_node[n.name], rel) for n in rows.nodes},
        "Queues": {"default": {"UID": "default", "Name": "default", "Weight": 1, "Queue": None}},
        "NamespaceInfo": {ns: {"Name": ns, "QuotaStatus": {}} for ns in namespaces},
        "RevocableNodes": {},
        "NodeList": None,  # the plugin never sets it
    }


def session_body(snap: pb.Snapshot, objects: list[Obj], rel: Release = MASTER) -> bytes:
    return orjson.dumps(session_dict(snap, objects, rel))


def check_bodies(session: Obj, task_uid: str, node_names: list[str]) -> tuple[bytes, bytes]:
    """(predicate body for the first node, prioritize body for all) about one task of ``session``."""
    task = next(t for j in session["Jobs"].values() for uid, t in j["Tasks"].items() if uid == task_uid)
    nodes = [session["Nodes"][n] for n in node_names]
    return (
        orjson.dumps({"task": task, "node": nodes[0]}),
        orjson.dumps({"task": task, "nodes": nodes}),
    )
