"""Dangling references real sessions contain (issue 25 items 1 and 2): a task on a node whose Node
object is gone, a pod whose PodGroup is missing. Neither makes a cluster unplannable; each answer
says so in ``warnings``, on every front door: gRPC inline and session, the extender intake, the
informer's objects, snapshot files through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import orjson
import pytest
from google.protobuf import json_format

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.fake.objects import objects_from_snapshot
from sidecar.repack.cost import GangState
from sidecar.scenarios.volcano_session import MASTER, check_bodies, session_dict
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.snapshot.decode import decode
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.kube import snapshot_from_objects
from tests.builders import GPU, node, snapshot, task
from tests.extender_fixtures import post
from tests.plan_cases import explanation, plan_status
from tests.plan_cases import spec as plan_spec

GUIDE = "sidecar/data/guide-ascend.json"
GHOST = "1 task on nodes the snapshot does not list"
ORPHAN = "1 task of PodGroups the snapshot does not list"


def dangling() -> pb.Snapshot:
    """Two half-full nodes whose pods could pack; one pod on a deleted node (same gang), one
    pod on "b" whose PodGroup is gone."""
    return snapshot(
        [node("a"), node("b"), node("c")],
        [
            task("w-0", "a", 4, pod_group="job"),
            task("w-1", "ghost-node", 4, pod_group="job"),
            task("w-2", "c", 4, pod_group="job"),
            task("lone", "b", 2, pod_group="deleted"),
            task("p", "", 1, status=pb.Task.Pending, pod_group="job"),
        ],
        [pb.PodGroup(namespace="default", name="job", min_member=3, phase="Running")],
    )


@pytest.fixture(scope="module")
def sidecar() -> Iterator[BackgroundServer]:
    with BackgroundServer(ServerConfig(port=0, metrics_port=-1, extender_port=0)) as s:
        yield s


def test_every_grpc_answer_carries_the_warnings(sidecar: BackgroundServer) -> None:
    stub = service_pb2_grpc.RepackStub(grpc.insecure_channel(sidecar.target))  # type: ignore[no-untyped-call]
    snap = dangling()
    spec = plan_spec()
    inline = [
        stub.Evaluate(service_pb2.EvaluateRequest(snapshot=snap), timeout=30),
        stub.Filter(service_pb2.FilterRequest(snapshot=snap, task_uid="uid-default-p"), timeout=30),
        stub.Prioritize(service_pb2.PrioritizeRequest(snapshot=snap, task_uid="uid-default-p"), timeout=30),
        stub.Plan(service_pb2.PlanRequest(snapshot=snap, spec=spec), timeout=30).status,
    ]
    opened = stub.OpenSession(service_pb2.OpenSessionRequest(snapshot=snap), timeout=30)
    sid = opened.session_id
    on_session = [
        opened,
        stub.Evaluate(service_pb2.EvaluateRequest(session_id=sid), timeout=30),
        stub.Filter(service_pb2.FilterRequest(session_id=sid, task_uid="uid-default-p"), timeout=30),
        stub.Plan(service_pb2.PlanRequest(session_id=sid, spec=spec), timeout=30).status,
    ]
    for answer in inline + on_session:
        ghost, orphan = answer.warnings
        assert ghost.startswith(GHOST + ' (e.g. tasks[1] "default/w-1" on "ghost-node")'), ghost
        assert orphan.startswith(ORPHAN + ' (e.g. tasks[3] "default/lone": PodGroup "default/deleted")'), orphan
    assert opened.task_count == 5  # nothing dropped


def test_a_deleted_node_leaves_its_task_counted_in_the_gang_and_on_no_node() -> None:
    """Volcano counts w-1 (Running, NodeName set) in the Job's ready tasks but on no node; the pod
    whose PodGroup is gone cannot move, so its node is no candidate, explained."""
    state = decode(dangling())
    assert state.task_node.tolist()[1] == -1
    assert state.ledger.used[:, state.resource(GPU)].tolist() == [4000.0, 2000.0, 4000.0]
    gpu = state.resource(GPU)
    assert GangState.build(state, gpu, state.task_node >= 0).running.tolist() == [3]
    status = plan_status(state, plan_spec())
    reason, message = explanation(status, "b")
    assert reason == "UnmovablePod"
    assert message == "pod default/lone: its PodGroup default/deleted is not in the snapshot (deleted, or not yet seen)"


def test_the_extender_intake_publishes_and_answers_with_the_warnings(sidecar: BackgroundServer) -> None:
    snap = load_snapshot(GUIDE)
    session = session_dict(snap, objects_from_snapshot(snap), MASTER)
    # Volcano's cache leaves out a node whose Node object is gone; its Jobs keep their tasks
    gone = next(n for n, info in session["Nodes"].items() if info["Tasks"])
    del session["Nodes"][gone]
    assert post(sidecar, "onSessionOpen", orjson.dumps(session)) == (200, {})
    assert sidecar.running.extender is not None
    intake = sidecar.running.extender.extender.intake
    assert intake.idle(30)
    (warning,) = intake.stats.last_warnings
    assert f'on "{gone}"' in warning and "counted on no node" in warning
    member = next(uid for job in session["Jobs"].values() for uid in job["Tasks"])
    predicate, prioritize = check_bodies(session, member, list(session["Nodes"])[:1])
    for verb, body in (("predicate", predicate), ("prioritize", prioritize)):
        code, answer = post(sidecar, verb, body)
        assert code == 200 and answer["warnings"] == [warning], (verb, answer)


def test_the_informers_objects_keep_dangling_pods_and_warn() -> None:
    """The watcher's snapshot (informer caches): a pod bound to a deleted node, a pod whose PodGroup
    was deleted first."""
    snap = dangling()
    objects = objects_from_snapshot(snap)
    kinds: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for o in objects:
        kinds.setdefault(o["kind"], []).append(o)
    built = snapshot_from_objects(kinds.get("Namespace", []), kinds["Node"], kinds["Pod"], kinds["PodGroup"], [])
    warnings = decode(built).warnings
    assert [w.split(" (")[0] for w in warnings] == [GHOST, ORPHAN]


def test_the_cli_prints_the_warnings_on_stderr_and_keeps_stdout_parseable(tmp_path: Path) -> None:
    path = tmp_path / "dangling.json"
    path.write_text(json_format.MessageToJson(dangling()))
    done = subprocess.run(
        [sys.executable, "-m", "sidecar", "evaluate", "--snapshot", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning: ")]
    assert [w.removeprefix("Warning: ").split(" (")[0] for w in warnings] == [GHOST, ORPHAN]
    assert len(json.loads(done.stdout)["warnings"]) == 2
