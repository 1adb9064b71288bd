"""Which view a run is planned on: the sidecar's session ``latest`` while fresh (and in agreement with
the informers), else the informer cache — in process, over gRPC with the age trailer, and a whole
DryRun and Execute on the fake cluster port planned on a sidecar fed by a Volcano-shaped
onSessionOpen."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.client import RepackClient
from sidecar.errors import InputError
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import object_uid
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.service import Deadline, RepackService
from sidecar.snapshot.io import load_snapshot, parse_dict
from sidecar.watcher import observer as observe
from sidecar.watcher.args import watch_arguments, watch_options
from sidecar.watcher.dryrun import DryRunReconciler
from sidecar.watcher.execute.reconciler import ExecuteReconciler
from sidecar.watcher.kit.port import EVENTS, REPACKRUNS
from sidecar.watcher.sidecarport import InProcessSidecar
from sidecar.watcher.source import INFORMER, SESSION, disagreement, plan_run
from tests.execute_fixtures import GUIDE, WORKER0, WORKER1, execute_run, guide_box
from tests.extender_fixtures import open_guide_session

DRYRUN = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend-dryrun.yaml"


def pb_request(spec: spec_pb2.RepackSpec, snap: pb.Snapshot | None = None) -> service_pb2.PlanRequest:
    return service_pb2.PlanRequest(spec=spec, snapshot=snap) if snap is not None else service_pb2.PlanRequest(spec=spec)


def guide_spec() -> spec_pb2.RepackSpec:
    run = yaml.safe_load(DRYRUN.read_text())
    return parse_dict(run["spec"], spec_pb2.RepackSpec(), source="spec")


class Recorder(observe.WatcherObserver):
    def __init__(self) -> None:
        self.sources: list[str] = []

    def planned(self, source: str) -> None:
        self.sources.append(source)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    previous = observe.install(rec)
    yield rec
    observe.install(previous)


@pytest.fixture
def published() -> tuple[RepackService, pb.Snapshot]:
    """A service whose ``latest`` is the guide's cluster, as the extender intake would publish it."""
    service, snap = RepackService(), load_snapshot(GUIDE)
    service.publish("latest", snap, Deadline(30))
    return service, snap


def test_a_fresh_session_is_planned_on_and_gives_the_informers_plan(
    published: tuple[RepackService, pb.Snapshot], recorder: Recorder
) -> None:
    service, snap = published
    planner = InProcessSidecar(service)
    on_session = plan_run(planner, guide_spec(), lambda: snap, max_age=60)
    assert on_session.source == SESSION and 0 <= on_session.age < 60
    assert on_session.snapshot is snap  # UIDs and owners still come from the informers
    on_cache = plan_run(planner, guide_spec(), lambda: snap, max_age=0)
    assert on_cache.source == INFORMER and on_cache.age == 0
    assert on_session.response.status.plan == on_cache.response.status.plan
    assert len(on_session.response.status.plan.moves) > 0
    assert recorder.sources == [SESSION, INFORMER]


def test_no_session_or_a_stale_one_falls_back_to_the_informer_cache(
    published: tuple[RepackService, pb.Snapshot],
) -> None:
    service, snap = published
    assert plan_run(InProcessSidecar(RepackService()), guide_spec(), lambda: snap, max_age=60).source == INFORMER
    time.sleep(0.02)
    stale = plan_run(InProcessSidecar(service), guide_spec(), lambda: snap, max_age=0.01)
    assert stale.source == INFORMER


def test_a_session_that_disagrees_with_the_informers_is_not_journaled(
    published: tuple[RepackService, pb.Snapshot],
) -> None:
    """The session moves a pod the informers place elsewhere (or do not know): the run is planned
    again on the informer snapshot, whose plan is consistent with the UIDs the journal reads."""
    service, snap = published
    planner = InProcessSidecar(service)
    plan = plan_run(planner, guide_spec(), lambda: snap, max_age=60).response.status.plan
    move = plan.moves[0]
    victim = move.pods[0]
    assert disagreement(plan, snap) == ""

    moved_away = pb.Snapshot()
    moved_away.CopyFrom(snap)
    task = next(t for t in moved_away.tasks if (t.namespace, t.name) == (move.namespace, victim.name))
    task.node = next(n.name for n in snap.nodes if n.name != victim.from_node)
    assert f"is on {task.node}, not {victim.from_node}" in disagreement(plan, moved_away)
    again = plan_run(planner, guide_spec(), lambda: moved_away, max_age=60)
    assert again.source == INFORMER

    gone = pb.Snapshot()
    gone.CopyFrom(snap)
    del gone.tasks[[(t.namespace, t.name) for t in gone.tasks].index((move.namespace, victim.name))]
    assert "is not in the informer cache" in disagreement(plan, gone)
    assert plan_run(planner, guide_spec(), lambda: gone, max_age=60).source == INFORMER


@pytest.fixture(scope="module")
def fed_sidecar() -> Iterator[BackgroundServer]:
    """A real sidecar whose ``latest`` came from a Volcano-shaped onSessionOpen of the guide's cluster."""
    config = ServerConfig(port=0, metrics_port=-1, extender_port=0)
    with BackgroundServer(config) as s:
        open_guide_session(s)
        yield s


def test_over_grpc_the_age_comes_from_the_trailer_and_the_volcano_session_agrees(
    fed_sidecar: BackgroundServer,
) -> None:
    snap = load_snapshot(GUIDE)
    with RepackClient(fed_sidecar.target) as remote:
        response, age = remote.plan_latest(pb_request(guide_spec()))
        assert 0 <= age < 60 and response.status.plan.moves
        planned = plan_run(remote, guide_spec(), lambda: snap, max_age=60)
    assert planned.source == SESSION, "the extender's decode of the guide agrees with the informer view"
    inline = InProcessSidecar().plan(pb_request(guide_spec(), snap))
    assert planned.response.status.plan.freed_nodes == inline.status.plan.freed_nodes


def test_a_dryrun_on_the_fake_cluster_plans_on_the_fed_session(
    fed_sidecar: BackgroundServer, cluster: FakeCluster, recorder: Recorder
) -> None:
    run = yaml.safe_load(DRYRUN.read_text())
    cluster.create(REPACKRUNS, run)
    name = run["metadata"]["name"]
    with RepackClient(fed_sidecar.target) as remote:
        reconciler = DryRunReconciler(cluster, remote, session_max_age=60)
        created = cluster.get(REPACKRUNS, name)
        assert created is not None and reconciler.reconcile(created).phase == "Succeeded"
    assert recorder.sources == [SESSION]
    done = cluster.get(REPACKRUNS, name)
    assert done is not None and done["status"]["plan"]["freedNodes"]


def test_an_execute_run_journals_the_sessions_plan_with_the_informers_uids(
    fed_sidecar: BackgroundServer, recorder: Recorder
) -> None:
    with guide_box() as box, RepackClient(fed_sidecar.target) as remote:
        box.create_run(execute_run("on-latest", grace=0))
        rec = ExecuteReconciler(box.cluster, remote, session_max_age=60)
        assert box.drive(rec, "on-latest", passes=80, between=lambda: time.sleep(0.03)) == "Succeeded"
        status = box.run("on-latest")["status"]
        assert recorder.sources == [SESSION], "planned once, at admission, on the session"
        assert status["plan"]["freedNodes"] == ["ascend-node-01"]
        assert {(r["victimPodName"], r["victimPodUID"]) for r in status["relocations"]} == {
            (WORKER0, object_uid("t-train-0")),  # the pod's uid as the API server holds it
            (WORKER1, object_uid("t-train-1")),
        }
        assert all(r["owner"]["uid"] for r in status["relocations"])
        events = [e for e in box.cluster.items(EVENTS, "default") if e["involvedObject"]["name"] == "on-latest"]
        admitted = next(e["message"] for e in events if e["reason"] == "Admitted")
        assert admitted.startswith("replanned on the scheduler's session latest (")


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_session_max_age_must_be_finite_and_not_negative(value: str) -> None:
    parser = argparse.ArgumentParser()
    watch_arguments(parser)
    ns = parser.parse_args(["--in-process", "--session-max-age", value])
    with pytest.raises(InputError, match="--session-max-age"):
        watch_options(ns)
    assert watch_options(parser.parse_args(["--in-process"])).session_max_age == 5.0
