"""The console script as a user runs it, including serve's SIGTERM drain and /metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.cli import main
from sidecar.snapshot.io import load_snapshot

GUIDE = "sidecar/data/guide-ascend.json"


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sidecar", *args], capture_output=True, text=True, timeout=timeout)


def test_demo_prints_fragmentation_from_the_loopback_server() -> None:
    proc = run("demo")
    assert proc.returncode == 0, proc.stderr
    assert "Fragmentation (Evaluate over gRPC on loopback)" in proc.stdout
    assert "nvidia.com/gpu" in proc.stdout
    assert "Result: RepackRecommended" in proc.stdout and "Freed nodes:" in proc.stdout
    offline = run("demo", "--offline")
    table = lambda out: out.split("Fragmentation")[1].split("\n", 1)[1]  # noqa: E731
    assert table(offline.stdout) == table(proc.stdout)


def test_evaluate_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--snapshot", GUIDE, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["resources"][0]["minOccupiedNodes"] == 2
    assert main(["evaluate", "--snapshot", GUIDE, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["resources"][0]["occupiedNodes"] == 3
    assert main(["evaluate", "--snapshot", GUIDE]) == 0
    assert "33.3%" in capsys.readouterr().out


def test_evaluate_reports_bad_files_with_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - name: a\n    allocatable: {cpu: -1}\n")
    assert main(["evaluate", "--snapshot", str(bad)]) == 2
    assert 'nodes[0].allocatable["cpu"]: negative quantity -1' in capsys.readouterr().err
    bad.write_text("nodes: [{name: a, colour: blue}]\n")
    assert main(["evaluate", "--snapshot", str(bad)]) == 2
    assert "colour" in capsys.readouterr().err


def test_synth_is_seeded_and_round_trips(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.pb"
    assert main(["snapshot", "synth", "--nodes", "50", "--seed", "9", "--out", str(a)]) == 0
    assert main(["snapshot", "synth", "--nodes", "50", "--seed", "9", "--out", str(b)]) == 0
    assert load_snapshot(a) == load_snapshot(b)
    c = tmp_path / "c.json"
    assert main(["snapshot", "synth", "--nodes", "50", "--seed", "10", "--out", str(c)]) == 0
    assert load_snapshot(a) != load_snapshot(c)


def test_plan_prints_the_repackrun_status(capsys: pytest.CaptureFixture[str]) -> None:
    run_file = "sidecar/data/guide-ascend-dryrun.yaml"
    assert main(["plan", "--snapshot", GUIDE, "--run", run_file, "-o", "yaml"]) == 0
    status = yaml.safe_load(capsys.readouterr().out)["status"]
    assert status["phase"] == "Succeeded"
    assert status["conditions"][0]["reason"] == "RepackRecommended"
    assert status["plan"]["freedNodes"] == ["ascend-node-01"]
    assert status["plan"]["summary"]["fragAfterPercent"] == 0
    assert main(["plan", "--snapshot", GUIDE, "--run", run_file]) == 0
    table = capsys.readouterr().out
    assert "ascend-node-01  ascend-batch-training-worker-0  ascend-node-02" in table


def test_plan_rejects_a_bad_run_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "run.yaml"
    bad.write_text("kind: RepackRun\nspec:\n  mode: DryRun\n  goals: []\n")
    assert main(["plan", "--snapshot", GUIDE, "--run", str(bad)]) == 2
    assert "spec.goals: exactly one goal per run, got 0" in capsys.readouterr().err


def _wait_for(proc: subprocess.Popen[str], event: str, timeout: float = 30) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        record = json.loads(line)
        if record.get("event") == event:
            return record  # type: ignore[no-any-return]
    raise AssertionError(f"no {event!r} log line")


def test_serve_logs_json_exposes_metrics_and_drains_on_sigterm() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sidecar",
            "--log-format",
            "json",
            "serve",
            "--port",
            "0",
            "--metrics-port",
            "0",
            "--metrics-host",
            "127.0.0.1",
            "--grace",
            "5",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        metrics_port = str(_wait_for(proc, "metrics")["address"]).rsplit(":", 1)[1]
        target = str(_wait_for(proc, "serving")["address"])
        channel = grpc.insecure_channel(target)
        stub = service_pb2_grpc.RepackStub(channel)
        stub.Evaluate(service_pb2.EvaluateRequest(snapshot=load_snapshot(GUIDE)), timeout=30)
        access = _wait_for(proc, "rpc")
        assert access["method"] == "/volcano.repack.v1alpha1.Repack/Evaluate" and access["code"] == "OK"
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert 'repack_rpc_requests_total{code="OK",method="/volcano.repack.v1alpha1.Repack/Evaluate"} 1.0' in body
        assert "repack_snapshot_decode_seconds_count 1.0" in body
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
        probe = run("health", "--target", target)
        assert probe.returncode == 0 and probe.stdout.strip() == "SERVING"
        proc.send_signal(signal.SIGTERM)
        _wait_for(proc, "draining")
        _wait_for(proc, "stopped")
        assert proc.wait(timeout=20) == 0
        assert run("health", "--target", target, "--timeout", "1").returncode == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
