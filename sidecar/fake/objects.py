"""A Snapshot as the Kubernetes objects a cluster in that state would hold: the fake's (and the
demo's) way to start from a cluster, and the real control plane's scenarios' way to write one.

Quantities go back from Volcano's units (pkg/scheduler/api/resource_info.go: cpu milli, memory
bytes, other scalars x1000, pods a count) to Kubernetes quantities. A task's status goes back to
what Volcano's getTaskStatus (pkg/scheduler/api/helpers.go) would read as the same status where
the API can express it; session-internal states collapse:

=========================  ===========================================  =====================
task status                pod                                          Volcano reads back
=========================  ===========================================  =====================
Pending                    Pending, no nodeName                         Pending
Pipelined                  Pending, status.nominatedNodeName = node     Pending
Allocated, Binding, Bound  Pending, spec.nodeName, PodScheduled True    Bound (node held)
Running                    Running, nodeName, Ready True                Running
Releasing                  Running, Ready, metadata.deletionTimestamp   Releasing
Succeeded / Failed         Succeeded / Failed, nodeName, Ready False    Succeeded / Failed
Unknown                    Unknown                                      Unknown
=========================  ===========================================  =====================

A task's owner kind becomes the pod's controller ownerReference, as the owning controller sets
it (its PodGroup's owner when that is of the kind, else an owner named after the PodGroup or the
pod); ``Pod`` (a bare pod, the traces' word for one) sets none. Pods and PodGroups carry what a
real API server would not accept on create (status, uid, deletionTimestamp): ``FakeCluster.load``
writes them as stored state, not as client requests.
"""

from __future__ import annotations

import uuid
from typing import Any

from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.fake.eviction import selects
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.kube import GROUP_NAME, TASK_SPEC
from sidecar.snapshot.units import CPU, MEMORY, PODS

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
_NAMESPACE = uuid.UUID("5b0b7a57-7e1a-4d0c-9b8a-0e5f3a1d2c10")
_DEFAULT_CPU, _DEFAULT_MEMORY = 100.0, 200.0 * 1024**2  # scheduler util/pod_resources.go
_NATIVE = frozenset({CPU, MEMORY, "ephemeral-storage"})
_BYTES_SCALARS = ("ephemeral-storage", "hugepages-")
_BOUND = {ts.ALLOCATED, ts.BINDING, ts.BOUND}
#: the API group of the owner kinds snapshots name (a controller owner reference needs one)
OWNER_API_VERSIONS = {
    "Job": "batch.volcano.sh/v1alpha1",
    "ModelServing": "workload.serving.volcano.sh/v1alpha1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Node": "v1",
}


def stable_uid(*parts: str) -> str:
    """A deterministic uid for objects the snapshot gives none (same snapshot, same uids)."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def object_uid(given: str, *parts: str) -> str:
    """``given`` when it is a UUID, as the API server's are; else a stable UUID derived from it (or
    from ``parts`` when none is given): a snapshot's ``t-train-0`` becomes a uid that looks like one."""
    if given:
        try:
            return str(uuid.UUID(given))
        except ValueError:
            return stable_uid("uid", given)
    return stable_uid(*parts)


def _binary(value: int) -> str:
    for suffix, unit in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def quantity(resource: str, value: float) -> str:
    """A Volcano-unit value as a Kubernetes quantity string."""
    if resource == PODS:
        return str(round(value))
    if resource == MEMORY:
        return _binary(round(value))
    milli = round(value)  # cpu is milli-cores; other scalars are x1000, i.e. milli-units too
    if resource != CPU and resource.startswith(_BYTES_SCALARS) and milli % 1000 == 0:
        return _binary(milli // 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _quantities(values: dict[str, float], *, with_pods: bool) -> dict[str, str]:
    return {r: quantity(r, v) for r, v in sorted(values.items()) if with_pods or r != PODS}


def _namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _node(node: pb.Node) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node.taints:
        spec["taints"] = [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v} for t in node.taints
        ]
    if node.unschedulable:
        spec["unschedulable"] = True
    resources = _quantities(dict(node.allocatable), with_pods=True)
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    meta: dict[str, Any] = {"name": node.name, "uid": stable_uid("node", node.name)}
    if node.labels:
        meta["labels"] = dict(node.labels)
    status = {"capacity": resources, "allocatable": dict(resources), "conditions": [ready], "phase": "Running"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def _owner_refs(refs: Any, namespace: str) -> list[dict[str, Any]]:
    out = []
    for ref in refs:
        item = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
        item["uid"] = object_uid(ref.uid, ref.api_version, ref.kind, namespace, ref.name)
        if ref.controller:
            item |= {"controller": True, "blockOwnerDeletion": True}
        out.append(item)
    return out


def _pod_group(pg: pb.PodGroup, members: list[pb.Task]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": pg.name,
        "namespace": pg.namespace,
        "uid": stable_uid("podgroup", pg.namespace, pg.name),
    }
    if pg.labels:
        meta["labels"] = dict(pg.labels)
    if pg.owner_references:
        meta["ownerReferences"] = _owner_refs(pg.owner_references, pg.namespace)
    spec: dict[str, Any] = {"minMember": pg.min_member}
    if pg.min_task_member:
        spec["minTaskMember"] = dict(sorted(pg.min_task_member.items()))
    spec["queue"] = pg.queue or "default"
    status: dict[str, Any] = {
        "running": sum(t.status == ts.RUNNING for t in members),
        "succeeded": sum(t.status == ts.SUCCEEDED for t in members),
        "failed": sum(t.status == ts.FAILED for t in members),
    }
    if pg.phase:
        status["phase"] = pg.phase
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def _affinity(prof: dict[str, Any]) -> dict[str, Any]:
    """TaskProfile (proto JSON) -> core/v1 Affinity."""
    out: dict[str, Any] = {}
    node: dict[str, Any] = {}
    if prof.get("requiredNodeAffinity"):
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": prof["requiredNodeAffinity"]}
    if prof.get("preferredNodeAffinity"):
        node["preferredDuringSchedulingIgnoredDuringExecution"] = prof["preferredNodeAffinity"]
    if node:
        out["nodeAffinity"] = node
    for kind, required, preferred in (
        ("podAffinity", "podAffinity", "preferredPodAffinity"),
        ("podAntiAffinity", "podAntiAffinity", "preferredPodAntiAffinity"),
    ):
        part: dict[str, Any] = {}
        if prof.get(required):
            part["requiredDuringSchedulingIgnoredDuringExecution"] = prof[required]
        if prof.get(preferred):
            weighted = [{"weight": w.get("weight", 0), "podAffinityTerm": w.get("term", {})} for w in prof[preferred]]
            part["preferredDuringSchedulingIgnoredDuringExecution"] = weighted
        if part:
            out[kind] = part
    return out


def _containers(task: pb.Task, prof: pb.TaskProfile) -> list[dict[str, Any]]:
    """One container holding the pod-level request, plus request-less sidecars when the task's
    non-zero request says that many containers took the scheduler's 100m/200Mi default."""
    requests = {r: v for r, v in task.requests.items() if r != PODS and v}
    extra = 0
    if task.HasField("nonzero_requests"):
        cpu, mem = task.requests.get(CPU, 0.0), task.requests.get(MEMORY, 0.0)
        kc = (task.nonzero_requests.cpu - cpu) / _DEFAULT_CPU
        km = (task.nonzero_requests.memory - mem) / _DEFAULT_MEMORY
        if min(kc, km) >= 0 and abs(kc - round(kc)) < 1e-6 and abs(km - round(km)) < 1e-6:
            extra, kc, km = max(round(kc), round(km)), round(kc), round(km)
            requests[CPU], requests[MEMORY] = cpu, mem  # explicit, so a 0 stays 0
    res: dict[str, Any] = {"requests": _quantities(requests, with_pods=False)}
    limits = {r: q for r, q in res["requests"].items() if r not in _NATIVE}
    if limits:
        res["limits"] = limits  # extended resources must set limits equal to requests
    main: dict[str, Any] = {"name": "main", "image": PAUSE_IMAGE, "resources": res}
    if prof.host_ports:
        main["ports"] = [
            {
                "containerPort": p.port,
                "hostPort": p.port,
                "protocol": p.protocol or "TCP",
                **({"hostIP": p.host_ip} if p.host_ip else {}),
            }
            for p in prof.host_ports
        ]
    out = [main]
    for i in range(extra):
        zero = {r: "0" for r, k in ((CPU, kc), (MEMORY, km)) if i >= k}
        out.append({"name": f"sidecar-{i}", "image": PAUSE_IMAGE, "resources": {"requests": zero} if zero else {}})
    return out


def _pod_status(task: pb.Task) -> tuple[dict[str, Any], dict[str, Any]]:
    """(status, extra metadata) for a task status, per the table in the module docstring."""
    scheduled = {"type": "PodScheduled", "status": "True"}
    if task.status in (ts.PENDING, ts.PIPELINED) or (task.status in _BOUND and not task.node):
        status: dict[str, Any] = {"phase": "Pending"}
        if task.status == ts.PIPELINED and task.node:
            status["nominatedNodeName"] = task.node
        return status, {}
    if task.status in _BOUND:
        return {"phase": "Pending", "conditions": [scheduled]}, {}
    if task.status in (ts.RUNNING, ts.RELEASING):
        conds = [scheduled, *({"type": t, "status": "True"} for t in ("Initialized", "ContainersReady", "Ready"))]
        extra = (
            {"deletionTimestamp": "1970-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}
            if task.status == ts.RELEASING
            else {}
        )
        return {"phase": "Running", "conditions": conds}, extra
    if task.status in (ts.SUCCEEDED, ts.FAILED):
        phase = "Succeeded" if task.status == ts.SUCCEEDED else "Failed"
        ready = {"type": "Ready", "status": "False", "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed"}
        return {"phase": phase, "conditions": [scheduled, ready]}, {}
    return {"phase": "Unknown"}, {}


def _pod(task: pb.Task, groups: dict[tuple[str, str], pb.PodGroup]) -> dict[str, Any]:
    prof = task.profile
    pj = json_format.MessageToDict(prof)
    meta: dict[str, Any] = {
        "name": task.name,
        "namespace": task.namespace,
        "uid": object_uid(task.uid, "pod", task.namespace, task.name),
    }
    if prof.labels:
        meta["labels"] = dict(prof.labels)
    notes: dict[str, str] = {}
    if task.pod_group:
        notes[GROUP_NAME] = task.pod_group
    if task.role:
        notes[TASK_SPEC] = task.role
    group = groups.get((task.namespace, task.pod_group))
    owners = [r for r in (group.owner_references if group else []) if r.kind == prof.owner_kind and r.controller]
    if not owners and prof.owner_kind not in ("", "Pod"):  # the controller's reference, named after what it runs
        kind = prof.owner_kind
        name = task.pod_group or task.name
        owners = [pb.OwnerReference(api_version=OWNER_API_VERSIONS.get(kind, "v1"), kind=kind, name=name,
                                    controller=True)]  # fmt: skip
    if owners:
        meta["ownerReferences"] = _owner_refs(owners[:1], task.namespace)
    if notes:
        meta["annotations"] = notes
    spec: dict[str, Any] = {"schedulerName": prof.scheduler_name or "default-scheduler", "priority": task.priority}
    if prof.node_selector:
        spec["nodeSelector"] = dict(prof.node_selector)
    affinity = _affinity(pj)
    if affinity:
        spec["affinity"] = affinity
    if pj.get("tolerations"):
        spec["tolerations"] = pj["tolerations"]
    if pj.get("topologySpreadConstraints"):
        spec["topologySpreadConstraints"] = pj["topologySpreadConstraints"]
    spec["containers"] = _containers(task, prof)
    status, extra_meta = _pod_status(task)
    if status["phase"] == "Running":  # kubectl's READY column counts ready container statuses
        status["containerStatuses"] = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": "1970-01-01T00:00:00Z"}},
            }
            for c in spec["containers"]
        ]
    if task.node and task.status not in (ts.PENDING, ts.PIPELINED):
        spec["nodeName"] = task.node
    meta |= extra_meta
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _pdb(pdb: pb.PodDisruptionBudget, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The snapshot knows only disruptionsAllowed: minAvailable is what leaves that many disruptions
    over the Ready pods the selector matches, and the status says so, as the disruption controller would."""
    selector = json_format.MessageToDict(pdb.selector) if pdb.HasField("selector") else None
    probe = {"spec": {"selector": selector}}
    healthy = sum(
        1
        for p in pods
        if p["metadata"]["namespace"] == pdb.namespace
        and selects(probe, p["metadata"].get("labels") or {})
        and p["status"].get("phase") == "Running"
        and "deletionTimestamp" not in p["metadata"]
    )
    desired = max(0, healthy - pdb.disruptions_allowed)
    meta = {
        "name": pdb.name,
        "namespace": pdb.namespace,
        "generation": 1,
        "uid": stable_uid("pdb", pdb.namespace, pdb.name),
    }
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {"minAvailable": desired, "selector": selector},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": pdb.disruptions_allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": healthy,
        },
    }


def objects_from_snapshot(snap: pb.Snapshot) -> list[dict[str, Any]]:
    """Namespaces, Nodes, PodGroups, Pods and PDBs, in that (creation) order."""
    rows = to_rows(snap)
    ns_labels = {n.name: dict(n.labels) for n in rows.namespaces}
    for name in [
        *(t.namespace for t in rows.tasks),
        *(g.namespace for g in rows.pod_groups),
        *(p.namespace for p in rows.pdbs),
    ]:
        ns_labels.setdefault(name, {})
    groups = {(g.namespace, g.name): g for g in rows.pod_groups}
    tasks = list(rows.tasks)
    members: dict[tuple[str, str], list[pb.Task]] = {}
    for t in tasks:  # grouped once: a scan per PodGroup was quadratic (3k groups x 5k pods on openb)
        members.setdefault((t.namespace, t.pod_group), []).append(t)
    pods = [_pod(t, groups) for t in tasks]
    return [
        *(_namespace(name, labels) for name, labels in ns_labels.items()),
        *(_node(n) for n in rows.nodes),
        *(_pod_group(g, members.get((g.namespace, g.name), [])) for g in rows.pod_groups),
        *pods,
        *(_pdb(p, pods) for p in rows.pdbs),
    ]
