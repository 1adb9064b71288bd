"""The sidecar's HTTP port: /healthz, /readyz and /metrics, by real GETs against a running server."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sidecar import logs
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.client import MIB, client_options
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.server.probes import Probes
from tests.builders import guide_twenty_nodes
from tests.http_fixtures import get


@pytest.fixture
def probed(make_server):  # type: ignore[no-untyped-def]
    srv = make_server(metrics_port=0, metrics_host="127.0.0.1")
    assert srv.metrics is not None
    return srv


def test_healthz_and_readyz_answer_200_while_serving(probed) -> None:  # type: ignore[no-untyped-def]
    port = probed.metrics.port
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/readyz") == (200, "SERVING\n")
    assert get(port, "/nowhere")[0] == 404
    status, text = get(port, "/metrics")
    assert status == 200 and "repack_rpc_requests_total" in text


def test_readyz_is_503_while_draining_and_healthz_stays_200(probed) -> None:  # type: ignore[no-untyped-def]
    port = probed.metrics.port
    probed.call(probed.running.health.enter_graceful_shutdown())
    assert get(port, "/readyz") == (503, "NOT_SERVING\n")
    assert get(port, "/healthz") == (200, "ok\n")


def test_health_is_never_shed_when_the_rpc_slots_are_taken(make_server) -> None:  # type: ignore[no-untyped-def]
    """With the only RPC slot taken (another Repack call is shed), the gRPC health check still
    answers SERVING and the HTTP probes 200: health is exempt from --max-concurrent-rpcs."""
    srv = make_server(metrics_port=0, metrics_host="127.0.0.1", max_concurrent_rpcs=1)
    big = service_pb2.OpenSessionRequest(snapshot=synth(SynthOptions(nodes=4000, fill=0.8, seed=2)))
    channel = grpc.insecure_channel(srv.target, options=client_options(64 * MIB))
    health = health_pb2_grpc.HealthStub(channel)
    repack = service_pb2_grpc.RepackStub(channel)
    probe = service_pb2.CloseSessionRequest(session_id="nothing")
    repack.CloseSession(probe, timeout=5)  # the channel is connected; a slot is free
    for _ in range(5):
        busy = threading.Thread(target=lambda: _until_admitted(repack.OpenSession, big))
        busy.start()
        try:
            while busy.is_alive():
                try:
                    repack.CloseSession(probe, timeout=5)
                except grpc.RpcError as err:
                    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                    assert "--max-concurrent-rpcs 1" in (err.details() or "")
                    reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                    assert reply.status == health_pb2.HealthCheckResponse.SERVING
                    assert get(srv.metrics.port, "/readyz") == (200, "SERVING\n")
                    assert get(srv.metrics.port, "/healthz") == (200, "ok\n")
                    return
                time.sleep(0.02)  # leaves the slot free most of the time, for the busy call to take
        finally:
            busy.join()
    pytest.fail("the RPC slot was never seen taken")


def _until_admitted(call, request) -> None:  # type: ignore[no-untyped-def]
    """The busy call is shed while the probing call holds the slot: it retries until it gets in."""
    for _ in range(200):
        try:
            call(request, timeout=60)
            return
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            time.sleep(0.01)


def test_probe_states_without_a_server() -> None:
    probes = Probes()
    assert probes.live() == (True, "starting")
    assert probes.ready() == (False, "starting")
    loop = asyncio.new_event_loop()  # attached but never run: a stuck or dead server loop
    probes.attach(loop, object())
    ok, why = probes.live()
    assert not ok and "not running" in why
    loop.close()


def test_fragmentation_plan_and_candidate_metrics(probed) -> None:  # type: ignore[no-untyped-def]
    from sidecar.snapshot.io import load_repack_spec, load_snapshot

    s = service_pb2_grpc.RepackStub(grpc.insecure_channel(probed.target))
    s.Evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), timeout=30)
    from sidecar.server import metrics

    def ratio() -> str:
        text = get(probed.metrics.port, "/metrics")[1]
        return next((line for line in text.splitlines() if line.startswith("repack_fragmentation_ratio{")), "")

    deadline = time.monotonic() + 5
    while "nvidia.com/gpu" not in ratio() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ratio() == 'repack_fragmentation_ratio{resource="nvidia.com/gpu"} 0.15'
    # a session is measured when opened; Plan on it reports latency and candidates
    sid = s.OpenSession(
        service_pb2.OpenSessionRequest(snapshot=load_snapshot("sidecar/data/guide-ascend.json")), timeout=30
    ).session_id
    before = metrics.PLAN_CANDIDATES._sum.get()
    spec = load_repack_spec("sidecar/data/guide-ascend-dryrun.yaml")
    s.Plan(service_pb2.PlanRequest(session_id=sid, spec=spec), timeout=30)
    deadline = time.monotonic() + 5
    while "huawei.com/ascend-1980" not in ratio() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ratio().startswith('repack_fragmentation_ratio{resource="huawei.com/ascend-1980"} 0.333')
    assert "nvidia.com/gpu" not in get(probed.metrics.port, "/metrics")[1].split("repack_fragmentation_ratio{")[1]
    assert metrics.PLAN_CANDIDATES._sum.get() > before
    text = get(probed.metrics.port, "/metrics")[1]
    assert "repack_plan_duration_seconds_count" in text
    assert 'repack_plan_candidate_reasons_total{reason="Emptied"}' in text


def test_health_checks_are_logged_at_debug_other_rpcs_at_info(server, capsys) -> None:  # type: ignore[no-untyped-def]
    logs.configure("json", "info")
    channel = grpc.insecure_channel(server.target)
    health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    service_pb2_grpc.RepackStub(channel).CloseSession(service_pb2.CloseSessionRequest(session_id="x"), timeout=5)
    time.sleep(0.1)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    methods = [line.get("method") for line in lines if line.get("event") == "rpc"]
    assert "/volcano.repack.v1alpha1.Repack/CloseSession" in methods
    assert "/grpc.health.v1.Health/Check" not in methods
