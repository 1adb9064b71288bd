"""Why waiting PodGroups wait (sidecar.repack.pending): a RepackPolicy's whenPending check, each
verdict on a small cluster, the bounds never ruling out a gang a plan could start, and the
CheckPending RPC over loopback gRPC."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.api.repackrun import Waits
from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.client import RepackClient
from sidecar.mirror.core import Mirror
from sidecar.repack import pending
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.snapshot.decode import decode
from tests.builders import GPU, node, snapshot, task

PENDING = pb.Task.Pending
RUN = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=GPU)])


def _group(name: str, size: int, phase: str = "Inqueue") -> pb.PodGroup:
    return pb.PodGroup(namespace="default", name=name, min_member=size, phase=phase)


def _cluster() -> tuple[list[pb.Node], list[pb.Task], list[pb.PodGroup]]:
    """Four 8-card nodes, 2 cards used on each by a movable one-pod job (24 free in all)."""
    nodes = [node(f"n{i}", 8) for i in range(4)]
    tasks = [task(f"small-{i}-0", f"n{i}", cards=2, pod_group=f"small-{i}") for i in range(4)]
    return nodes, tasks, [_group(f"small-{i}", 1, "Running") for i in range(4)]


def _check(tasks: list[pb.Task], groups: list[pb.PodGroup], keys: list[str], **kw: int) -> dict[str, pending.Waiting]:
    nodes, base_tasks, base_groups = _cluster()
    state = decode(snapshot(nodes, base_tasks + tasks, base_groups + groups))
    found = pending.check(Mirror(state), validate(RUN), keys, **kw)
    assert [w.pod_group for w in found] == keys
    return {w.pod_group.split("/")[1]: w for w in found}


def _waiting(name: str, size: int, cards: float, **kw: object) -> list[pb.Task]:
    return [task(f"{name}-worker-{k}", cards=cards, status=PENDING, pod_group=name, **kw) for k in range(size)]


def test_each_verdict() -> None:
    tasks = [
        *_waiting("frag", 1, 8),  # no node has 8 free; emptying one does it
        *_waiting("fits", 2, 4),  # 6 free on each node
        *_waiting("huge", 4, 8),  # 32 cards: the cluster has 23 free
        *_waiting("wide", 1, 16),  # no node has 16 cards at all
        task("run-0", "n0", cards=1, pod_group="run"),
        *_waiting("other", 1, 8, scheduler="default-scheduler"),
    ]
    groups = [_group("frag", 1), _group("fits", 2), _group("huge", 4), _group("wide", 1), _group("run", 1),
              _group("queued", 2, "Pending"), _group("other", 1)]  # fmt: skip
    keys = [f"default/{g.name}" for g in groups] + ["default/gone"]
    got = _check(tasks, groups, keys)
    assert {k: w.verdict for k, w in got.items()} == {
        "frag": Waits.FRAGMENTATION,
        "fits": Waits.FITS_NOW,
        "huge": Waits.CAPACITY,
        "wide": Waits.CAPACITY,
        "run": Waits.RUNNING,
        "queued": Waits.ENQUEUE,
        "other": Waits.NOT_VOLCANO,
        "gone": Waits.NOT_FOUND,
    }
    assert got["frag"].message.startswith("freeing 1 node lets default/frag start")
    assert got["huge"].message == "needs 32 nvidia.com/gpu for 4 tasks, the cluster has 23 free"  # run-0 holds one
    assert "fit even with every movable pod moved away" in got["wide"].message
    assert "no waiting pods (phase Pending)" in got["queued"].message


def test_plans_stop_at_the_first_success_or_at_max_plans() -> None:
    tasks = [*_waiting("a", 1, 8), *_waiting("b", 1, 8), *_waiting("c", 1, 8)]
    groups = [_group("a", 1), _group("b", 1), _group("c", 1)]
    keys = ["default/a", "default/b", "default/c"]
    got = _check(tasks, groups, keys)
    assert [got[k].verdict for k in "abc"] == [Waits.FRAGMENTATION, Waits.UNCHECKED, Waits.UNCHECKED]
    assert got["b"].message == "not planned in this check (a plan was already found in this check)"


def test_no_plan_within_budgets_is_not_fragmentation() -> None:
    """The bounds allow the gang, but maxPerRun.podGroups 0 forbids every move: NoPlan, with the
    planner's reason; the next candidate is planned too (max_plans 2)."""
    nodes, base_tasks, base_groups = _cluster()
    tasks = [*_waiting("a", 1, 8), *_waiting("b", 1, 8)]
    state = decode(snapshot(nodes, base_tasks + tasks, [*base_groups, _group("a", 1), _group("b", 1)]))
    run = spec_pb2.RepackSpec()
    run.CopyFrom(RUN)
    run.max_per_run.pod_groups = 0
    found = pending.check(Mirror(state), validate(run), ["default/a", "default/b"], max_plans=2)
    assert [w.verdict for w in found] == [Waits.NO_PLAN, Waits.NO_PLAN]
    assert "no plan within scope and budgets lets default/a start" in found[0].message


@settings(max_examples=40, deadline=None)
@given(
    used=st.lists(st.integers(0, 8), min_size=3, max_size=6),
    size=st.integers(1, 3),
    cards=st.sampled_from([1, 2, 4, 8]),
)
def test_a_capacity_verdict_is_never_given_to_a_gang_a_plan_starts(used: list[int], size: int, cards: int) -> None:
    """The bounds only prune: whenever they say Capacity, the targeted planner agrees nothing helps."""
    nodes = [node(f"n{i}", 8) for i in range(len(used))]
    tasks = [task(f"s{i}-{k}", f"n{i}", cards=1, pod_group=f"s{i}") for i, u in enumerate(used) for k in range(u)]
    groups = [_group(f"s{i}", max(u, 1), "Running") for i, u in enumerate(used)]
    tasks += _waiting("w", size, cards)
    state = decode(snapshot(nodes, tasks, [*groups, _group("w", size)]))
    (verdict,) = pending.check(Mirror(state), validate(RUN), ["default/w"])
    if verdict.verdict == Waits.CAPACITY:
        targeted = spec_pb2.RepackSpec()
        targeted.CopyFrom(RUN)
        targeted.target.pod_group = "default/w"
        result = Planner(Mirror(state), validate(targeted)).plan()
        assert result.target is not None and result.target.verdict == "DoesNotFit", (used, size, cards)


@pytest.fixture(scope="module")
def loopback() -> Iterator[BackgroundServer]:
    server = BackgroundServer(ServerConfig(port=0, metrics_port=-1))
    yield server
    server.stop()


def test_check_pending_over_grpc(loopback: BackgroundServer) -> None:
    nodes, base_tasks, base_groups = _cluster()
    snap = snapshot(nodes, base_tasks + _waiting("frag", 1, 8), [*base_groups, _group("frag", 1)])
    with RepackClient(loopback.target, timeout=30) as client:
        request = service_pb2.CheckPendingRequest(snapshot=snap, spec=RUN, pod_groups=["default/frag"])
        (verdict,) = client.check_pending(request).verdicts
        assert (verdict.pod_group, verdict.verdict) == ("default/frag", "Fragmentation")
        for bad, field in (
            (service_pb2.CheckPendingRequest(snapshot=snap, pod_groups=["default/frag"]), "spec"),
            (service_pb2.CheckPendingRequest(snapshot=snap, spec=RUN, pod_groups=["frag"]), "pod_groups[0]"),
            (service_pb2.CheckPendingRequest(snapshot=snap, spec=RUN, max_plans=-1), "max_plans"),
        ):
            with pytest.raises(grpc.RpcError) as err:
                client.check_pending(bad)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details().startswith(f"{field}:"), err.value.details()


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.integers(0, 8), min_size=2, max_size=6),
    size=st.integers(1, 6),
    cards=st.sampled_from([1, 2, 3, 4, 8]),
    cpu=st.sampled_from([1000, 30_000]),
)
def test_fits_now_from_the_bound_is_allocates_answer(used: list[int], size: int, cards: int, cpu: int) -> None:
    """For a gang of identical plain tasks the check answers FitsNow from the copies bound without
    running allocate: it must be exactly when allocate places the gang (cards and cpu both bind)."""
    from sidecar.mirror.allocate import allocate_job
    from sidecar.mirror.simulation import Simulation

    nodes = [node(f"n{i}", 8) for i in range(len(used))]
    tasks = [
        task(f"s{i}-{k}", f"n{i}", cards=1, cpu=cpu, pod_group=f"s{i}") for i, u in enumerate(used) for k in range(u)
    ]
    groups = [_group(f"s{i}", max(u, 1), "Running") for i, u in enumerate(used)]
    tasks += _waiting("w", size, cards, cpu=cpu)
    state = decode(snapshot(nodes, tasks, [*groups, _group("w", size)]))
    mirror = Mirror(state)
    (verdict,) = pending.check(mirror, validate(RUN), ["default/w"])
    waiting = [t for t in range(state.n_tasks) if state.task_name[t].startswith("w-worker-")]
    group = next(g for g in range(len(state.pod_groups)) if state.pod_groups[g].name == "w")
    assert (verdict.verdict == Waits.FITS_NOW) == allocate_job(mirror, Simulation(state), group, waiting).fits
