"""Volcano's allocate cycle for one job (sidecar.mirror.allocate), case by case against volcano
v1.14.1 pkg/scheduler/actions/allocate/allocate.go and pkg/scheduler/api/job_info.go."""

from __future__ import annotations

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.allocate import allocate_job, task_order
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from tests.builders import node, snapshot, task

PENDING = pb.Task.Pending


def _setup(nodes: list[pb.Node], tasks: list[pb.Task], groups: list[pb.PodGroup]) -> tuple[Mirror, Simulation]:
    state = decode(snapshot(nodes, tasks, groups))
    return Mirror(state), Simulation(state)


def _names(mirror: Mirror, placed: tuple[tuple[int, int], ...]) -> list[tuple[str, str]]:
    s = mirror.state
    return [(s.task_name[t], s.node_names[n]) for t, n in placed]


def test_a_gang_that_fits_is_placed_whole_and_stays_on_the_simulation() -> None:
    mirror, sim = _setup(
        [node("a", 8), node("b", 8)],
        [task("w-0", cards=4, status=PENDING, pod_group="w"), task("w-1", cards=4, status=PENDING, pod_group="w")],
        [pb.PodGroup(namespace="default", name="w", min_member=2)],
    )
    done = allocate_job(mirror, sim, 0, [0, 1])
    assert done.ready and done.fits and done.stuck == -1
    assert len(done.placed) == 2 and not done.pipelined
    assert all(int(sim.status[t]) == ts.ALLOCATED for t, _ in done.placed)


def test_a_gang_short_of_min_member_is_undone_and_names_the_first_task_that_did_not_fit() -> None:
    mirror, sim = _setup(
        [node("a", 4), node("b", 4)],
        [
            task("w-0", cards=4, status=PENDING, pod_group="w"),
            task("w-1", cards=4, status=PENDING, pod_group="w"),
            task("w-2", cards=4, status=PENDING, pod_group="w"),
        ],
        [pb.PodGroup(namespace="default", name="w", min_member=3)],
    )
    before = sim.future_idle().copy()
    done = allocate_job(mirror, sim, 0, [0, 1, 2])
    assert not done.fits and done.placed == ()
    assert mirror.state.task_name[done.stuck] == "w-2"
    assert done.why == "2/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."
    np.testing.assert_array_equal(sim.future_idle(), before)  # Statement.Discard
    assert all(int(sim.status[t]) == ts.PENDING for t in range(3))


def test_a_failed_task_stops_the_job_when_min_available_is_every_task() -> None:
    """NeedContinueAllocating is false when MinAvailable == len(tasks): the later, smaller task is
    not tried (the stuck one is the big one, and nothing is placed)."""
    mirror, sim = _setup(
        [node("a", 4)],
        [task("w-0", cards=8, status=PENDING, pod_group="w"), task("w-1", cards=1, status=PENDING, pod_group="w")],
        [pb.PodGroup(namespace="default", name="w", min_member=2)],
    )
    done = allocate_job(mirror, sim, 0, [0, 1])
    assert not done.fits and mirror.state.task_name[done.stuck] == "w-0"


def test_with_slack_in_min_available_the_job_goes_on_past_a_failed_task() -> None:
    """MinAvailable 2 of 3 (no role minimums): a task that fits nowhere does not stop the others."""
    mirror, sim = _setup(
        [node("a", 4)],
        [
            task("w-0", cards=8, status=PENDING, pod_group="w", priority=10),
            task("w-1", cards=2, status=PENDING, pod_group="w"),
            task("w-2", cards=2, status=PENDING, pod_group="w"),
        ],
        [pb.PodGroup(namespace="default", name="w", min_member=2)],
    )
    done = allocate_job(mirror, sim, 0, [0, 1, 2])
    assert done.ready and _names(mirror, done.placed) == [("w-1", "a"), ("w-2", "a")]
    assert mirror.state.task_name[done.stuck] == "w-0"  # tried first: the highest priority


def test_a_role_minimum_must_be_met_for_the_job_to_be_ready() -> None:
    """CheckTaskReady: with minTaskMember covering MinAvailable, each role needs its minimum."""
    mirror, sim = _setup(
        [node("a", 4)],
        [
            task("w-ps", cards=8, status=PENDING, pod_group="w", role="ps"),
            task("w-w0", cards=1, status=PENDING, pod_group="w", role="worker"),
            task("w-w1", cards=1, status=PENDING, pod_group="w", role="worker"),
        ],
        [pb.PodGroup(namespace="default", name="w", min_member=2, min_task_member={"ps": 1, "worker": 1})],
    )
    done = allocate_job(mirror, sim, 0, [0, 1, 2])
    assert not done.fits  # two workers placed, but the ps role has none


def test_the_job_stops_as_soon_as_it_is_ready() -> None:
    mirror, sim = _setup(
        [node("a", 8)],
        [task(f"w-{i}", cards=1, status=PENDING, pod_group="w") for i in range(4)],
        [pb.PodGroup(namespace="default", name="w", min_member=2)],
    )
    done = allocate_job(mirror, sim, 0, [0, 1, 2, 3])
    assert done.ready and len(done.placed) == 2  # the rest wait for the next turn of the job


def test_idle_gradient_before_future_idle() -> None:
    """prioritizeNodes scores the nodes that fit Idle first; a node that fits only FutureIdle
    (releasing pods) is chosen only when none does, and the task is then Pipelined there."""
    nodes = [node("a", 8), node("b", 8)]
    running = [task("r-0", "a", cards=4), task("rel-0", "a", cards=4, status=pb.Task.Releasing)]
    w = [task("w-0", cards=4, status=PENDING, pod_group="w")]
    mirror, sim = _setup(nodes, running + w, [pb.PodGroup(namespace="default", name="w", min_member=1)])
    subj = mirror.subject_for_task(2)
    assert mirror.best_node(subj, sim) == (mirror.state.node("b"), True)  # binpack would like "a"
    # b full: only a's FutureIdle is left, so the task is pipelined there and the gang is pipelined
    mirror, sim = _setup(
        nodes,
        [*running, task("r-b", "b", cards=8), *w],
        [w_group := pb.PodGroup(namespace="default", name="w", min_member=1)],
    )
    del w_group
    done = allocate_job(mirror, sim, 0, [3])
    assert not done.ready and done.pipelined_ready and done.fits
    assert _names(mirror, done.placed) == [("w-0", "a")] and done.pipelined == frozenset({3})
    assert int(sim.status[3]) == ts.PIPELINED


def test_the_nominated_node_is_tried_first() -> None:
    """A pending pod's nominatedNodeName (a Pipelined task of the snapshot) wins over node order
    (two empty nodes: order alone takes "a" by name); when it no longer fits there, every node
    is scanned."""
    nodes = [node("a", 8), node("b", 8)]
    tasks = [task("w-0", "b", cards=2, status=pb.Task.Pipelined, pod_group="w")]
    mirror, sim = _setup(nodes, tasks, [pb.PodGroup(namespace="default", name="w", min_member=1)])
    done = allocate_job(mirror, sim, 0, [0])
    assert done.ready and _names(mirror, done.placed) == [("w-0", "b")]
    mirror, sim = _setup(
        nodes, [task("y", "b", cards=8), *tasks], [pb.PodGroup(namespace="default", name="w", min_member=1)]
    )
    done = allocate_job(mirror, sim, 0, [1])
    assert done.ready and _names(mirror, done.placed) == [("w-0", "a")]


def test_task_order_is_priority_then_the_pod_index_then_uid() -> None:
    """CompareTask: "job-worker-10" after "job-worker-9" (numbers, not strings); names of fewer than
    three parts or without a numeric suffix fall back to UID."""
    names = ["job-worker-10", "job-worker-9", "job-ps-0", "solo", "x-y-z", "job-worker-2"]
    tasks = [task(n, cards=1, status=PENDING, priority=5 if n == "job-worker-10" else 1) for n in names]
    mirror, _ = _setup([node("a")], tasks, [])
    order = [mirror.state.task_name[t] for t in task_order(mirror.state, range(len(names)))]
    assert order[0] == "job-worker-10"  # priority first
    assert order.index("job-ps-0") < order.index("job-worker-2") < order.index("job-worker-9")
    # "solo" and "x-y-z" have no index: against each other by UID ("uid-default-solo" < "uid-default-x-y-z")
    assert order.index("solo") < order.index("x-y-z")


def test_a_best_effort_pending_task_counts_as_ready() -> None:
    """IsReady adds pending best-effort tasks (no request): a gang of one GPU task and one
    best-effort task with MinAvailable 2 starts once the GPU task is placed."""
    mirror, sim = _setup(
        [node("a", 1)],
        [
            task("w-0", cards=1, status=PENDING, pod_group="w"),
            pb.Task(uid="be", namespace="default", name="w-be", status=PENDING, pod_group="w", requests={},
                    profile=pb.TaskProfile(scheduler_name="volcano")),
        ],
        [pb.PodGroup(namespace="default", name="w", min_member=2)],
    )  # fmt: skip
    done = allocate_job(mirror, sim, 0, [0])
    assert done.ready
