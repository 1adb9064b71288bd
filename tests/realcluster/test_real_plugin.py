"""The repack scheduler plugin compiled into vc-scheduler, publishing to the sidecar, on the real
control plane.

The cluster's scheduler is swapped for ``vc-scheduler-repack`` (Volcano v1.14.1 as
go/controlplane builds it, plus go/plugin) running ``manifests/plugin/volcano-scheduler.conf``
with ``repack.address`` pointed at a sidecar started here. Checked: every cycle refreshes the
session ``latest`` over gRPC (``OpenSession`` with ``publish_as: latest``), it schedules as
Volcano does (a new Job's pods bind), and Evaluate and Plan on ``latest`` answer what they answer
on the watcher's informer view of the same cluster — the same test the extender path passes
(tests/realcluster/test_real_extender.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from realcluster.launcher import ROOT, RealCluster
from sidecar.api.sessions import LATEST
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from tests.realcluster.fixtures import wait_for
from tests.realcluster.scenario import Scenario
from tests.realcluster.test_real_extender import assert_same_answers, informer_view, latest_and_informers

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
            informers = informer_view(real_cluster, service)
            log = (real_cluster.dir / "logs" / "vc-scheduler.log").read_text(errors="replace")
            answers = latest_and_informers(sidecar.target, informers, POOL)
    assert "not published" not in log and "publishing session" not in log, log[-3000:]
    assert_same_answers(*answers)
