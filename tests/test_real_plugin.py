"""The repack scheduler plugin compiled into vc-scheduler, publishing to the sidecar, on the real
control plane.

The cluster's scheduler is swapped for ``vc-scheduler-repack`` (Volcano v1.14.1 as
go/controlplane builds it, plus go/plugin) running ``manifests/plugin/volcano-scheduler.conf``
with ``repack.address`` pointed at a sidecar started here. Checked: every cycle refreshes the
session ``latest`` over gRPC (``OpenSession`` with ``publish_as: latest``), it schedules as
Volcano does (a new Job's pods bind), and Evaluate and Plan on ``latest`` answer what they answer
on the watcher's informer view of the same cluster — the same test the extender path passes
(tests/test_real_extender.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from kubernetes import config

from sidecar.api.sessions import LATEST
from sidecar.api.v1alpha1 import service_pb2
from sidecar.client import RepackClient
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.watcher.cluster import read_cluster
from tests.realcluster.fixtures import real_cluster, wait_for
from tests.realcluster.launcher import ROOT, RealCluster
from tests.realcluster.scenario import NPU, Scenario
from tests.test_real_extender import _spec

__all__ = ["real_cluster"]
pytestmark = pytest.mark.realcluster
PLUGIN_CONF = ROOT / "manifests" / "plugin" / "volcano-scheduler.conf"
POOL = "plugin-pool"


def plugin_conf(target: str) -> str:
    """The project's plugin conf with ``repack.address`` on ``target``."""
    conf = yaml.safe_load(PLUGIN_CONF.read_text())
    (repack,) = [p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "repack"]
    repack["arguments"]["repack.address"] = target
    return yaml.safe_dump(conf, sort_keys=False)


def test_the_plugin_keeps_latest_fresh_and_it_plans_like_the_informers(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    s = Scenario(real_cluster, tmp_path, "plugin")
    s.install()
    with BackgroundServer(ServerConfig(port=0)) as sidecar:
        service = sidecar.running.service
        assert service is not None

        def opened_at() -> float:
            session = service.session(LATEST)
            return session.opened_at if session is not None else 0.0

        with real_cluster.scheduler_binary("vc-scheduler-repack", plugin_conf(sidecar.target)):
            s.three_jobs(POOL)  # bound by vc-scheduler-repack: the plugin schedules as Volcano does
            wait_for(lambda: opened_at() > 0, 90, why="vc-scheduler-repack's sessions published as latest")
            # every cycle refreshes it: a new session each period, its age within a few periods
            seen, ages = {opened_at()}, []
            for _ in range(10):
                time.sleep(0.3)
                seen.add(opened_at())
                ages.append(time.time() - opened_at())
            assert len(seen) >= 3 and max(ages) < 3.0, (sorted(seen), ages)
            api = config.new_client_from_config(str(real_cluster.kubeconfig))
            try:
                informers = read_cluster(api, name="informers")
            finally:
                api.close()
            read_at = time.time()
            wait_for(lambda: opened_at() > read_at or None, 10, why="a session published after the informer read")
            log = (real_cluster.dir / "logs" / "vc-scheduler.log").read_text(errors="replace")
            with RepackClient(sidecar.target) as client:
                on_latest = client.evaluate(service_pb2.EvaluateRequest(session_id=LATEST, resources=[NPU]))
                on_informers = client.evaluate(service_pb2.EvaluateRequest(snapshot=informers, resources=[NPU]))
                plan_latest = client.plan(service_pb2.PlanRequest(session_id=LATEST, spec=_spec(POOL)))
                plan_informers = client.plan(service_pb2.PlanRequest(snapshot=informers, spec=_spec(POOL)))
    assert "not published" not in log and "publishing session" not in log, log[-3000:]
    assert list(on_latest.resources) == list(on_informers.resources), (on_latest, on_informers)
    assert on_latest.resources[0].providing_nodes >= 3
    got, want = plan_latest.status, plan_informers.status
    assert got.plan.moves and len(got.plan.freed_nodes) == 1, got  # three_jobs leaves one node to free
    assert (got.phase, list(got.conditions)) == (want.phase, list(want.conditions))
    if got.plan != want.plan:
        import difflib

        lines = str(want.plan).splitlines(), str(got.plan).splitlines()
        diff = difflib.unified_diff(*lines, "informers", "latest", lineterm="")
        raise AssertionError("the plans differ:\n" + "\n".join(diff))
