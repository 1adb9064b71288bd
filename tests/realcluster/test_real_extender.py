"""Volcano's unmodified ``extender`` plugin feeding the sidecar, on the real control plane.

vc-scheduler (v1.14.1, as built by go/controlplane) reloads its conf file when it changes: the
test writes the project's ``volcano-scheduler.conf`` — the extender tier of manifests/extender
included, its ``urlPrefix`` pointed at a sidecar started here (``serve --extender-port``) — and
Volcano's own ``extender.go`` then POSTs every session to it. Checked: every cycle refreshes the
session ``latest`` (published again and again, its age staying within a few schedule periods),
and on a quiet cluster Evaluate and Plan on ``latest`` answer what they answer on the watcher's
informer view of the same cluster (``read_cluster``: the objects as the API serves them).
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path

import pytest
import yaml

from realcluster.launcher import SCHEDULER_CONF, RealCluster
from sidecar.api.sessions import LATEST
from sidecar.api.v1alpha1 import service_pb2, snapshot_pb2, spec_pb2
from sidecar.client import RepackClient
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.service import RepackService
from sidecar.watcher.kit.cache import read_cluster
from sidecar.watcher.kit.kube import connect
from tests.realcluster.fixtures import wait_for
from tests.realcluster.scenario import NPU, Scenario

pytestmark = pytest.mark.realcluster
POOL = "extender-pool"


def _extender_conf(port: int) -> str:
    """The project's conf (manifests/extender) with the extender's urlPrefix on ``port``."""
    conf = yaml.safe_load(SCHEDULER_CONF.read_text())
    for tier in conf["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == "extender":
                plugin["arguments"]["extender.urlPrefix"] = f"http://127.0.0.1:{port}"
    return yaml.safe_dump(conf, sort_keys=False)


def _spec(pool: str = POOL) -> spec_pb2.RepackSpec:
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun)
    spec.goals.add(resource=NPU)
    spec.max_per_run.pod_groups = 1
    spec.scope.nodes.include.selector.match_labels["pool"] = pool
    return spec


def test_vc_schedulers_sessions_keep_latest_fresh_and_it_plans_like_the_informers(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    s = Scenario(real_cluster, tmp_path, "extender")
    s.install()
    s.three_jobs(POOL)
    conf_path = real_cluster.dir / "volcano-scheduler.conf"
    original = conf_path.read_text()
    with BackgroundServer(ServerConfig(port=0, extender_port=0)) as sidecar:
        assert sidecar.running.extender is not None
        extender = sidecar.running.extender.extender
        stats = extender.intake.stats
        conf_path.write_text(_extender_conf(sidecar.running.extender.port))
        try:
            wait_for(lambda: stats.published >= 3, 90, why="vc-scheduler's sessions published as latest")
            assert stats.failed == 0, stats.last_error
            # every cycle refreshes it: published keeps growing, the age stays within a few periods
            before, ages = stats.published, []
            for _ in range(10):
                time.sleep(0.3)
                ages.append(extender.session_age() or 0.0)
            assert stats.published >= before + 2 and max(ages) < 3.0, (stats.published, ages)
            informers = informer_view(real_cluster, extender.service)
            answers = latest_and_informers(sidecar.target, informers, POOL)
        finally:
            conf_path.write_text(original)
    assert_same_answers(*answers)


Answers = tuple[
    service_pb2.EvaluateResponse, service_pb2.EvaluateResponse, service_pb2.PlanResponse, service_pb2.PlanResponse
]


def informer_view(real_cluster: RealCluster, service: RepackService) -> snapshot_pb2.Snapshot:
    """The watcher's informer view of the cluster, once ``latest`` is a session published after it."""
    cluster = connect(str(real_cluster.kubeconfig))
    try:
        informers = read_cluster(cluster, name="informers")
    finally:
        cluster.close()
    read_at = time.time()
    wait_for(lambda: (service.session_age() or 1e9) < time.time() - read_at or None, 10,
             why="a session published after the informer read")  # fmt: skip
    return informers


def latest_and_informers(target: str, informers: snapshot_pb2.Snapshot, pool: str) -> Answers:
    """Evaluate and Plan (scoped to ``pool``) on the session ``latest`` and on the informer view."""
    with RepackClient(target) as client:
        return (
            client.evaluate(service_pb2.EvaluateRequest(session_id=LATEST, resources=[NPU])),
            client.evaluate(service_pb2.EvaluateRequest(snapshot=informers, resources=[NPU])),
            client.plan(service_pb2.PlanRequest(session_id=LATEST, spec=_spec(pool))),
            client.plan(service_pb2.PlanRequest(snapshot=informers, spec=_spec(pool))),
        )


def assert_same_answers(
    on_latest: service_pb2.EvaluateResponse,
    on_informers: service_pb2.EvaluateResponse,
    plan_latest: service_pb2.PlanResponse,
    plan_informers: service_pb2.PlanResponse,
) -> None:
    """The scheduler's session and the informers read the same cluster: same fragmentation, same plan."""
    assert list(on_latest.resources) == list(on_informers.resources), (on_latest, on_informers)
    assert on_latest.resources[0].providing_nodes >= 3
    got, want = plan_latest.status, plan_informers.status
    assert got.plan.moves and len(got.plan.freed_nodes) == 1, got  # three_jobs leaves one node to free
    assert (got.phase, list(got.conditions)) == (want.phase, list(want.conditions))
    if got.plan != want.plan:
        lines = str(want.plan).splitlines(), str(got.plan).splitlines()
        diff = difflib.unified_diff(*lines, "informers", "latest", lineterm="")
        raise AssertionError("the plans differ:\n" + "\n".join(diff))
