"""Targeted runs (spec.for): the fewest moves that let one waiting gang start, as Volcano's allocate
would place it (sidecar.repack.targeted)."""

from __future__ import annotations

import pytest

from sidecar.api.repackrun import Reason, TargetVerdict
from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror.core import Mirror
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.repack.status import to_status
from sidecar.snapshot.decode import decode
from tests.builders import GPU, node, snapshot, task

PENDING = pb.Task.Pending


def _spec(target: str = "default/big", *, kind: str = "pod_group", **kw: object) -> spec_pb2.RepackSpec:
    kw.setdefault("goals", [spec_pb2.RepackGoal(resource=GPU)])
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, **kw)
    setattr(spec.target, kind, target)
    return spec


def _group(name: str, size: int, *, owner: str = "", ns: str = "default") -> pb.PodGroup:
    refs = [pb.OwnerReference(api_version="batch.volcano.sh/v1alpha1", kind="Job", name=owner, controller=True)]
    return pb.PodGroup(
        namespace=ns, name=name, min_member=size, phase="Inqueue", owner_references=refs if owner else []
    )


def _plan(snap: pb.Snapshot, spec: spec_pb2.RepackSpec) -> plan_pb2.RepackStatus:
    state = decode(snap)
    return to_status(state, Planner(Mirror(state), validate(spec)).plan(), validate(spec))


def _fragmented(n: int = 4, used: int = 2, *, cards: int = 8) -> tuple[list[pb.Node], list[pb.Task], list[pb.PodGroup]]:
    """``n`` nodes of ``cards`` cards, each holding ``used`` one-card pods of its own job."""
    nodes = [node(f"n{i}", cards) for i in range(n)]
    tasks, groups = [], []
    for i in range(n):
        groups.append(_group(f"small-{i}", 1))
        tasks += [task(f"small-{i}-{k}", f"n{i}", pod_group=f"small-{i}") for k in range(used)]
    return nodes, tasks, groups


def _big(size: int, cards: float, name: str = "big", **kw: object) -> list[pb.Task]:
    return [task(f"{name}-worker-{k}", cards=cards, status=PENDING, pod_group=name, **kw) for k in range(size)]


def test_a_whole_node_job_gets_exactly_one_node_freed_and_lands_there() -> None:
    """Four 8-card nodes with 2 cards used each: a job of one 8-card worker waits. The guide's run
    would free as many nodes as it can; the targeted run frees one and stops."""
    nodes, tasks, groups = _fragmented()
    snap = snapshot(nodes, [*tasks, *_big(1, 8)], [*groups, _group("big", 1)])
    status = _plan(snap, _spec())
    complete = status.conditions[0]
    assert complete.reason == Reason.REPACK_RECOMMENDED, complete.message
    target = status.plan.target
    assert target.verdict == TargetVerdict.FITS and target.pod_group == "default/big"
    assert status.plan.summary.freed_node_count == 1
    assert [(p.pod_name, p.node) for p in target.placements] == [("big-worker-0", status.plan.freed_nodes[0])]
    assert "lets default/big start (1 task on" in complete.message
    untargeted = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=GPU)])
    assert _plan(snap, untargeted).plan.summary.freed_node_count > 1  # what the guide's run would do
    not_needed = [c for c in status.plan.candidates if c.reason == "NotNeeded"]
    assert not_needed and all(not c.selected for c in not_needed)


def test_a_gang_spanning_nodes_gets_as_many_nodes_as_it_needs() -> None:
    nodes, tasks, groups = _fragmented(6)
    snap = snapshot(nodes, [*tasks, *_big(3, 8)], [*groups, _group("big", 3)])
    status = _plan(snap, _spec())
    assert status.plan.target.verdict == TargetVerdict.FITS
    assert status.plan.summary.freed_node_count == 3
    assert {p.node for p in status.plan.target.placements} == set(status.plan.freed_nodes)


def test_already_running_and_fits_now_move_nothing() -> None:
    nodes, tasks, groups = _fragmented()
    running = [task("big-worker-0", "n0", cards=4, pod_group="big")]
    status = _plan(snapshot(nodes, [*tasks, *running], [*groups, _group("big", 1)]), _spec())
    assert status.conditions[0].reason == Reason.TARGET_ALREADY_RUNNING
    assert status.plan.target.verdict == TargetVerdict.ALREADY_RUNNING and not status.plan.moves
    # 6 cards free on each node: a 4-card worker fits where it is
    status = _plan(snapshot(nodes, [*tasks, *_big(1, 4)], [*groups, _group("big", 1)]), _spec())
    assert status.conditions[0].reason == Reason.TARGET_FITS_NOW, status.conditions[0].message
    assert status.plan.target.verdict == TargetVerdict.FITS_NOW and not status.plan.moves
    assert len(status.plan.target.placements) == 1
    assert "fits without moving anything (1 task on" in status.conditions[0].message


def test_a_gang_that_cannot_fit_names_the_task_and_volcanos_reason() -> None:
    """Two 8-card workers on a cluster with 8 free cards in all: no plan can start the gang."""
    nodes, tasks, groups = _fragmented(2, 4)
    snap = snapshot(nodes, [*tasks, *_big(2, 8)], [*groups, _group("big", 2)])
    status = _plan(snap, _spec())
    complete = status.conditions[0]
    assert complete.reason == Reason.TARGET_DOES_NOT_FIT
    target = status.plan.target
    assert target.verdict == TargetVerdict.DOES_NOT_FIT and not target.placements
    assert target.stuck_pod_name == "big-worker-1"  # the first is placed on the emptied node
    assert "Insufficient nvidia.com/gpu" in target.message and target.message in complete.message
    assert not status.plan.moves  # nothing is recommended


def test_a_pending_podgroup_without_pods_waits_for_enqueue_not_room() -> None:
    nodes, tasks, groups = _fragmented()
    pending = pb.PodGroup(namespace="default", name="big", min_member=2, phase="Pending")
    status = _plan(snapshot(nodes, tasks, [*groups, pending]), _spec())
    assert status.conditions[0].reason == Reason.TARGET_DOES_NOT_FIT
    assert "no waiting pods (PodGroup phase Pending" in status.conditions[0].message


def test_the_targets_own_pods_never_move() -> None:
    """One worker of the gang runs on n0 (minMember 2, so the gang has not started); n0 is the
    cheapest node to empty but holds the target's pod: another node is freed instead."""
    nodes = [node(f"n{i}", 8) for i in range(3)]
    tasks = [
        task("big-worker-0", "n0", cards=1, pod_group="big"),
        task("big-worker-1", cards=8, status=PENDING, pod_group="big"),
        task("a-0", "n1", cards=3, pod_group="a"),
        task("b-0", "n2", cards=3, pod_group="b"),
    ]
    groups = [_group("big", 2), _group("a", 1), _group("b", 1)]
    status = _plan(snapshot(nodes, tasks, groups), _spec())
    assert status.plan.target.verdict == TargetVerdict.FITS
    moved = {p.name for m in status.plan.moves for p in m.pods}
    assert "big-worker-0" not in moved and status.plan.freed_nodes[0] != "n0"
    n0 = next(c for c in status.plan.candidates if c.node == "n0")
    assert n0.reason == "UnmovablePod" and "the run's target default/big, which never moves" in n0.message


def test_only_nodes_the_gang_could_use_are_emptied() -> None:
    """The gang selects pool=b: pool a's nodes are never emptied for it, however cheap."""
    nodes = [
        node("a0", 8, labels={"pool": "a"}),
        node("b0", 8, labels={"pool": "b"}),
        node("b1", 8, labels={"pool": "b"}),
    ]
    tasks = [
        task("x-0", "a0", cards=1, pod_group="x"),
        task("y-0", "b0", cards=4, pod_group="y"),
        task("z-0", "b1", cards=4, pod_group="z"),
        *_big(1, 8, profile=pb.TaskProfile(scheduler_name="volcano", node_selector={"pool": "b"})),
    ]
    groups = [_group("x", 1), _group("y", 1), _group("z", 1), _group("big", 1)]
    status = _plan(snapshot(nodes, tasks, groups), _spec())
    assert status.plan.target.verdict == TargetVerdict.FITS
    assert status.plan.freed_nodes[0] in ("b0", "b1")
    a0 = next(c for c in status.plan.candidates if c.node == "a0")
    assert a0.reason == "TargetCannotUse" and not a0.selected


def test_an_emptied_node_the_gang_cannot_land_on_is_dropped_from_the_plan() -> None:
    """Node-only checks cannot see a pod-level constraint: the gang refuses zone z1 (anti-affinity
    with a database there), whose node is the cheapest to empty. The first run empties it in
    vain, then empties a node in z2 where the gang lands; the plan kept moves only z2's pods."""
    zone = "topology.kubernetes.io/zone"
    nodes = [
        node("z1-a", 8, labels={zone: "z1"}),
        node("z1-db", 8, labels={zone: "z1"}),
        node("z2-a", 8, labels={zone: "z2"}),
        node("z2-b", 8, labels={zone: "z2"}),
    ]
    anti = pb.PodAffinityTerm(label_selector=pb.LabelSelector(match_labels={"app": "db"}), topology_key=zone)
    big = pb.TaskProfile(scheduler_name="volcano", pod_anti_affinity=[anti])
    db = pb.TaskProfile(scheduler_name="default-scheduler", labels={"app": "db"})
    tasks = [
        task("cheap-0", "z1-a", cards=1, pod_group="cheap"),
        task("db-0", "z1-db", cards=1, profile=db),
        task("busy-0", "z2-a", cards=2, pod_group="busy"),
        task("busy-1", "z2-a", cards=2, pod_group="busy"),
        task("other-0", "z2-b", cards=4, scheduler="default-scheduler"),
        *_big(1, 8, profile=big),
    ]
    groups = [_group("cheap", 1), _group("busy", 2), _group("big", 1)]
    status = _plan(snapshot(nodes, tasks, groups), _spec())
    assert status.plan.target.verdict == TargetVerdict.FITS, status.conditions[0].message
    assert list(status.plan.freed_nodes) == ["z2-a"]
    assert [(p.pod_name, p.node) for p in status.plan.target.placements] == [("big-worker-0", "z2-a")]
    assert {p.name for m in status.plan.moves for p in m.pods} == {"busy-0", "busy-1"}


def test_budgets_bound_a_targeted_run() -> None:
    nodes, tasks, groups = _fragmented(6)
    snap = snapshot(nodes, [*tasks, *_big(3, 8)], [*groups, _group("big", 3)])
    status = _plan(snap, _spec(max_per_run=spec_pb2.MaxPerRun(pod_groups=2)))
    assert status.conditions[0].reason == Reason.TARGET_DOES_NOT_FIT
    assert status.plan.summary.freed_node_count == 0 and not status.plan.moves
    assert "after emptying 2 nodes, pod big-worker-2 still does not fit" in status.conditions[0].message


def test_min_frag_improvement_still_gates_the_recommendation() -> None:
    nodes, tasks, groups = _fragmented()
    snap = snapshot(nodes, [*tasks, *_big(1, 8)], [*groups, _group("big", 1)])
    spec = _spec(goals=[spec_pb2.RepackGoal(resource=GPU, min_frag_improvement_percent=90)])
    status = _plan(snap, spec)
    assert status.conditions[0].reason == Reason.INSUFFICIENT_IMPROVEMENT
    assert "would let default/big start" in status.conditions[0].message
    assert status.plan.target.verdict == TargetVerdict.FITS and not status.plan.moves


def test_a_volcano_job_resolves_to_its_podgroup() -> None:
    nodes, tasks, groups = _fragmented()
    snap = snapshot(nodes, [*tasks, *_big(1, 8, name="train-abc")], [*groups, _group("train-abc", 1, owner="train")])
    status = _plan(snap, _spec("default/train", kind="job"))
    assert status.plan.target.pod_group == "default/train-abc"
    assert status.plan.target.verdict == TargetVerdict.FITS


@pytest.mark.parametrize(
    ("target", "kind", "field", "message"),
    [
        ("default/nope", "pod_group", "spec.for.podGroup", "PodGroup default/nope not found"),
        ("default/nope", "job", "spec.for.job", "no PodGroup of Job default/nope"),
        ("default/other", "pod_group", "spec.for.podGroup", "scheduled by default-scheduler, not by Volcano"),
        ("default/idle", "pod_group", "spec.for.podGroup", "waits for no nvidia.com/gpu"),
    ],
)
def test_a_target_it_cannot_plan_for_is_refused_naming_the_field(
    target: str, kind: str, field: str, message: str
) -> None:
    nodes, tasks, groups = _fragmented()
    other = task("other-0", cards=8, status=PENDING, pod_group="other", scheduler="default-scheduler")
    idle = task("idle-0", cards=0, status=PENDING, pod_group="idle")
    snap = snapshot(nodes, [*tasks, other, idle], [*groups, _group("other", 1), _group("idle", 1)])
    with pytest.raises(InputError) as err:
        _plan(snap, _spec(target, kind=kind))
    assert err.value.field == field and message in err.value.problem


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (spec_pb2.RepackTarget(), "exactly one of podGroup, job, modelServing (got none)"),
        (
            spec_pb2.RepackTarget(pod_group="a/b", job="a/c"),
            "exactly one of podGroup, job, modelServing (got podGroup, job)",
        ),
        (spec_pb2.RepackTarget(pod_group="nonamespace"), "is named namespace/name"),
        (spec_pb2.RepackTarget(job="a/B_C"), 'name "B_C" is not a valid Kubernetes name'),
    ],
)
def test_a_malformed_for_is_refused_before_planning(target: spec_pb2.RepackTarget, message: str) -> None:
    spec = spec_pb2.RepackSpec(
        mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=GPU)], target=target
    )
    with pytest.raises(InputError) as err:
        validate(spec)
    assert err.value.field.startswith("spec.for") and message in err.value.problem


def _serving_group(name: str, owner: str) -> pb.PodGroup:
    ref = pb.OwnerReference(api_version="workload.serving.volcano.sh/v1alpha1", kind="ModelServing", name=owner,
                            controller=True)  # fmt: skip
    return pb.PodGroup(namespace="default", name=name, min_member=1, phase="Inqueue", owner_references=[ref])


def test_a_modelserving_resolves_to_its_one_waiting_serving_group() -> None:
    """A ModelServing owns a PodGroup per ServingGroup: the target is the one that waits; with two
    waiting, the run is refused and told to name one."""
    nodes, tasks, groups = _fragmented()
    running = task("llm-0-worker-0", "n0", cards=1, pod_group="llm-0")
    one = [running, *_big(1, 8, name="llm-1")]
    snap = snapshot(nodes, [*tasks, *one], [*groups, _serving_group("llm-0", "llm"), _serving_group("llm-1", "llm")])
    status = _plan(snap, _spec("default/llm", kind="model_serving"))
    assert status.plan.target.pod_group == "default/llm-1" and status.plan.target.verdict == TargetVerdict.FITS
    two = [*one, *_big(1, 8, name="llm-2")]
    snap = snapshot(nodes, [*tasks, *two], [*groups, *(_serving_group(f"llm-{i}", "llm") for i in range(3))])
    with pytest.raises(InputError) as err:
        _plan(snap, _spec("default/llm", kind="model_serving"))
    assert err.value.field == "spec.for.modelServing"
    assert "has 2 waiting PodGroups (default/llm-1, default/llm-2): name one with for.podGroup" in err.value.problem
