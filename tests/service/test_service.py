"""The application service called in-process, as the CLI and the coming front doors call it (no gRPC)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.service import Deadline, DeadlineExceeded, NotFound, Observer, RepackService, ServiceLimits
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from sidecar.snapshot.state import ClusterState
from tests.builders import GPU, guide_twenty_nodes, node, snapshot, task

GUIDE = "sidecar/data/guide-ascend.json"
GUIDE_RUN = "sidecar/data/guide-ascend-dryrun.yaml"
NPU = "huawei.com/ascend-1980"
NO_DEADLINE = Deadline.none()


class Recorder(Observer):
    """Counts what the service reports (the server turns the same reports into Prometheus metrics)."""

    def __init__(self) -> None:
        self.decoded: list[int] = []
        self.open_sessions: list[int] = []

    def snapshot_decoded(self, seconds: float, state: ClusterState) -> None:
        self.decoded.append(state.n_nodes)

    def sessions_changed(self, open_sessions: int) -> None:
        self.open_sessions.append(open_sessions)


def test_evaluate_answers_the_guide_example() -> None:
    reply = RepackService().evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), NO_DEADLINE)
    (f,) = reply.resources
    assert (f.resource, f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (GPU, 20, 15, 12)
    assert f.fragmentation_percent == pytest.approx(15.0)


def test_bad_input_is_input_error_naming_the_field() -> None:
    service = RepackService()
    with pytest.raises(InputError, match=r"^source: set either snapshot or session_id$"):
        service.evaluate(service_pb2.EvaluateRequest(), NO_DEADLINE)
    bad = snapshot([node("n-1")], [task("a", "n-1", status=99)])
    with pytest.raises(InputError) as err:
        service.evaluate(service_pb2.EvaluateRequest(snapshot=bad), NO_DEADLINE)
    assert err.value.field == "tasks[0].status"


def test_plan_inline_matches_plan_by_session() -> None:
    service = RepackService()
    spec = load_repack_spec(GUIDE_RUN)
    inline = service.plan(service_pb2.PlanRequest(snapshot=load_snapshot(GUIDE), spec=spec), NO_DEADLINE).status
    assert inline.conditions[0].reason == "RepackRecommended"
    assert list(inline.plan.freed_nodes) == ["ascend-node-01"]
    sid = service.open_session(service_pb2.OpenSessionRequest(snapshot=load_snapshot(GUIDE)), NO_DEADLINE).session_id
    by_session = service.plan(service_pb2.PlanRequest(session_id=sid, spec=spec), NO_DEADLINE).status
    assert by_session == inline


def test_plan_rejects_a_bad_spec_before_decoding_the_snapshot() -> None:
    """A bad spec costs nothing: the snapshot, itself invalid here, is never decoded."""
    recorder = Recorder()
    service = RepackService(observer=recorder)
    spec = load_repack_spec(GUIDE_RUN)
    spec.goals.add(resource=GPU)
    bad_snapshot = snapshot([node("n-1")], [task("a", "n-1", status=99)])  # would fail as tasks[0].status
    with pytest.raises(InputError) as err:
        service.plan(service_pb2.PlanRequest(snapshot=bad_snapshot, spec=spec), NO_DEADLINE)
    assert err.value.field == "spec.goals"
    assert str(err.value) == "spec.goals: exactly one goal per run, got 2"
    assert recorder.decoded == []
    # ... and before the session lookup too
    with pytest.raises(InputError, match=r"^spec\.goals"):
        service.plan(service_pb2.PlanRequest(session_id="gone", spec=spec), NO_DEADLINE)
    with pytest.raises(InputError, match=r"^spec: missing$"):
        service.plan(service_pb2.PlanRequest(snapshot=bad_snapshot), NO_DEADLINE)
    assert recorder.decoded == []


def test_snapshot_over_the_limits_is_input_error() -> None:
    service = RepackService(ServiceLimits(max_nodes=2))
    with pytest.raises(InputError):
        service.evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), NO_DEADLINE)


def _probe() -> pb.Task:
    probe = pb.Task(namespace="repack-demo", name="probe", requests={NPU: 2000, "cpu": 1000})
    probe.profile.node_selector["accelerator-pool"] = "ascend-npu"
    return probe


def test_filter_on_the_guide_example_with_volcano_wording() -> None:
    service = RepackService()
    snap = load_snapshot(GUIDE)
    reply = service.filter(service_pb2.FilterRequest(snapshot=snap, task=_probe()), NO_DEADLINE)
    assert list(reply.feasible_nodes) == ["ascend-node-01"]
    (group,) = reply.failures
    assert list(group.reasons) == [f"Insufficient {NPU}"]
    assert sorted(group.nodes) == ["ascend-node-02", "ascend-node-03"]
    assert reply.message == f"2/3 nodes are unavailable: 2 Insufficient {NPU}."
    subset = service_pb2.FilterRequest(snapshot=snap, task_uid="t-train-0", nodes=["ascend-node-02"])
    reply = service.filter(subset, NO_DEADLINE)
    assert list(reply.feasible_nodes) == ["ascend-node-02"] and not reply.failures and not reply.message
    with pytest.raises(InputError, match=r"^subject: set either task_uid or task$"):
        service.filter(service_pb2.FilterRequest(snapshot=snap), NO_DEADLINE)


def test_prioritize_on_the_guide_example_ranks_feasible_nodes() -> None:
    reply = RepackService().prioritize(
        service_pb2.PrioritizeRequest(snapshot=load_snapshot(GUIDE), task_uid="t-train-0"), NO_DEADLINE
    )
    # BalancedAllocation and LeastAllocated outweigh binpack's preference for the fuller 02 and 03
    # (see test_server.test_prioritize_over_grpc_ranks_feasible_nodes)
    assert [x.node for x in reply.scores] == ["ascend-node-01", "ascend-node-02", "ascend-node-03"]
    for x in reply.scores:
        assert x.score == pytest.approx(sum(x.plugins.values()))


def test_sessions_open_use_close_then_not_found() -> None:
    recorder = Recorder()
    service = RepackService(observer=recorder)
    opened = service.open_session(service_pb2.OpenSessionRequest(snapshot=load_snapshot(GUIDE)), NO_DEADLINE)
    assert (opened.node_count, opened.expires_at.seconds > 0) == (3, True)
    sid = opened.session_id
    evaluated = service.evaluate(service_pb2.EvaluateRequest(session_id=sid), NO_DEADLINE)
    assert evaluated.resources[0].resource == NPU
    filtered = service.filter(service_pb2.FilterRequest(session_id=sid, task=_probe()), NO_DEADLINE)
    assert list(filtered.feasible_nodes) == ["ascend-node-01"]
    close = service_pb2.CloseSessionRequest(session_id=sid)
    assert service.close_session(close, NO_DEADLINE).closed
    assert not service.close_session(close, NO_DEADLINE).closed
    assert recorder.open_sessions == [1, 0, 0]
    for call, request in [
        (service.evaluate, service_pb2.EvaluateRequest(session_id=sid)),
        (service.filter, service_pb2.FilterRequest(session_id=sid, task_uid="t-train-0")),
        (service.plan, service_pb2.PlanRequest(session_id=sid, spec=load_repack_spec(GUIDE_RUN))),
    ]:
        with pytest.raises(NotFound, match=sid):
            call(request, NO_DEADLINE)  # type: ignore[operator]
    with pytest.raises(InputError, match=r"^session_id: missing$"):
        service.close_session(service_pb2.CloseSessionRequest(), NO_DEADLINE)
    with pytest.raises(InputError, match=r"^ttl_seconds: negative value -1$"):
        service.open_session(service_pb2.OpenSessionRequest(snapshot=guide_twenty_nodes(), ttl_seconds=-1), NO_DEADLINE)


def test_expired_deadline_stops_work_between_steps() -> None:
    service = RepackService()
    deadline = Deadline(0.0)
    time.sleep(0.001)
    with pytest.raises(DeadlineExceeded, match="deadline exceeded after receiving the snapshot"):
        service.evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), deadline)
    with pytest.raises(DeadlineExceeded):
        service.plan(service_pb2.PlanRequest(snapshot=load_snapshot(GUIDE), spec=load_repack_spec(GUIDE_RUN)), deadline)
    assert service.evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), Deadline(None)).resources


class Cancellable(Deadline):
    """No time limit, but ``cancel`` makes the next check raise (as the gRPC door's CallDeadline)."""

    def __init__(self) -> None:
        super().__init__(None)
        self.cancelled = threading.Event()

    def check(self, step: str) -> None:
        if self.cancelled.is_set():
            raise DeadlineExceeded(f"call cancelled; stopped after {step}")
        super().check(step)


@pytest.mark.parametrize("how", ["cancelled", "out of time"])
def test_a_call_queued_on_a_busy_session_leaves_the_queue(how: str) -> None:
    """Calls on one session take its lock in turn. One cancelled (its client went away, or the
    server's --grace ended) or out of time while it waits stops waiting, rather than planning for
    nobody once its turn comes: that is how cancelled Plans free their workers at shutdown."""
    service = RepackService()
    sid = service.open_session(service_pb2.OpenSessionRequest(snapshot=load_snapshot(GUIDE)), NO_DEADLINE).session_id
    request = service_pb2.PlanRequest(session_id=sid, spec=load_repack_spec(GUIDE_RUN))
    service.plan(request, NO_DEADLINE)  # the session's mirror is built
    session = service.session(sid)
    assert session is not None
    deadline = Cancellable() if how == "cancelled" else Deadline(0.3)
    raised: list[BaseException] = []

    def call() -> None:
        try:
            service.plan(request, deadline)
        except DeadlineExceeded as exc:
            raised.append(exc)

    with session.lock:  # another call on the session, at work throughout
        queued = threading.Thread(target=call)
        queued.start()
        queued.join(0.1)
        assert queued.is_alive()
        if isinstance(deadline, Cancellable):
            deadline.cancelled.set()
        queued.join(10)
        assert not queued.is_alive()  # it left while the lock was still held
    assert [str(e).rsplit("after ", 1)[-1] for e in raised] == ["waiting for the session"]
    assert service.plan(request, Deadline(60)).status.plan.candidates  # the session goes on serving


def test_the_service_imports_no_transport() -> None:
    code = (
        "import sys, sidecar.service; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'grpc' "
        "or m.startswith(('sidecar.server', 'sidecar.cli', 'sidecar.client'))); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_memory_budget_refuses_what_can_never_fit_and_queues_what_can() -> None:
    import threading

    from sidecar.service.limits import MIB, MemoryBudget, Overloaded

    budget = MemoryBudget(100 * MIB, wait_seconds=30)
    with pytest.raises(Overloaded, match=r"over the whole budget of 100 MiB: .* raise --memory-budget-mib"):
        budget.admit(101 * MIB).__enter__()
    order: list[str] = []
    with budget.admit(60 * MIB):
        waiter = threading.Thread(target=lambda: _admitted(budget, 60 * MIB, order))
        waiter.start()
        time.sleep(0.3)
        assert order == [] and budget.used == 60 * MIB  # the second waits for the first
        order.append("first done")
    waiter.join(30)
    assert order == ["first done", "second admitted"] and budget.used == 0
    impatient = MemoryBudget(100 * MIB, wait_seconds=0.2)
    with impatient.admit(90 * MIB):
        with pytest.raises(Overloaded, match=r"memory budget busy: 90 of 100 MiB in use .* --memory-budget-mib"):
            impatient.admit(20 * MIB).__enter__()
        late = Deadline(-1.0)
        with pytest.raises(DeadlineExceeded, match="after waiting"):  # waiting stops at the caller's deadline
            impatient.admit(20 * MIB, stop=lambda: late.check("waiting")).__enter__()
    assert impatient.used == 0


def _admitted(budget, cost: int, order: list[str]) -> None:  # type: ignore[no-untyped-def]
    with budget.admit(cost):
        order.append("second admitted")


def test_request_cost_counts_resource_names_before_any_decoding() -> None:
    """The issue's 3,000 resources x 50k tasks (1.9 MB on the wire, 1.23 GiB decoded) is refused up front."""
    from sidecar.service.limits import MIB, Overloaded, estimated_bytes, snapshot_cost

    wide = pb.Snapshot(
        nodes=[pb.Node(name="n", allocatable={f"example.com/r{i}": 1.0 for i in range(3000)})],
        task_columns=pb.TaskColumns(uid=[f"t{i}" for i in range(50_000)]),
    )
    assert snapshot_cost(wide) == estimated_bytes(1, 50_000, 3000) > 2 * 1024 * MIB
    service = RepackService(ServiceLimits(memory_budget_mib=1024))
    with pytest.raises(Overloaded, match="--memory-budget-mib"):
        service.open_session(service_pb2.OpenSessionRequest(snapshot=wide), NO_DEADLINE)
    assert snapshot_cost(load_snapshot(GUIDE)) < 8 * MIB
    assert ServiceLimits().budget() is None  # offline (the CLI, tests) has no budget unless asked


def test_open_session_published_as_latest_replaces_it_and_takes_the_supplement() -> None:
    """The Volcano plugin's door: each cycle's snapshot becomes ``latest`` (same name, new age),
    merged with the last Supplement as the extender intake's sessions are."""
    service = RepackService()
    ns = pb.Namespace(name="team-a", labels={"tier": "gold"})
    service.supplement(service_pb2.SupplementRequest(namespaces=[ns]), NO_DEADLINE)
    first = service.open_session(
        service_pb2.OpenSessionRequest(snapshot=load_snapshot(GUIDE), publish_as="latest"), NO_DEADLINE
    )
    assert (first.session_id, first.node_count) == ("latest", 3)
    opened_at = service.session("latest").opened_at  # type: ignore[union-attr]
    time.sleep(0.01)
    second = service.open_session(
        service_pb2.OpenSessionRequest(snapshot=guide_twenty_nodes(), publish_as="latest"), NO_DEADLINE
    )
    assert (second.session_id, second.node_count) == ("latest", 20)
    latest = service.session("latest")
    assert latest is not None and latest.opened_at > opened_at
    evaluated = service.evaluate(service_pb2.EvaluateRequest(session_id="latest"), NO_DEADLINE)
    inline = service.evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), NO_DEADLINE)
    assert evaluated == inline
    labels = dict(zip(latest.state.namespaces, latest.state.namespace_labels, strict=True))
    assert labels.get("team-a") == {"tier": "gold"}  # the supplement's namespace came along
    for bad in ("Latest", "mine", " latest"):
        with pytest.raises(InputError, match=r"^publish_as: .*only"):
            refused = service_pb2.OpenSessionRequest(snapshot=guide_twenty_nodes(), publish_as=bad)
            service.open_session(refused, NO_DEADLINE)
    assert service.session("latest") is latest  # a refused publish changed nothing
