"""Volcano extender-plugin session JSON -> Snapshot, on Volcano-shaped bodies (sidecar.scenarios.volcano_session)."""

from __future__ import annotations

import copy

import orjson
import pytest

from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import InputError
from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.scenarios.volcano_session import BARE, MASTER, V1_13, V1_14, Release, session_body, session_dict
from sidecar.service import Deadline, RepackService
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from sidecar.snapshot.volcano import decode_check, snapshot_from_session

GUIDE = "sidecar/data/guide-ascend.json"
DRYRUN = "sidecar/data/guide-ascend-dryrun.yaml"


def body(snap, rel: Release = MASTER) -> bytes:  # type: ignore[no-untyped-def]
    return session_body(snap, objects_from_snapshot(snap), rel)


def answers(snap):  # type: ignore[no-untyped-def]
    svc = RepackService()
    ev = svc.evaluate(service_pb2.EvaluateRequest(snapshot=snap), Deadline.none())
    return [(r.resource, r.occupied_nodes, r.min_occupied_nodes, r.allocated) for r in ev.resources]


def plan(snap, run: str = DRYRUN):  # type: ignore[no-untyped-def]
    resp = RepackService().plan(service_pb2.PlanRequest(snapshot=snap, spec=load_repack_spec(run)), Deadline.none())
    s = resp.status
    return s.outcome if hasattr(s, "outcome") else None, str(s.plan)


@pytest.mark.parametrize("rel", [MASTER, V1_14, V1_13, BARE], ids=["master", "v1.14", "v1.13", "bare"])
def test_guide_round_trip_plans_the_same(rel: Release) -> None:
    snap = load_snapshot(GUIDE)
    back = snapshot_from_session(body(snap, rel))
    assert answers(back) == answers(snap)
    assert plan(back) == plan(snap)


def test_synth_round_trip_keeps_every_placed_task() -> None:
    snap = to_rows(synth(SynthOptions(nodes=40, fill=0.6, seed=7)))
    back = snapshot_from_session(body(snap))
    want = {(t.uid, t.node, t.status) for t in snap.tasks if t.pod_group or (t.node and t.status != ts.PENDING)}
    assert {(t.uid, t.node, t.status) for t in back.tasks} == want
    assert answers(back) == answers(snap)
    by_uid = {t.uid: t for t in snap.tasks}
    for t in back.tasks:
        assert dict(t.requests) == pytest.approx(dict(by_uid[t.uid].requests), abs=1.0)  # memory: whole bytes
        assert t.pod_group == by_uid[t.uid].pod_group


def test_release_variants_carry_their_fields() -> None:
    snap = load_snapshot(GUIDE)
    objs = objects_from_snapshot(snap)
    job = next(iter(session_dict(snap, copy.deepcopy(objs), MASTER)["Jobs"].values()))
    assert "SubJobs" in job and "DRAResreq" in next(iter(job["Tasks"].values()))
    old = next(iter(session_dict(snap, copy.deepcopy(objs), V1_13)["Jobs"].values()))
    assert "SubJobs" not in old and "DRAResreq" not in next(iter(old["Tasks"].values()))


def test_nulls_and_minimal_sessions() -> None:
    assert len(snapshot_from_session(b"{}").nodes) == 0
    empty = {
        "Jobs": None,
        "Nodes": None,
        "Queues": None,
        "NamespaceInfo": None,
        "RevocableNodes": None,
        "NodeList": None,
    }
    assert len(snapshot_from_session(orjson.dumps(empty)).tasks) == 0
    minimal = {
        "Nodes": {
            "n1": {
                "Name": "n1",
                "Node": None,
                "Allocatable": {"MilliCPU": 4000, "Memory": 8e9, "ScalarResources": None, "MaxTaskNum": 110},
                "Tasks": None,
            }
        },
    }
    snap = snapshot_from_session(orjson.dumps(minimal))
    assert snap.nodes[0].name == "n1" and dict(snap.nodes[0].allocatable) == {"cpu": 4000, "memory": 8e9, "pods": 110}


def test_not_ready_node_gets_the_lifecycle_taint() -> None:
    snap = load_snapshot(GUIDE)
    d = session_dict(snap, objects_from_snapshot(snap), BARE)
    name = next(iter(d["Nodes"]))
    d["Nodes"][name]["Node"]["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    back = snapshot_from_session(orjson.dumps(d))
    node = next(n for n in back.nodes if n.name == name)
    assert [(t.key, t.effect) for t in node.taints] == [("node.kubernetes.io/unreachable", "NoSchedule")]


def test_pipelined_task_placement_comes_from_the_session() -> None:
    snap = load_snapshot(GUIDE)
    d = session_dict(snap, objects_from_snapshot(snap), BARE)
    job = next(j for j in d["Jobs"].values() if j["Tasks"])
    uid, info = next(iter(job["Tasks"].items()))
    info["Status"], info["NodeName"] = ts.PIPELINED, "ascend-node-02"
    info["Pod"]["spec"].pop("nodeName", None)
    back = snapshot_from_session(orjson.dumps(d))
    t = next(t for t in back.tasks if t.uid == uid)
    assert (t.status, t.node) == (ts.PIPELINED, "ascend-node-02")


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d, j, u: d["Jobs"][j]["Tasks"][u].__setitem__("Status", "Running"), "Status"),
        (lambda d, j, u: d["Jobs"][j]["Tasks"][u].__setitem__("Status", 3), "Status"),
        (lambda d, j, u: d["Jobs"][j]["Tasks"][u].__setitem__("Pod", None), "Pod"),
        (lambda d, j, u: d.__setitem__("Nodes", []), "$.Nodes"),
    ],
)
def test_bad_input_names_the_json_path(mutate, path: str) -> None:  # type: ignore[no-untyped-def]
    snap = load_snapshot(GUIDE)
    d = session_dict(snap, objects_from_snapshot(snap), BARE)
    j = next(k for k, v in d["Jobs"].items() if v["Tasks"])
    u = next(iter(d["Jobs"][j]["Tasks"]))
    mutate(d, j, u)
    with pytest.raises(InputError) as err:
        snapshot_from_session(orjson.dumps(d))
    assert path in err.value.field and err.value.field.startswith("$")


def test_malformed_json_is_input_error() -> None:
    with pytest.raises(InputError):
        snapshot_from_session(b"{not json")


def test_check_body_decodes_to_a_small_snapshot() -> None:
    snap = load_snapshot(GUIDE)
    d = session_dict(snap, objects_from_snapshot(snap), BARE)
    task = next(iter(next(j for j in d["Jobs"].values() if j["Tasks"])["Tasks"].values()))
    nodes = list(d["Nodes"].values())[:3]
    small, uid, names = decode_check(orjson.dumps({"task": task, "nodes": nodes}))
    assert uid == task["UID"] and names == [n["Name"] for n in nodes]
    assert [n.name for n in small.nodes] == names and uid in {t.uid for t in small.tasks}
