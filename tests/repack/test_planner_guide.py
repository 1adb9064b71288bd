"""Every worked example of the user guide, with the guide's numbers."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sidecar.repack.cost import GangState, GroupMoves, marginal
from sidecar.repack.spec import DEFAULT_WEIGHTS
from sidecar.snapshot.decode import decode
from sidecar.snapshot.holding import holding_tasks
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from tests.plan_cases import GPU, Cluster, explanation, moves, normalised_scores, plan, plan_status, reason


def test_dryrun_example_33_to_0_one_node_two_cards() -> None:
    status = plan_status(
        decode(load_snapshot("sidecar/data/guide-ascend.json")),
        load_repack_spec("sidecar/data/guide-ascend-dryrun.yaml"),
    )
    s = status.plan.summary
    assert status.phase == "Succeeded"
    assert reason(status) == "RepackRecommended"
    assert (round(s.frag_before_percent), s.frag_after_percent) == (33, 0)
    assert (s.freed_node_count, s.moved_card_count) == (1, 2)
    assert (s.resolved_scope.pod_group_count, s.resolved_scope.node_count) == (1, 3)
    (move,) = status.plan.moves
    assert (move.namespace, move.owner.api_version, move.owner.kind, move.owner.name, move.cards) == (
        "repack-demo",
        "batch.volcano.sh/v1alpha1",
        "Job",
        "ascend-batch-training",
        2,
    )
    assert move.pod_group_name == "ascend-batch-training-2f6c840d-8b14-4e45-a4cf-b43c249acbfd"
    assert moves(status) == [
        ("ascend-batch-training-worker-0", "ascend-node-01", "ascend-node-02"),
        ("ascend-batch-training-worker-1", "ascend-node-01", "ascend-node-03"),
    ]
    assert [p.cards for p in move.pods] == [1, 1]
    assert list(status.plan.freed_nodes) == ["ascend-node-01"]


def twenty_npu_nodes() -> Cluster:
    """20 nodes of 8 NPUs, 15 in use, 96 NPUs allocated (minimum 12): the guide's 15% example."""
    c = Cluster()
    for i in range(20):
        c.node(f"npu-{i:02d}", pool="npu")
    layout = [[8]] * 6 + [[4, 2]] * 6 + [[2, 2]] * 3
    for i, sizes in enumerate(layout):
        c.group(f"job-{i:02d}", min_member=1, eligible="true")
        for j, size in enumerate(sizes):
            c.pod(f"job-{i:02d}-w{j}", f"npu-{i:02d}", size, group=f"job-{i:02d}")
    return c


def test_fifteen_percent_to_five_releasing_two_nodes() -> None:
    status = plan(twenty_npu_nodes(), goal={"minFragImprovementPercent": 10}, maxPerRun={"resources": {GPU: 8}})
    s = status.plan.summary
    assert reason(status) == "RepackRecommended"
    assert (s.frag_before_percent, s.frag_after_percent) == (15, 5)  # (15-12)/20 -> (13-12)/20
    assert (s.before.occupied_nodes, s.after.occupied_nodes, s.after.min_occupied_nodes) == (15, 13, 12)
    assert s.freed_node_count == 2 and s.moved_card_count == 8


def test_threshold_not_reached_is_insufficient_improvement() -> None:
    status = plan(twenty_npu_nodes(), goal={"minFragImprovementPercent": 11}, maxPerRun={"resources": {GPU: 8}})
    assert reason(status) == "InsufficientImprovement"
    assert "10.0 points, below minFragImprovementPercent 11" in status.conditions[0].message
    assert not status.plan.moves and status.plan.summary.frag_after_percent == 15
    assert explanation(status, "npu-12")[0] in ("BelowThreshold", "Budget")


def test_gang_eight_workers_min_available_six() -> None:
    c = Cluster().node("a").group("train", min_member=6)
    for i in range(8):
        c.pod(f"w{i}", "a", 1, group="train")
    state = c.state()
    gang = GangState.build(state, state.resource(GPU), holding_tasks(state))
    assert gang.safe(0) == 2
    one = marginal(gang, [GroupMoves(0, 1, 1000.0, Counter())])
    two = marginal(gang, [GroupMoves(0, 2, 2000.0, Counter())])
    three = marginal(gang, [GroupMoves(0, 3, 3000.0, Counter())])
    assert (one[1], two[1], three[1]) == (0, 0, 1)  # the third worker takes the gang below MinAvailable
    assert (one[2], two[2]) == (1000.0, 2000.0)  # affected = moved cards while still available
    assert three[2] == 8000.0  # then the whole PodGroup's NPUs count
    gang.apply(0, 2, 2000.0, Counter())
    assert marginal(gang, [GroupMoves(0, 1, 1000.0, Counter())])[1:3].tolist() == [1, 8000.0 - 2000.0]


def test_min_task_member_roles_count_too() -> None:
    c = Cluster().node("a").group("svc", min_member=1)
    c.snap.pod_groups[0].min_task_member["entry"] = 1
    c.pod("entry-0", "a", 1, group="svc").pod("worker-0", "a", 1, group="svc")
    c.snap.tasks[0].role = "entry"
    c.snap.tasks[1].role = "worker"
    state = c.state()
    gang = GangState.build(state, state.resource(GPU), holding_tasks(state))
    assert gang.safe(0) == 1
    assert not gang.below(0, 1, Counter({"worker": 1}))
    assert gang.below(0, 1, Counter({"entry": 1}))  # the only entry pod: its role falls below


def abc_cluster() -> Cluster:
    """Three nodes that each free one node by moving 3 cards (the guide's solutions A, B, C)."""
    c = Cluster()
    for name in ("node-a", "node-b", "node-c"):
        c.node(name)
    c.node("recv").pod("anchor", "recv", 5, group="anchor-job")
    c.group("anchor-job", min_member=1)
    c.group("big", min_member=4)  # A: 8 running, 3 move, safe 4
    for i in range(3):
        c.pod(f"big-{i}", "node-a", 1, group="big")
    for i in range(3, 8):
        c.pod(f"big-{i}", "recv-pinned", 0, group="")
    for k in range(3):  # B: one pod from each of three workloads
        c.group(f"small-{k}", min_member=1)
        c.pod(f"small-{k}-0", "node-b", 1, group=f"small-{k}")
        c.pod(f"small-{k}-1", "node-b", 0, group=f"small-{k}")
    c.group("tight", min_member=3)  # C: one workload, falls below MinAvailable
    for i in range(3):
        c.pod(f"tight-{i}", "node-c", 1, group="tight")
    return c


def test_solutions_a_b_c_rank_a_first() -> None:
    c = abc_cluster()
    # "big" really has 8 running members: add 5 more on a pinned node outside the candidates.
    c.node("recv-pinned", cards=8, pinned="yes")
    for t in c.snap.tasks:
        if t.name.startswith("big-") and t.node == "recv-pinned":
            t.pod_group = "big"
            t.requests[GPU] = 1000.0
    state = c.state()
    gang = GangState.build(state, state.resource(GPU), holding_tasks(state))
    idx = {pg.name: i for i, pg in enumerate(state.pod_groups)}
    a = marginal(gang, [GroupMoves(idx["big"], 3, 3000.0, Counter())])
    b = marginal(gang, [GroupMoves(idx[f"small-{k}"], 1, 1000.0, Counter()) for k in range(3)])
    cc = marginal(gang, [GroupMoves(idx["tight"], 3, 3000.0, Counter())])
    assert a.tolist() == [1, 0, 3000.0, 3000.0, 3]
    assert b.tolist() == [3, 0, 3000.0, 3000.0, 3]
    assert cc.tolist() == [1, 1, 3000.0, 3000.0, 3]  # tight's whole usage is the 3 cards it moves
    scores = normalised_scores(np.array([a, b, cc]), DEFAULT_WEIGHTS)
    assert scores.argmin() == 0 and scores[0] == 0
    # The planner, allowed one workload's worth of cards, picks A.
    status = plan(
        state,
        scope={"nodes": {"include": {"names": ["node-a", "node-b", "node-c"]}}},
        maxPerRun={"resources": {GPU: 3}},
    )
    assert list(status.plan.freed_nodes) == ["node-a"]
    assert {m.pod_group_name for m in status.plan.moves} == {"big"}
    assert status.plan.summary.cost.pod_groups_below_min_available == 0


@pytest.mark.parametrize("occupied", [1, 2])
def test_compact_cluster_is_no_fragmentation(occupied: int) -> None:
    c = Cluster().node("a").node("b").node("c").group("j", 1)
    for i in range(occupied):
        c.pod(f"p{i}", "ab"[i], 8, group="j")
    status = plan(c)
    assert reason(status) == "NoFragmentation"
    assert status.plan.summary.frag_before_percent == 0 and not status.plan.moves
