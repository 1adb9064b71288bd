"""The extender intake over real HTTP beside a real gRPC sidecar: sessions pushed the way Volcano's
extender plugin pushes them, then Plan/Filter/Prioritize on session "latest"."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import orjson
import pytest

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.client import MIB, client_options
from sidecar.scenarios.volcano_session import check_bodies
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.server.extender import SessionIntake
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from tests.extender_fixtures import open_guide_session, post

GUIDE = "sidecar/data/guide-ascend.json"


@pytest.fixture(scope="module")
def sidecar() -> Iterator[BackgroundServer]:
    with BackgroundServer(ServerConfig(port=0, metrics_port=-1, extender_port=0)) as s:
        yield s


def stub(s: BackgroundServer) -> service_pb2_grpc.RepackStub:
    return service_pb2_grpc.RepackStub(grpc.insecure_channel(s.target, options=client_options(64 * MIB)))


@pytest.fixture(scope="module")
def pushed(sidecar: BackgroundServer) -> dict:  # type: ignore[type-arg]
    session = open_guide_session(sidecar)
    assert post(sidecar, "onSessionClose", b"{}") == (200, {})
    return session


def test_plan_on_latest_equals_plan_on_the_snapshot(sidecar: BackgroundServer, pushed: dict) -> None:  # type: ignore[type-arg]
    spec = load_repack_spec("sidecar/data/guide-ascend-dryrun.yaml")
    rpc = stub(sidecar)
    on_session = rpc.Plan(service_pb2.PlanRequest(session_id="latest", spec=spec), timeout=30)
    on_snapshot = rpc.Plan(service_pb2.PlanRequest(snapshot=load_snapshot(GUIDE), spec=spec), timeout=30)
    assert on_session.status.plan == on_snapshot.status.plan
    assert on_session.status.plan.moves or on_session.status.plan.candidates


def _pending_uid(session: dict) -> str:  # type: ignore[type-arg]
    return next(u for j in session["Jobs"].values() for u, t in j["Tasks"].items() if t["Status"] == ts.RUNNING)


def test_predicate_and_prioritize_agree_with_filter_and_prioritize(sidecar: BackgroundServer, pushed: dict) -> None:  # type: ignore[type-arg]
    uid = _pending_uid(pushed)
    names = sorted(pushed["Nodes"])
    rpc = stub(sidecar)
    filt = rpc.Filter(service_pb2.FilterRequest(session_id="latest", task_uid=uid, nodes=names), timeout=30)
    prio = rpc.Prioritize(service_pb2.PrioritizeRequest(session_id="latest", task_uid=uid, nodes=names), timeout=30)
    feasible = set(filt.feasible_nodes)
    for name in names:
        pred, _ = check_bodies(pushed, uid, [name])
        code, answer = post(sidecar, "predicate", pred)
        assert code == 200
        assert (answer["code"] == 0) == (name in feasible), (name, answer)
        if answer["code"]:
            assert answer["status"] and answer["code"] in (2, 3)
    _, prio_body = check_bodies(pushed, uid, names)
    code, answer = post(sidecar, "prioritize", prio_body)
    assert code == 200 and answer["errorMessage"] == ""
    want = {s.node: s.score for s in prio.scores}
    assert {n: v for n, v in answer["nodeScore"].items() if n in want} == pytest.approx(want)
    assert set(answer["nodeScore"]) == set(names)


def test_a_task_the_session_lacks_is_read_from_the_request(sidecar: BackgroundServer, pushed: dict) -> None:  # type: ignore[type-arg]
    uid = _pending_uid(pushed)
    pred, _ = check_bodies(pushed, uid, [sorted(pushed["Nodes"])[0]])
    body = orjson.loads(pred)
    body["task"]["UID"] = "not-in-the-session"
    body["task"]["Pod"]["metadata"]["uid"] = "not-in-the-session"
    code, answer = post(sidecar, "predicate", orjson.dumps(body))
    assert code == 200 and answer["code"] in (0, 2, 3)


def test_bad_bodies_are_400_and_unknown_verbs_404(sidecar: BackgroundServer) -> None:
    assert post(sidecar, "predicate", b"{]")[0] == 400
    assert post(sidecar, "predicate", b"{}")[0] == 400
    assert post(sidecar, "preemptable", b'{"evictor": {}}')[0] == 200
    assert post(sidecar, "nonsense", b"{}")[0] == 404
    # a bad session is accepted (200 at once) and rejected off the request path
    assert post(sidecar, "onSessionOpen", b'{"Nodes": []}') == (200, {})


class _SlowService:
    """Holds the decoder in publish until released, so bodies pile up behind it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.published: list[str] = []

    def publish(self, name, snapshot, deadline, ttl=0.0):  # type: ignore[no-untyped-def]
        self.release.wait(10)
        self.published.append(snapshot.nodes[0].name if snapshot.nodes else "")

        class _S:
            class state:
                n_nodes = len(snapshot.nodes)
                n_tasks = len(snapshot.tasks)

        return _S()


def test_backpressure_keeps_only_the_newest_body() -> None:
    svc = _SlowService()
    intake = SessionIntake(svc)  # type: ignore[arg-type]

    def body(name: str) -> bytes:
        return orjson.dumps({"Nodes": {name: {"Name": name, "Node": None, "Allocatable": None}}})

    intake.submit(body("first"))
    while not intake._busy:  # the decoder took the first body
        pass
    for i in range(5):
        intake.submit(body(f"stale-{i}"))
    intake.submit(body("newest"))
    svc.release.set()
    assert intake.idle(10)
    intake.stop()
    assert svc.published == ["first", "newest"]
    assert (intake.stats.received, intake.stats.dropped, intake.stats.published) == (7, 5, 2)
