"""A goal resource no node provides is bad input for Plan (there is nothing to free): the snapshot
decides, so the rule runs once it is decoded (sidecar.repack.spec.require_provided_goal), and every
front door answers it the same way. Evaluate answers it instead (issue 25 item 4): a dashboard
polling several pools must not fail because one is scaled to zero."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.cli import main
from sidecar.client import MIB, client_options
from sidecar.errors import InputError
from sidecar.service.core import RepackService
from sidecar.service.deadline import Deadline
from sidecar.snapshot.decode import decode
from sidecar.snapshot.io import load_snapshot
from tests.plan_cases import GPU, Cluster, plan_status, spec

GUIDE = "sidecar/data/guide-ascend.json"  # provides huawei.com/ascend-1980 only
WHY = f'no node provides scalar resource "{GPU}"'


def test_plan_rejects_a_goal_no_node_provides() -> None:
    with pytest.raises(InputError) as err:
        plan_status(decode(load_snapshot(GUIDE)), spec(GPU))
    assert (err.value.field, str(err.value)) == ("spec.goals[0].resource", f"spec.goals[0].resource: {WHY}")


def test_plan_rejects_a_goal_only_pods_request() -> None:
    """Pods request the resource but no node's allocatable has it: still nothing provides it."""
    c = Cluster().node("a", cards=0).node("b", cards=0).group("j", 1).pod("p", "a", 1, group="j")
    with pytest.raises(InputError) as err:
        plan_status(c.state(), spec(GPU))
    assert err.value.field == "spec.goals[0].resource"


def test_plan_refuses_what_evaluate_answers_with_zeros_and_a_message() -> None:
    service = RepackService()
    snap = load_snapshot(GUIDE)
    with pytest.raises(InputError) as planned:
        service.plan(service_pb2.PlanRequest(snapshot=snap, spec=spec(GPU)), Deadline.none())
    assert planned.value.field == "spec.goals[0].resource"
    request = service_pb2.EvaluateRequest(snapshot=snap, resources=[GPU, "huawei.com/ascend-1980"])
    gpu, npu = service.evaluate(request, Deadline.none()).resources
    assert (gpu.resource, gpu.providing_nodes, gpu.occupied_nodes, gpu.fragmentation_percent) == (GPU, 0, 0, 0.0)
    assert gpu.message == f'no node provides "{GPU}": nothing to fragment'
    assert npu.providing_nodes == 3 and npu.message == ""  # the other pool answered as usual


def test_evaluate_cli_shows_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--snapshot", GUIDE, "--resource", GPU]) == 0
    out = capsys.readouterr().out
    assert "MESSAGE" in out.splitlines()[0] and f'no node provides "{GPU}"' in out


def test_evaluate_refuses_a_resource_that_is_no_goal() -> None:
    with pytest.raises(InputError) as err:
        RepackService().evaluate(
            service_pb2.EvaluateRequest(snapshot=load_snapshot(GUIDE), resources=["cpu"]), Deadline.none()
        )
    assert err.value.field == "resources[0]" and '"cpu" is not an extended resource' in str(err.value)


def test_plan_cli_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(f"kind: RepackRun\nspec:\n  mode: DryRun\n  goals: [{{resource: {GPU}}}]\n")
    assert main(["plan", "--snapshot", GUIDE, "--run", str(run)]) == 2
    assert f"spec.goals[0].resource: {WHY}" in capsys.readouterr().err


def test_plan_grpc_is_invalid_argument(server) -> None:  # type: ignore[no-untyped-def]
    stub = service_pb2_grpc.RepackStub(grpc.insecure_channel(server.target, options=client_options(64 * MIB)))
    with pytest.raises(grpc.RpcError) as err:
        stub.Plan(service_pb2.PlanRequest(snapshot=load_snapshot(GUIDE), spec=spec(GPU)), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == f"spec.goals[0].resource: {WHY}"
