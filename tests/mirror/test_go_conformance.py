"""A Go program speaks the contract: its answers equal the Python client's, byte for byte.

go/scripts/build.sh builds the Go module (module proxy; pinned by go.mod/go.sum);
the Go tests (go/client) then drive a real sidecar on loopback with the guide's snapshot (plus two
pending pods, one pipelined as Execute does) and a 10,000-node columnar synth snapshot, writing
each answer's deterministic bytes, and the same
calls made here with sidecar.client give the bytes they are compared with. repackctl is checked
the same way on the guide's files. Cost: see go/README.md ("Cost in the test run").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format
from google.protobuf.message import Message

from sidecar.api.v1alpha1 import service_pb2, snapshot_pb2
from sidecar.client import RepackClient
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.server.background import BackgroundServer
from sidecar.server.config import MIB, ServerConfig
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from tests.go.test_go_codegen_drift import GO, ROOT, require_go

GUIDE = ROOT / "sidecar" / "data" / "guide-ascend.json"
GUIDE_RUN = ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml"
# at most 4 PodGroups: a real plan at 10k nodes in about a second (an unbounded one takes ~5 s here)
GPU_DRYRUN = {"mode": "DryRun", "goals": [{"resource": "nvidia.com/gpu"}], "maxPerRun": {"podGroups": 4}}
STEPS = ("evaluate-inline", "plan-inline", "open", "evaluate", "plan", "filter", "prioritize", "close")
PIPELINE_STEPS = ("filter-pending", "pipeline", "filter-after-pipeline", "check-pending")
NPU = "huawei.com/ascend-1980"


def _pending(uid: str) -> dict[str, object]:
    """A rebuilt pod of the guide's serving group, waiting: 2 NPUs fit any guide node (2 of 4 free)."""
    return {
        "uid": uid, "namespace": "repack-demo", "name": uid, "status": "Pending",
        "podGroup": "ascend-online-serving-1", "role": "worker",
        "requests": {"cpu": 4000, "memory": 17179869184, NPU: 2000},
        "profile": {"schedulerName": "volcano", "ownerKind": "ModelServing",
                    "nodeSelector": {"accelerator-pool": "ascend-npu"}},
    }  # fmt: skip


@pytest.fixture(scope="module")
def go_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_go()
    out = tmp_path_factory.mktemp("go-bin")
    proc = subprocess.run([str(GO / "scripts" / "build.sh"), str(out)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def loopback() -> Iterator[BackgroundServer]:
    s = BackgroundServer(ServerConfig(port=0, metrics_port=-1, max_message_bytes=64 * MIB, session_ttl_seconds=300))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cases.json and its files: the guide (JSON as shipped, its RepackRun) and a 10k-node synth."""
    d = tmp_path_factory.mktemp("conformance")
    shutil.copy(GUIDE, d / "guide.json")
    guide = json.loads(GUIDE.read_text())
    guide["tasks"] += [_pending("t-pending-a"), _pending("t-pending-b")]
    (d / "guide-pending.json").write_text(json.dumps(guide))
    (d / "guide-run.json").write_text(json.dumps(yaml.safe_load(GUIDE_RUN.read_text())))
    big = synth(SynthOptions(nodes=10_000, fill=0.8, seed=1, cpu_pods_per_node=0.0, daemonsets=2))
    assert len(big.nodes) == 10_000 and len(big.task_columns.uid) > 40_000 and not big.tasks
    (d / "synth10k.pb").write_bytes(big.SerializeToString())
    (d / "synth10k-run.json").write_text(json.dumps(GPU_DRYRUN))
    pending = list(big.task_columns.status).index(snapshot_pb2.Task.Pending)
    listing = [
        {
            "name": "guide",
            "snapshot": "guide-pending.json",
            "run": "guide-run.json",
            "taskUid": "t-serve-1-worker",
            "pipelineUid": "t-pending-a",
            "thenUid": "t-pending-b",
            "pendingGroups": "repack-demo/ascend-online-serving-1,repack-demo/none",
        },
        {
            "name": "synth10k",
            "snapshot": "synth10k.pb",
            "run": "synth10k-run.json",
            "taskUid": big.task_columns.uid[pending],
        },
    ]
    (d / "cases.json").write_text(json.dumps({"cases": listing}))
    return d


def python_answers(client: RepackClient, cases: Path, case: dict[str, str]) -> dict[str, bytes]:
    """The Go test's calls, in its order, made with the Python client."""
    snap, spec = load_snapshot(cases / case["snapshot"]), load_repack_spec(cases / case["run"])
    task_uid = case["taskUid"]
    out: dict[str, Message] = {
        "evaluate-inline": client.evaluate(service_pb2.EvaluateRequest(snapshot=snap)),
        "plan-inline": client.plan(service_pb2.PlanRequest(snapshot=snap, spec=spec)),
    }
    opened = client.open_session(service_pb2.OpenSessionRequest(snapshot=snap, ttl_seconds=300))
    sid = opened.session_id
    opened.ClearField("session_id")
    opened.ClearField("expires_at")
    out["open"] = opened
    out["evaluate"] = client.evaluate(service_pb2.EvaluateRequest(session_id=sid))
    out["plan"] = client.plan(service_pb2.PlanRequest(session_id=sid, spec=spec))
    out["filter"] = client.filter(service_pb2.FilterRequest(session_id=sid, task_uid=task_uid))
    out["prioritize"] = client.prioritize(service_pb2.PrioritizeRequest(session_id=sid, task_uid=task_uid))
    if case.get("pipelineUid"):
        pending = client.filter(service_pb2.FilterRequest(session_id=sid, task_uid=case["pipelineUid"]))
        out["filter-pending"] = pending
        node = pending.feasible_nodes[0]
        out["pipeline"] = client.pipeline(
            service_pb2.PipelineRequest(session_id=sid, task_uid=case["pipelineUid"], node=node)
        )
        out["filter-after-pipeline"] = client.filter(
            service_pb2.FilterRequest(session_id=sid, task_uid=case["thenUid"])
        )
        out["check-pending"] = client.check_pending(
            service_pb2.CheckPendingRequest(session_id=sid, spec=spec, pod_groups=case["pendingGroups"].split(","))
        )
    out["close"] = client.close_session(sid)
    return {step: m.SerializeToString(deterministic=True) for step, m in out.items()}


def _differ(step: str, message: type[Message], go: bytes, py: bytes) -> str:
    """Where two answers differ, as JSON lines (the first few), for the assertion message."""
    go_lines = json_format.MessageToJson(message.FromString(go), indent=0).splitlines()
    py_lines = json_format.MessageToJson(message.FromString(py), indent=0).splitlines()
    diff = [f"go {g!r} / python {p!r}" for g, p in zip(go_lines, py_lines, strict=False) if g != p][:5]
    return f"{step}: Go {len(go)} bytes, Python {len(py)} bytes; first differences: {diff or 'lengths only'}"


RESPONSE = {
    "evaluate-inline": service_pb2.EvaluateResponse,
    "plan-inline": service_pb2.PlanResponse,
    "open": service_pb2.OpenSessionResponse,
    "evaluate": service_pb2.EvaluateResponse,
    "plan": service_pb2.PlanResponse,
    "filter": service_pb2.FilterResponse,
    "prioritize": service_pb2.PrioritizeResponse,
    "close": service_pb2.CloseSessionResponse,
    "filter-pending": service_pb2.FilterResponse,
    "pipeline": service_pb2.PipelineResponse,
    "filter-after-pipeline": service_pb2.FilterResponse,
    "check-pending": service_pb2.CheckPendingResponse,
}


def test_go_client_answers_equal_the_python_clients(go_bin: Path, loopback: BackgroundServer, cases: Path) -> None:
    env = {**os.environ, "REPACK_CONFORMANCE_DIR": str(cases), "REPACK_CONFORMANCE_TARGET": loopback.target}
    proc = subprocess.run(
        [str(go_bin / "client.test"), "-test.v", "-test.count=1"], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "--- PASS: TestConformance/synth10k" in proc.stdout, proc.stdout[-2000:]  # not skipped
    with RepackClient(loopback.target, timeout=120) as client:
        for case in json.loads((cases / "cases.json").read_text())["cases"]:
            py = python_answers(client, cases, case)
            for step in STEPS + (PIPELINE_STEPS if case.get("pipelineUid") else ()):
                go = (cases / "go" / case["name"] / f"{step}.pb").read_bytes()
                assert go == py[step], _differ(f"{case['name']}/{step}", RESPONSE[step], go, py[step])
            if case.get("pipelineUid"):  # the pipelined pod holds its node: the next one no longer fits there
                before = service_pb2.FilterResponse.FromString(py["filter-pending"])
                after = service_pb2.FilterResponse.FromString(py["filter-after-pipeline"])
                taken = before.feasible_nodes[0]
                assert taken not in after.feasible_nodes and set(after.feasible_nodes) == set(before.feasible_nodes) - {
                    taken
                }, (before, after)
            plan = service_pb2.PlanResponse.FromString(py["plan"])
            assert plan.status.phase == "Succeeded" and plan.status.plan.summary.freed_node_count > 0, case["name"]


def repackctl(go_bin: Path, target: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(go_bin / "repackctl"), "-target", target, *args], capture_output=True, timeout=120)


def test_repackctl_evaluate_plan_filter_on_the_guide(go_bin: Path, loopback: BackgroundServer, cases: Path) -> None:
    guide, run = str(cases / "guide.json"), str(cases / "guide-run.json")
    snap, spec = load_snapshot(guide), load_repack_spec(run)
    task = "t-serve-1-worker"
    with RepackClient(loopback.target) as client:
        expected = {
            "evaluate": client.evaluate(service_pb2.EvaluateRequest(snapshot=snap)),
            "plan": client.plan(service_pb2.PlanRequest(snapshot=snap, spec=spec)),
            "filter": client.filter(service_pb2.FilterRequest(snapshot=snap, task_uid=task)),
            "prioritize": client.prioritize(service_pb2.PrioritizeRequest(snapshot=snap, task_uid=task)),
        }
    commands = {
        "evaluate": ["evaluate", "-snapshot", guide],
        "plan": ["plan", "-snapshot", guide, "-run", run],
        "filter": ["filter", "-snapshot", guide, "-task-uid", task],
        "prioritize": ["prioritize", "-snapshot", guide, "-task-uid", task],
    }
    for name, argv in commands.items():
        proc = repackctl(go_bin, loopback.target, "-o", "pb", *argv)
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout == expected[name].SerializeToString(deterministic=True), name
    as_json = repackctl(go_bin, loopback.target, *commands["plan"])
    assert json_format.Parse(as_json.stdout, service_pb2.PlanResponse()) == expected["plan"]
    # the RepackRun as the guide writes it (YAML), read as the Python CLI reads it
    from_yaml = repackctl(go_bin, loopback.target, "-o", "pb", "plan", "-snapshot", guide, "-run", str(GUIDE_RUN))
    assert from_yaml.returncode == 0, from_yaml.stderr.decode()
    assert from_yaml.stdout == expected["plan"].SerializeToString(deterministic=True)

    health = repackctl(go_bin, loopback.target, "health")
    assert (health.returncode, health.stdout.strip()) == (0, b"SERVING")


def test_repackctl_bad_input_names_the_field(go_bin: Path, loopback: BackgroundServer, cases: Path) -> None:
    bad = cases / "bad-snapshot.json"
    bad.write_text('{"nodes": [{"name": "n-0", "allocatible": {}}]}')
    proc = repackctl(go_bin, loopback.target, "evaluate", "-snapshot", str(bad))
    assert proc.returncode == 2 and b"allocatible" in proc.stderr and str(bad).encode() in proc.stderr, proc.stderr

    proc = repackctl(go_bin, loopback.target, "filter", "-snapshot", str(cases / "guide.json"), "-task-uid", "nope")
    assert proc.returncode == 1, proc.stderr
    assert b"InvalidArgument" in proc.stderr and b"task_uid" in proc.stderr, proc.stderr

    proc = repackctl(go_bin, loopback.target, "plan", "-snapshot", str(cases / "guide.json"))
    assert proc.returncode == 2 and b"-run is required" in proc.stderr, proc.stderr
