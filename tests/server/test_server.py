"""The real gRPC server on loopback, called with the Python client."""

from __future__ import annotations

import threading

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from sidecar.api import richerrors
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.client import MIB, client_options
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.server.servicer import SERVICE_NAME
from tests.builders import GPU, guide_twenty_nodes, node, snapshot, task


def stub(target: str) -> service_pb2_grpc.RepackStub:
    return service_pb2_grpc.RepackStub(grpc.insecure_channel(target, options=client_options(64 * MIB)))


def code_of(call, request, **kw):  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        call(request, timeout=30, **kw)
    return err.value.code(), err.value.details()


def test_health_serving_overall_and_per_service(server) -> None:  # type: ignore[no-untyped-def]
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(server.target))
    for name in ("", SERVICE_NAME):
        reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_evaluate_answers_the_guide_example(server) -> None:  # type: ignore[no-untyped-def]
    reply = stub(server.target).Evaluate(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()), timeout=30)
    (f,) = reply.resources
    assert (f.resource, f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (GPU, 20, 15, 12)
    assert f.fragmentation_percent == pytest.approx(15.0)
    assert f.min_exact and f.min_method == "divisible-exact"
    assert (f.allocated, f.allocatable) == (96, 160)


def test_sessions_open_evaluate_close(server) -> None:  # type: ignore[no-untyped-def]
    s = stub(server.target)
    opened = s.OpenSession(service_pb2.OpenSessionRequest(snapshot=guide_twenty_nodes()), timeout=30)
    assert (opened.node_count, opened.task_count) == (20, 24)
    assert opened.expires_at.seconds > 0
    reply = s.Evaluate(service_pb2.EvaluateRequest(session_id=opened.session_id, resources=[GPU]), timeout=30)
    assert reply.resources[0].fragmentation_percent == pytest.approx(15.0)
    assert s.CloseSession(service_pb2.CloseSessionRequest(session_id=opened.session_id), timeout=5).closed
    assert not s.CloseSession(service_pb2.CloseSessionRequest(session_id=opened.session_id), timeout=5).closed
    code, details = code_of(s.Evaluate, service_pb2.EvaluateRequest(session_id=opened.session_id))
    assert code == grpc.StatusCode.NOT_FOUND
    assert opened.session_id in details


BAD_REQUESTS = [
    (
        "bad status",
        lambda: service_pb2.EvaluateRequest(snapshot=snapshot([node("n-1")], [task("a", "n-1", status=99)])),
        "tasks[0].status: invalid status 99",
    ),
    (
        "negative",
        lambda: service_pb2.EvaluateRequest(snapshot=snapshot([node("n", cards=-1)], [])),
        f'nodes[0].allocatable["{GPU}"]: negative quantity -1000',
    ),
    (
        "duplicate",
        lambda: service_pb2.EvaluateRequest(snapshot=snapshot([node("n"), node("n")], [])),
        'nodes[1].name: duplicate node "n" (first at nodes[0])',
    ),
    ("missing name", lambda: service_pb2.EvaluateRequest(snapshot=snapshot([node("")], [])), "nodes[0].name: missing"),
    ("no source", lambda: service_pb2.EvaluateRequest(), "source: set either snapshot or session_id"),
    (
        "not an extended resource",
        lambda: service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes(), resources=["memory"]),
        'resources[0]: "memory" is not an extended resource (GPUs, NPUs, ...)',
    ),
]


@pytest.mark.parametrize("build,details", [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS])
def test_bad_input_is_invalid_argument_naming_the_field(server, build, details) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        stub(server.target).Evaluate(build(), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == details
    # the field travels in gRPC's rich error details (google.rpc.BadRequest), not only in the sentence
    status = rpc_status.from_call(err.value)
    (detail,) = status.details
    bad = error_details_pb2.BadRequest()
    assert detail.Unpack(bad)
    (violation,) = bad.field_violations
    assert f"{violation.field}: {violation.description}" == details
    assert richerrors.field_violation(err.value) == (violation.field, violation.description)


def test_a_request_that_never_became_a_message_is_charged_to_the_request(server) -> None:  # type: ignore[no-untyped-def]
    raw = grpc.insecure_channel(server.target).unary_unary(
        f"/{SERVICE_NAME}/Evaluate", request_serializer=None, response_deserializer=None
    )
    with pytest.raises(grpc.RpcError) as err:
        raw(b"\xff\xff\xff\xff", timeout=5)
    field, problem = richerrors.field_violation(err.value) or ("", "")
    assert field == "request" and problem == err.value.details()


def test_bad_column_index_over_the_wire(server) -> None:  # type: ignore[no-untyped-def]
    snap = synth(SynthOptions(nodes=4, seed=1))
    snap.task_columns.node[7] = 4
    code, details = code_of(stub(server.target).Evaluate, service_pb2.EvaluateRequest(snapshot=snap))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("task_columns.node[7]: unknown node index 4 (4 nodes")


def test_oversize_message_is_invalid_argument(server) -> None:  # type: ignore[no-untyped-def]
    # The fixture server accepts 4 MiB; a 6 MiB snapshot gets a sentence, not a transport error.
    snap = pb.Snapshot(name="x" * (6 * MIB))
    code, details = code_of(stub(server.target).Evaluate, service_pb2.EvaluateRequest(snapshot=snap))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "over the 4 MiB limit" in details


def test_garbage_bytes_are_invalid_argument(server) -> None:  # type: ignore[no-untyped-def]
    channel = grpc.insecure_channel(server.target)
    raw = channel.unary_unary(f"/{SERVICE_NAME}/Evaluate", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as err:
        raw(b"\xff\xff\xff\xff", timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid volcano.repack.v1alpha1.EvaluateRequest" in err.value.details()


def test_plan_over_grpc_inline_and_session(server) -> None:  # type: ignore[no-untyped-def]
    from sidecar.snapshot.io import load_repack_spec

    s = stub(server.target)
    spec = load_repack_spec("sidecar/data/guide-ascend-dryrun.yaml")
    sid = _guide_session(s)
    by_session = s.Plan(service_pb2.PlanRequest(session_id=sid, spec=spec), timeout=30).status
    assert by_session.conditions[0].reason == "RepackRecommended"
    assert list(by_session.plan.freed_nodes) == ["ascend-node-01"]
    from sidecar.snapshot.io import load_snapshot

    inline = s.Plan(
        service_pb2.PlanRequest(snapshot=load_snapshot("sidecar/data/guide-ascend.json"), spec=spec), timeout=30
    ).status
    assert inline == by_session  # deterministic, whichever way the snapshot arrives
    spec.goals.add(resource="nvidia.com/gpu")
    code, details = code_of(s.Plan, service_pb2.PlanRequest(session_id=sid, spec=spec))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == "spec.goals: exactly one goal per run, got 2"
    code, details = code_of(s.Plan, service_pb2.PlanRequest(session_id=sid))
    assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT, "spec: missing")


def test_every_proto_method_is_served(server) -> None:  # type: ignore[no-untyped-def]
    """The hand-registered handlers cover the service exactly as the .proto declares it."""
    methods = {m.name for m in service_pb2.DESCRIPTOR.services_by_name["Repack"].methods}
    channel = grpc.insecure_channel(server.target)
    for name in methods:
        raw = channel.unary_unary(f"/{SERVICE_NAME}/{name}")
        try:
            raw(b"", timeout=5)
        except grpc.RpcError as err:
            assert err.code() != grpc.StatusCode.UNIMPLEMENTED, name


def test_load_is_shed_with_resource_exhausted(make_server) -> None:  # type: ignore[no-untyped-def]
    srv = make_server(max_concurrent_rpcs=1)
    big = service_pb2.OpenSessionRequest(snapshot=synth(SynthOptions(nodes=4000, fill=0.8, seed=2)))
    s = stub(srv.target)
    n = 6
    barrier = threading.Barrier(n)
    codes: list[grpc.StatusCode] = []

    def call() -> None:
        barrier.wait()
        try:
            s.OpenSession(big, timeout=60)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as err:
            codes.append(err.code())

    threads = [threading.Thread(target=call) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert grpc.StatusCode.OK in codes
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}


def test_deadline_is_honoured(server) -> None:  # type: ignore[no-untyped-def]
    big = service_pb2.EvaluateRequest(snapshot=synth(SynthOptions(nodes=3000, fill=0.8, seed=4)))
    with pytest.raises(grpc.RpcError) as err:
        stub(server.target).Evaluate(big, timeout=0.001)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_json_form_round_trips_through_the_server(server) -> None:  # type: ignore[no-untyped-def]
    """What a person writes for grpcurl is the message the server decodes."""
    text = json_format.MessageToJson(service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()))
    request = json_format.Parse(text, service_pb2.EvaluateRequest())
    reply = stub(server.target).Evaluate(request, timeout=30)
    assert reply.resources[0].min_occupied_nodes == 12


def _guide_session(s) -> str:  # type: ignore[no-untyped-def]
    from sidecar.snapshot.io import load_snapshot

    snap = load_snapshot("sidecar/data/guide-ascend.json")
    return str(s.OpenSession(service_pb2.OpenSessionRequest(snapshot=snap), timeout=30).session_id)


def test_filter_over_grpc_with_volcano_wording(server) -> None:  # type: ignore[no-untyped-def]
    s = stub(server.target)
    sid = _guide_session(s)
    task = pb.Task(namespace="repack-demo", name="probe", requests={"huawei.com/ascend-1980": 2000, "cpu": 1000})
    task.profile.node_selector["accelerator-pool"] = "ascend-npu"
    reply = s.Filter(service_pb2.FilterRequest(session_id=sid, task=task), timeout=30)
    assert list(reply.feasible_nodes) == ["ascend-node-01"]
    (group,) = reply.failures
    assert list(group.reasons) == ["Insufficient huawei.com/ascend-1980"]
    assert sorted(group.nodes) == ["ascend-node-02", "ascend-node-03"]
    assert reply.message == "2/3 nodes are unavailable: 2 Insufficient huawei.com/ascend-1980."
    # An existing task is checked off its own node; a node subset limits the answer.
    reply = s.Filter(
        service_pb2.FilterRequest(session_id=sid, task_uid="t-train-0", nodes=["ascend-node-02"]), timeout=30
    )
    assert list(reply.feasible_nodes) == ["ascend-node-02"] and not reply.failures


def test_prioritize_over_grpc_ranks_feasible_nodes(server) -> None:  # type: ignore[no-untyped-def]
    s = stub(server.target)
    sid = _guide_session(s)
    reply = s.Prioritize(service_pb2.PrioritizeRequest(session_id=sid, task_uid="t-train-0"), timeout=30)
    ranked = [x.node for x in reply.scores]
    # Kubernetes 1.34 BalancedAllocation (98 against 97) and LeastAllocated (96 against 93) put
    # node-01, emptiest once t-train-0 is off it, before binpack's fuller 02 and 03 (tied, by name)
    assert ranked == ["ascend-node-01", "ascend-node-02", "ascend-node-03"]
    for x in reply.scores:
        assert x.score == pytest.approx(sum(x.plugins.values()))
        assert {"binpack", "leastrequested", "balancedresource", "tainttoleration"} <= set(x.plugins)


FILTER_BAD = [
    ("no subject", lambda sid: service_pb2.FilterRequest(session_id=sid), "subject: set either task_uid or task"),
    (
        "unknown uid",
        lambda sid: service_pb2.FilterRequest(session_id=sid, task_uid="nope"),
        'task_uid: no task with uid "nope" in the snapshot',
    ),
    (
        "unknown node",
        lambda sid: service_pb2.FilterRequest(session_id=sid, task_uid="t-train-0", nodes=["n-9"]),
        'nodes[0]: unknown node "n-9"',
    ),
    (
        "bad toleration",
        lambda sid: service_pb2.FilterRequest(
            session_id=sid,
            task=pb.Task(
                name="x", namespace="d", profile=pb.TaskProfile(tolerations=[pb.Toleration(operator="Sometimes")])
            ),
        ),
        'task.profile.tolerations[0].operator: unknown operator "Sometimes" (Equal, Exists)',
    ),
    (
        "bad affinity operator",
        lambda sid: service_pb2.FilterRequest(
            session_id=sid,
            task=pb.Task(
                name="x",
                namespace="d",
                profile=pb.TaskProfile(
                    required_node_affinity=[
                        pb.NodeSelectorTerm(match_expressions=[pb.Requirement(key="k", operator="Near")])
                    ]
                ),
            ),
        ),
        'task.profile.required_node_affinity[0].match_expressions[0].operator: unknown operator "Near"',
    ),
]


@pytest.mark.parametrize("build,details", [b[1:] for b in FILTER_BAD], ids=[b[0] for b in FILTER_BAD])
def test_filter_bad_input_names_the_field(server, build, details) -> None:  # type: ignore[no-untyped-def]
    s = stub(server.target)
    code, got = code_of(s.Filter, build(_guide_session(s)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert got == details


def _rpc_count(method: str, code: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value("repack_rpc_requests_total", {"method": method, "code": code})
    return value or 0.0


def _wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_cancelled_and_late_calls_are_counted_with_their_real_codes(server) -> None:  # type: ignore[no-untyped-def]
    """A client that cancels, or whose deadline passes while its Plan waits in its worker thread, is
    CANCELLED / DEADLINE_EXCEEDED in the metrics (and the access log), never UNKNOWN. The late call
    waits behind a long Plan on the same session (plans on one session take turns), so its deadline
    passes inside the handler however slow the machine (a deadline that passed before the handler
    started would never reach it)."""
    from sidecar.api.v1alpha1 import spec_pb2

    s = stub(server.target)
    sid = s.OpenSession(
        service_pb2.OpenSessionRequest(snapshot=synth(SynthOptions(nodes=4800, fill=0.8, seed=3))), timeout=120
    ).session_id
    # a PodGroup budget plans twice (the cost order, then by value): a Plan on this session (4.8k
    # nodes, under the 4 MiB message limit) with 300 PodGroups takes about 1.1 s (2 Dec; with 50 it
    # became 0.3 s once the budget-aware order went to arrays), the queued one as long again, well
    # above the half second the calls below need
    spec = spec_pb2.RepackSpec(
        mode=spec_pb2.RepackSpec.DryRun,
        goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")],
        max_per_run=spec_pb2.MaxPerRun(pod_groups=300),
    )
    plan = f"/{SERVICE_NAME}/Plan"
    request = service_pb2.PlanRequest(session_id=sid, spec=spec)
    counts = {code: _rpc_count(plan, code) for code in ("CANCELLED", "DEADLINE_EXCEEDED", "UNKNOWN")}

    import time

    long = s.Plan.future(request, timeout=120)
    time.sleep(0.1)  # the long Plan (over half a second even on an idle machine) holds the session
    queued = s.Plan.future(request, timeout=120)  # waits its turn: still running when cancelled below
    time.sleep(0.05)
    with pytest.raises(grpc.RpcError) as err:
        s.Plan(request, timeout=0.35)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert _wait_for(lambda: _rpc_count(plan, "DEADLINE_EXCEEDED") == counts["DEADLINE_EXCEEDED"] + 1)

    assert queued.cancel()
    assert _wait_for(lambda: _rpc_count(plan, "CANCELLED") == counts["CANCELLED"] + 1)
    long.result()
    assert _rpc_count(plan, "UNKNOWN") == counts["UNKNOWN"]


def test_request_over_the_memory_budget_is_resource_exhausted_naming_the_flag(make_server) -> None:  # type: ignore[no-untyped-def]
    srv = make_server(memory_budget_mib=2)  # below even the smallest request's estimate (4 MiB)
    code, details = code_of(stub(srv.target).Evaluate, service_pb2.EvaluateRequest(snapshot=guide_twenty_nodes()))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details.startswith("request needs an estimated 4 MiB of working memory, over the whole budget of 2 MiB")
    assert details.endswith("raise --memory-budget-mib")
    from prometheus_client import REGISTRY

    assert REGISTRY.get_sample_value("repack_memory_budget_bytes") == 2 * MIB
    assert REGISTRY.get_sample_value("repack_memory_admitted_bytes") == 0
