"""``watch --metrics-port``: Prometheus text, /healthz and /readyz by real GETs while the watcher (``watch``,
its cluster the fake cluster port with the simulated control plane running) drives the guide's Execute
run; and its log lines name the run and the pod."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from prometheus_client import REGISTRY

from sidecar import logs
from sidecar.cli import build_parser
from sidecar.errors import InputError
from sidecar.fake.cluster import FakeCluster
from sidecar.watcher import metrics, runner
from sidecar.watcher import observer as observe
from sidecar.watcher.args import WatchOptions, watch_options
from sidecar.watcher.execute.journal import EvictionRecord, PlacementRecord, Relocation, eviction_outcome
from sidecar.watcher.kit.cache import ClusterCache
from tests.execute_fixtures import WORKER0, guide_box
from tests.execute_fixtures import execute_run as execute_body
from tests.http_fixtures import get

NAME = "metrics-execute-001"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def wait_for(cond, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_watch_serves_metrics_and_probes_while_executing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("json", "info")
    port = free_port()
    evicted = value("repack_evictions_total", result="evicted")
    nominated = value("repack_nominations_total", result="nominated")
    finished = value("repack_runs_total", mode="Execute", outcome="ExecutionCompleted")
    with guide_box(threads=True, gates=True) as box:
        monkeypatch.setattr(runner, "connect", lambda kubeconfig, retries=True: box.cluster)
        options = WatchOptions(period=0.2, leader_elect=False, metrics_port=port, metrics_host="127.0.0.1")
        stop = threading.Event()
        thread = threading.Thread(target=runner.watch, args=(options, None), kwargs={"stop": stop}, daemon=True)
        thread.start()
        try:
            wait_for(lambda: get(port, "/readyz") == (200, "ok\n"), 30)
            assert get(port, "/healthz") == (200, "ok\n")
            box.create_run(execute_body(NAME, grace=0))
            wait_for(lambda: (box.run(NAME).get("status") or {}).get("phase") in ("Succeeded", "Failed"))
            assert box.run(NAME)["status"]["phase"] == "Succeeded"
            status, text = get(port, "/metrics")
            assert status == 200
            assert value("repack_evictions_total", result="evicted") - evicted == 2
            assert value("repack_nominations_total", result="nominated") - nominated == 2
            wait_for(lambda: value("repack_runs_total", mode="Execute", outcome="ExecutionCompleted") > finished, 10)
            assert value("repack_leader") == 1
            assert value("repack_reconcile_seconds_count", reconciler="execute") >= 2
            assert 'repack_runs_by_phase{mode="Execute",phase="Succeeded"} 1.0' in get(port, "/metrics")[1]
            assert value("repack_informer_lists_total", kind="pods") >= 1
            assert "repack_informer_watch_expired_total" in text
            assert get(port, "/nowhere")[0] == 404
        finally:
            stop.set()
            thread.join(60)
    assert not thread.is_alive()
    assert type(observe.current()) is observe.WatcherObserver  # the Prometheus observer left with the port
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    evictions = [x for x in lines if x.get("event") == "pod eviction"]
    assert {(x["run"], x["pod"], x["result"]) for x in evictions} >= {(NAME, f"repack-demo/{WORKER0}", "evicted")}
    assert all(x.get("run") == NAME for x in lines if x.get("event") in ("pod nomination", "repackrun status"))
    assert any(x.get("event") == "repackrun finished" and x.get("outcome") == "ExecutionCompleted" for x in lines)


def test_probes_fail_when_informers_are_not_running() -> None:
    cache = ClusterCache(FakeCluster())  # never started, never synced
    checks = metrics.health_checks(cache, lambda: True)
    ok, why = checks["/healthz"]()
    assert not ok and why.startswith("informers not running: ")
    ok, why = checks["/readyz"]()
    assert not ok and why.startswith("caches not synced: ")


def test_relocation_phase_is_the_eviction_then_the_placement() -> None:
    assert metrics.relocation_phase(Relocation(eviction=EvictionRecord(phase="Pending"))) == "Pending"
    rel = Relocation(eviction=EvictionRecord(phase="Evicted"), placement=PlacementRecord(phase="Nominated"))
    assert metrics.relocation_phase(rel) == "Nominated"
    gone = Relocation(eviction=EvictionRecord(phase="Evicted", message="already gone (404)"))
    assert eviction_outcome(gone) == "already_gone"
    assert eviction_outcome(Relocation(eviction=EvictionRecord(phase="Blocked"))) == "blocked"


def test_metrics_flags() -> None:
    parser = build_parser()
    ns = parser.parse_args(["watch", "--in-process", "--metrics-port", "9465", "--metrics-host", "127.0.0.1"])
    options = watch_options(ns)
    assert (options.metrics_port, options.metrics_host) == (9465, "127.0.0.1")
    assert watch_options(parser.parse_args(["watch", "--in-process"])).metrics_port == -1
    with pytest.raises(InputError, match="--metrics-port"):
        watch_options(parser.parse_args(["watch", "--in-process", "--metrics-port", "70000"]))


def test_watch_runs_policies_and_counts_what_they_do() -> None:
    """``watch`` leads the RepackPolicy controller beside the runs': a whenPending policy on the fake
    makes room for a waiting job (its run created and driven to the end by the same watcher), and
    the metrics count the run created and the groups still waiting, by verdict."""
    from sidecar.watcher.kit.port import PODGROUPS, REPACKPOLICIES, REPACKRUNS
    from tests.execute_fixtures import NPU, NS, waiting_job

    port = free_port()
    created = value("repack_policy_runs_created_total", policy="room", trigger="pending")
    with guide_box(threads=True, gates=True) as box:
        (worker,) = waiting_job(box.cluster, "whole-node", 1, 4)
        waiting_job(box.cluster, "too-big", 1, 8)
        options = WatchOptions(period=0.2, leader_elect=False, metrics_port=port, metrics_host="127.0.0.1",
                               policy_resync=0.5)  # fmt: skip
        stop = threading.Event()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(runner, "connect", lambda kubeconfig, retries=True: box.cluster)
            thread = threading.Thread(target=runner.watch, args=(options, None), kwargs={"stop": stop}, daemon=True)
            thread.start()
            try:
                wait_for(lambda: get(port, "/readyz") == (200, "ok\n"), 30)
                box.cluster.create(REPACKPOLICIES, {
                    "apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackPolicy", "metadata": {"name": "room"},
                    "spec": {"whenPending": {"minPendingSeconds": 0, "namespaces": [NS]},
                             "runTemplate": {"spec": {"mode": "Execute", "goals": [{"resource": NPU}],
                                                      "eviction": {"gracePeriodSeconds": 0}}}}})  # fmt: skip
                wait_for(lambda: (box.pod(worker) or {}).get("spec", {}).get("nodeName"), 60)
                runs = box.cluster.items(REPACKRUNS)
                assert [r["spec"]["for"] for r in runs] == [{"podGroup": f"{NS}/whole-node"}]
                wait_for(
                    lambda: value("repack_policy_runs_created_total", policy="room", trigger="pending") > created, 10
                )
                wait_for(
                    lambda: (
                        'repack_waiting_podgroups{policy="room",verdict="Capacity"} 1.0' in get(port, "/metrics")[1]
                    ),
                    10,
                )
                assert box.cluster.get(PODGROUPS, "too-big", NS) is not None
            finally:
                stop.set()
                thread.join(60)
    assert not thread.is_alive()
