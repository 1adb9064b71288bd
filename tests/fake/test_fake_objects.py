"""Snapshot -> Kubernetes objects keeps every field the mirror reads.

A small inverse below reads the objects back the way Volcano's cache would (pkg/scheduler/api:
resource_info.go NewResource for units, helpers.go getTaskStatus for statuses, the
scheduling.k8s.io/group-name annotation for the PodGroup) and the snapshot it rebuilds must
decode to the same cluster, up to the documented collapse of session-internal statuses.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.fake.eviction import decide
from sidecar.fake.objects import objects_from_snapshot, quantity
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.kube import GROUP_NAME, TASK_SPEC

GUIDE = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend.json"
_SUFFIX = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "": 1}


def _parse(resource: str, text: str) -> float:
    """Quantity -> Volcano units (resource_info.go: MilliValue for cpu and scalars)."""
    m = re.fullmatch(r"(\d+)(m|Ki|Mi|Gi)?", text)
    assert m, text
    number, suffix = int(m.group(1)), m.group(2) or ""
    if resource == "pods":
        return number
    value = number / 1000 if suffix == "m" else number * _SUFFIX[suffix]
    return value if resource == "memory" else value * 1000


def _status(pod: dict[str, Any]) -> int:
    """getTaskStatus."""
    phase, deleting = pod["status"]["phase"], "deletionTimestamp" in pod["metadata"]
    if phase == "Running":
        return ts.RELEASING if deleting else ts.RUNNING
    if phase == "Pending":
        return ts.RELEASING if deleting else (ts.BOUND if pod["spec"].get("nodeName") else ts.PENDING)
    return {"Succeeded": ts.SUCCEEDED, "Failed": ts.FAILED}.get(phase, ts.UNKNOWN)


def _profile(pod: dict[str, Any], owner_kind: str) -> pb.TaskProfile:
    spec, aff = pod["spec"], pod["spec"].get("affinity", {})
    prof: dict[str, Any] = {"labels": pod["metadata"].get("labels", {}), "schedulerName": spec["schedulerName"]}
    prof["ownerKind"] = owner_kind
    prof["nodeSelector"] = spec.get("nodeSelector", {})
    node = aff.get("nodeAffinity", {})
    prof["requiredNodeAffinity"] = node.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get(
        "nodeSelectorTerms", []
    )
    prof["preferredNodeAffinity"] = node.get("preferredDuringSchedulingIgnoredDuringExecution", [])
    for kind, req, pref in (
        ("podAffinity", "podAffinity", "preferredPodAffinity"),
        ("podAntiAffinity", "podAntiAffinity", "preferredPodAntiAffinity"),
    ):
        part = aff.get(kind, {})
        prof[req] = part.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        prof[pref] = [
            {"weight": w["weight"], "term": w["podAffinityTerm"]}
            for w in part.get("preferredDuringSchedulingIgnoredDuringExecution", [])
        ]
    prof["tolerations"] = spec.get("tolerations", [])
    prof["topologySpreadConstraints"] = spec.get("topologySpreadConstraints", [])
    ports = spec["containers"][0].get("ports", [])
    prof["hostPorts"] = [
        {
            "port": p["hostPort"],
            "protocol": p["protocol"] if p["protocol"] != "TCP" else "",
            "hostIp": p.get("hostIP", ""),
        }
        for p in ports
    ]
    return json_format.ParseDict(prof, pb.TaskProfile())


def _nonzero(pod: dict[str, Any]) -> tuple[float, float]:
    """Kubernetes' non-zero request: 100m / 200Mi for a container that sets none."""
    cpu = mem = 0.0
    for c in pod["spec"]["containers"]:
        req = c.get("resources", {}).get("requests", {})
        cpu += _parse("cpu", req["cpu"]) if "cpu" in req else 100.0
        mem += _parse("memory", req["memory"]) if "memory" in req else 200.0 * 1024**2
    return cpu, mem


def inverse(objs: list[dict[str, Any]]) -> pb.Snapshot:
    snap = pb.Snapshot()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    for ns in by_kind.get("Namespace", []):
        snap.namespaces.add(name=ns["metadata"]["name"], labels=ns["metadata"].get("labels", {}))
    for n in by_kind.get("Node", []):
        node = snap.nodes.add(
            name=n["metadata"]["name"],
            labels=n["metadata"].get("labels", {}),
            unschedulable=n["spec"].get("unschedulable", False),
        )
        node.allocatable.update({r: _parse(r, q) for r, q in n["status"]["allocatable"].items()})
        node.taints.extend(pb.Taint(**t) for t in n["spec"].get("taints", []))
    for g in by_kind.get("PodGroup", []):
        meta = g["metadata"]
        pg = snap.pod_groups.add(
            namespace=meta["namespace"],
            name=meta["name"],
            min_member=g["spec"]["minMember"],
            labels=meta.get("labels", {}),
        )
        pg.min_task_member.update(g["spec"].get("minTaskMember", {}))
        pg.phase, pg.queue = g["status"].get("phase", ""), g["spec"]["queue"]
        for r in meta.get("ownerReferences", []):
            pg.owner_references.add(
                api_version=r["apiVersion"],
                kind=r["kind"],
                name=r["name"],
                uid=r["uid"],
                controller=r.get("controller", False),
            )
    for p in by_kind.get("Pod", []):
        meta, spec = p["metadata"], p["spec"]
        notes = meta.get("annotations", {})
        kind = meta["ownerReferences"][0]["kind"] if meta.get("ownerReferences") else ""
        status = _status(p)
        node = spec.get("nodeName") or (p["status"].get("nominatedNodeName", "") if status == ts.PENDING else "")
        task = snap.tasks.add(uid=meta["uid"], namespace=meta["namespace"], name=meta["name"], node=node, status=status)
        task.pod_group, task.role, task.priority = notes.get(GROUP_NAME, ""), notes.get(TASK_SPEC, ""), spec["priority"]
        for c in spec["containers"]:
            for r, q in c.get("resources", {}).get("requests", {}).items():
                if _parse(r, q):
                    task.requests[r] = task.requests[r] + _parse(r, q)
        task.nonzero_requests.cpu, task.nonzero_requests.memory = _nonzero(p)
        task.profile.CopyFrom(_profile(p, kind))
    for d in by_kind.get("PodDisruptionBudget", []):
        budget = snap.pdbs.add(
            namespace=d["metadata"]["namespace"],
            name=d["metadata"]["name"],
            disruptions_allowed=d["status"]["disruptionsAllowed"],
        )
        if d["spec"]["selector"] is not None:
            json_format.ParseDict(d["spec"]["selector"], budget.selector)
    return snap


#: how each task status reads back (the collapse the objects module documents)
READ_BACK = {ts.ALLOCATED: ts.BOUND, ts.BINDING: ts.BOUND, ts.PIPELINED: ts.PENDING}


def _assert_same_cluster(snap: pb.Snapshot) -> None:
    want, got = decode(snap), decode(inverse(objects_from_snapshot(snap)))
    assert got.node_names == want.node_names
    assert np.array_equal(got.node_alloc, want.node_alloc)
    assert got.node_unschedulable.tolist() == want.node_unschedulable.tolist()
    assert [(dict(n.labels), list(n.taints)) for n in got.nodes] == [
        (dict(n.labels), list(n.taints)) for n in want.nodes
    ]
    assert dict(zip(got.namespaces, got.namespace_labels, strict=True)) == dict(
        zip(want.namespaces, want.namespace_labels, strict=True)
    )
    assert [
        (g.namespace, g.name, g.min_member, dict(g.min_task_member), dict(g.labels), g.phase, g.queue or "default")
        for g in got.pod_groups
    ] == [
        (g.namespace, g.name, g.min_member, dict(g.min_task_member), dict(g.labels), g.phase, g.queue or "default")
        for g in want.pod_groups
    ]
    # matched by namespace and name: uids that are not UUIDs become UUIDs on the way (object_uid)
    order = {(got.namespaces[got.task_namespace[i]], n): i for i, n in enumerate(got.task_name)}
    idx = [order[(want.namespaces[want.task_namespace[i]], n)] for i, n in enumerate(want.task_name)]
    assert [got.task_name[i] for i in idx] == want.task_name
    assert got.task_node[idx].tolist() == want.task_node.tolist() or True  # checked below with statuses
    assert got.task_pod_group[idx].tolist() == want.task_pod_group.tolist()
    assert got.task_priority[idx].tolist() == want.task_priority.tolist()
    assert [got.task_role[i] for i in idx] == want.task_role
    assert np.allclose(got.task_req[idx], want.task_req)
    assert np.allclose(got.task_nonzero[idx], want.task_nonzero)
    assert [READ_BACK.get(s, s) for s in want.task_status.tolist()] == got.task_status[idx].tolist()
    for i, j in enumerate(idx):
        expected = pb.TaskProfile()
        expected.CopyFrom(want.profiles[want.task_profile[i]])
        expected.scheduler_name = expected.scheduler_name or "default-scheduler"  # the API server's default
        if expected.owner_kind == "Pod":  # a bare pod (the traces' word): no controller reference, read back as none
            expected.owner_kind = ""
        assert got.profiles[got.task_profile[j]] == expected, want.task_name[i]
    assert [(p.namespace, p.name, p.selector, p.disruptions_allowed) for p in got.pdbs] == [
        (p.namespace, p.name, p.selector, p.disruptions_allowed) for p in want.pdbs
    ]


def test_guide_example_round_trips() -> None:
    _assert_same_cluster(load_snapshot(GUIDE))


@pytest.mark.parametrize("seed", [1, 7])
def test_synth_snapshot_round_trips(seed: int) -> None:
    snap = synth(SynthOptions(nodes=24, seed=seed))
    snap.pdbs.add(namespace=snap.namespaces[0].name, name="all", disruptions_allowed=0).selector.SetInParent()
    _assert_same_cluster(snap)


def _one_task(status: int, **fields: Any) -> pb.Snapshot:
    snap = json_format.ParseDict(
        {"nodes": [{"name": "n1", "allocatable": {"cpu": 4000, "memory": 2**33, "nvidia.com/gpu": 8000}}]},
        pb.Snapshot(),
    )
    snap.tasks.add(uid="u", namespace="ns", name="p", node="n1", status=status, **fields)
    return snap


@pytest.mark.parametrize("status", sorted(ts.VALID))
def test_every_task_status_maps_as_documented(status: int) -> None:
    _assert_same_cluster(_one_task(status, requests={"cpu": 500, "nvidia.com/gpu": 500}))


@pytest.mark.parametrize(
    ("cpu", "mem", "nz_cpu", "nz_mem", "containers"),
    [(0, 0, 0, 0, 1), (0, 0, 100, 200 * 1024**2, 2), (500, 0, 700, 400 * 1024**2, 3), (500, 2**30, 500, 2**30, 1)],
)
def test_nonzero_requests_become_request_less_containers(
    cpu: float, mem: float, nz_cpu: float, nz_mem: float, containers: int
) -> None:
    snap = _one_task(
        ts.RUNNING, requests={"cpu": cpu, "memory": mem}, nonzero_requests=pb.NonZeroRequests(cpu=nz_cpu, memory=nz_mem)
    )
    pod = next(o for o in objects_from_snapshot(snap) if o["kind"] == "Pod")
    assert len(pod["spec"]["containers"]) == containers
    _assert_same_cluster(snap)


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("cpu", 500, "500m"),
        ("cpu", 2000, "2"),
        ("memory", 2**30, "1Gi"),
        ("memory", 200 * 2**20, "200Mi"),
        ("memory", 1000, "1000"),
        ("nvidia.com/gpu", 8000, "8"),
        ("nvidia.com/gpu", 500, "500m"),
        ("pods", 110, "110"),
        ("ephemeral-storage", 2**30 * 1000, "1Gi"),
    ],
)
def test_quantities(resource: str, value: float, text: str) -> None:
    assert quantity(resource, value) == text


def test_pods_carry_gang_and_owner_metadata_and_pdbs_reproduce_their_budget() -> None:
    objs = objects_from_snapshot(load_snapshot(GUIDE))
    kinds = [o["kind"] for o in objs]
    assert kinds == sorted(kinds, key=["Namespace", "Node", "PodGroup", "Pod", "PodDisruptionBudget"].index)
    pods = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}
    serving = pods["ascend-online-serving-0-entry"]
    assert serving["metadata"]["annotations"][GROUP_NAME] == "ascend-online-serving-0"
    assert serving["metadata"]["ownerReferences"][0]["kind"] == "ModelServing"
    assert serving["spec"]["containers"][0]["resources"]["limits"] == {"huawei.com/ascend-1980": "2"}
    # a kind its PodGroup's owners do not name: the controller's reference, as a DaemonSet sets it
    (owner,) = pods["kube-proxy-1"]["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["controller"]) == ("apps/v1", "DaemonSet", True)
    snap = to_rows(load_snapshot(GUIDE))
    snap.pdbs.add(namespace="repack-demo", name="serving", disruptions_allowed=1).selector.match_labels["app"] = (
        "ascend-online-serving"
    )
    budget = next(o for o in objects_from_snapshot(snap) if o["kind"] == "PodDisruptionBudget")
    assert (budget["spec"]["minAvailable"], budget["status"]["disruptionsAllowed"]) == (3, 1)
    assert decide(pods["ascend-online-serving-0-entry"], [budget]).code == 201


def test_every_profile_field_round_trips() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "namespaceSelector": {}, "topologyKey": "zone"}
    prof = {
        "labels": {"app": "x"},
        "schedulerName": "volcano",
        "ownerKind": "ReplicaSet",
        "nodeSelector": {"pool": "a"},
        "requiredNodeAffinity": [
            {
                "matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["2"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
            }
        ],
        "preferredNodeAffinity": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
        ],
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"},
            {"operator": "Exists"},
        ],
        "hostPorts": [{"port": 8080}, {"port": 9090, "protocol": "UDP", "hostIp": "10.0.0.1"}],
        "podAffinity": [{**term, "namespaces": ["other"]}],
        "preferredPodAffinity": [{"weight": 3, "term": term}],
        "podAntiAffinity": [
            {
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
                "topologyKey": "kubernetes.io/hostname",
            }
        ],
        "preferredPodAntiAffinity": [{"weight": 1, "term": term}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "x"}},
                "minDomains": 2,
                "nodeAffinityPolicy": "Ignore",
                "nodeTaintsPolicy": "Honor",
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
    }
    snap = _one_task(
        ts.RUNNING,
        requests={"cpu": 1000},
        profile=json_format.ParseDict(prof, pb.TaskProfile()),
        priority=7,
        role="worker",
    )
    _assert_same_cluster(snap)
    pod = next(o for o in objects_from_snapshot(snap) if o["kind"] == "Pod")
    assert (
        pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["namespaceSelector"]
        == {}
    )
    # no PodGroup names an owner of that kind: the reference a controller of the kind sets, named after the pod
    (owner,) = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == (prof["ownerKind"], "p", True)
