"""The server under a burst, on loopback: health is never shed, and the HTTP port stays bounded."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
import urllib.error
import urllib.request

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, spec_pb2
from sidecar.client import MIB, client_options
from sidecar.metricsport import MAX_CONNECTIONS
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.server.config import ServerConfig

BURST = 48


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


def test_health_is_answered_serving_throughout_a_burst_of_48_plans(make_server) -> None:  # type: ignore[no-untyped-def]
    """48 concurrent inline Plans of a 1,000-node synthetic cluster against the default limit (16 in
    flight), while gRPC health and HTTP /readyz, /healthz are polled: every poll answers SERVING/200."""
    assert ServerConfig().max_concurrent_rpcs == 16
    srv = make_server(metrics_port=0, metrics_host="127.0.0.1")
    snapshot = synth(SynthOptions(nodes=1000, fill=0.8, seed=7))
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
    request = service_pb2.PlanRequest(snapshot=snapshot, spec=spec)
    channel = grpc.insecure_channel(srv.target, options=client_options(64 * MIB))
    repack = service_pb2_grpc.RepackStub(channel)
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(srv.target))  # its own connection, as the kubelet's
    health.Check(health_pb2.HealthCheckRequest(), timeout=10)
    done = threading.Event()
    grpc_polls: list[str] = []
    http_polls: list[tuple[str, int]] = []

    def poll_grpc() -> None:
        while not done.is_set():
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                grpc_polls.append(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
            except grpc.RpcError as err:
                grpc_polls.append(err.code().name)
            time.sleep(0.01)

    def poll_http() -> None:
        while not done.is_set():
            for path in ("/readyz", "/healthz"):
                http_polls.append((path, _get(srv.metrics.port, path)))
            time.sleep(0.01)

    codes: list[str] = []
    barrier = threading.Barrier(BURST)

    def plan() -> None:
        barrier.wait()
        try:
            repack.Plan(request, timeout=120)
            codes.append("OK")
        except grpc.RpcError as err:
            codes.append(err.code().name)

    pollers = [threading.Thread(target=poll_grpc), threading.Thread(target=poll_http)]
    for t in pollers:
        t.start()
    callers = [threading.Thread(target=plan) for _ in range(BURST)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(180)
    done.set()
    for t in pollers:
        t.join(30)
    channel.close()
    assert len(codes) == BURST and set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
    assert codes.count("OK") >= 16, codes  # the limit admits 16 at a time; the burst was real work
    assert len(grpc_polls) >= 10 and len(http_polls) >= 10, (len(grpc_polls), len(http_polls))
    assert set(grpc_polls) == {"SERVING"}, f"{len(grpc_polls) - grpc_polls.count('SERVING')} gRPC checks failed"
    assert {code for _, code in http_polls} == {200}, [p for p in http_polls if p[1] != 200][:5]


def test_metrics_port_caps_connections_and_closes_idle_ones(make_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """40 idle connections: no thread per connection, those past the cap are closed at once, the
    admitted ones after the idle timeout (shortened here); then probes answer again."""
    from sidecar import metricsport

    idle_seconds = 0.8
    monkeypatch.setattr(metricsport._MetricsHandler, "timeout", idle_seconds)
    srv = make_server(metrics_port=0, metrics_host="127.0.0.1")
    port = srv.metrics.port
    assert _get(port, "/healthz") == 200
    end = time.monotonic() + 10
    while srv.metrics.httpd.open and time.monotonic() < end:  # that connection's slot is given back
        time.sleep(0.01)
    threads_before = threading.active_count()
    opened = time.monotonic()
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    try:
        time.sleep(0.3)
        assert threading.active_count() == threads_before  # the pool's threads already existed
        readable, _, _ = select.select(idle, [], [], 0)
        closed_at_once = sum(s.recv(1) == b"" for s in readable)
        if time.monotonic() - opened < idle_seconds - 0.1:  # exact unless the machine stalled
            assert closed_at_once == 40 - MAX_CONNECTIONS
        assert closed_at_once >= 40 - MAX_CONNECTIONS
        end = time.monotonic() + 4 * idle_seconds + 10
        for s in idle:  # every admitted idle connection is closed by the server
            s.settimeout(max(0.1, end - time.monotonic()))
            with contextlib.suppress(ConnectionResetError):
                assert s.recv(1) == b""
        assert _get(port, "/readyz") == 200
    finally:
        for s in idle:
            s.close()


def test_memory_benchmark_runs_at_a_toy_size(capsys) -> None:  # type: ignore[no-untyped-def]
    """One subprocess server, two tiny Plans at once; nothing is written to bench/out."""
    from bench import memory

    assert memory.main(["--nodes", "40", "--tasks", "300", "--concurrency", "2", "--arenas", "2", "--out", ""]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.split()[:2] == ["2", "2"])
    idle, peak, retained = (float(x) for x in row[2:5])
    assert 0 < idle <= peak and retained > 0
    cell = memory.Sample(idle=100.0, peak=400.0, retained=150.0, seconds=1.0)
    one = memory.Sample(idle=100.0, peak=200.0, retained=120.0, seconds=1.0)
    lines = memory._ratios({"default": {1: one, 4: cell}, "2": {1: one, 4: memory.Sample(100, 300, 75, 1)}}, [1, 4])
    assert "peak 4 vs 1 Plans (MALLOC_ARENA_MAX=default): 2.00" in lines
    assert "MALLOC_ARENA_MAX=2 vs default, 4 Plans: peak 0.75, retained 0.50" in lines
