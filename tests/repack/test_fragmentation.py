"""The guide's fragmentation formula and the theoretical minimum, checked against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.repack.fragmentation import fragmentation, goal_resources, min_occupied_nodes
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.io import load_snapshot
from tests.builders import GPU, guide_twenty_nodes, node, snapshot, task


def _fits(items: list[int], residual: list[int], i: int = 0) -> bool:
    if i == len(items):
        return True
    tried = set()
    for b in range(len(residual)):
        if residual[b] >= items[i] and residual[b] not in tried:
            tried.add(residual[b])
            residual[b] -= items[i]
            if _fits(items, residual, i + 1):
                return True
            residual[b] += items[i]
    return False


def optimum(capacities: list[int], sizes: list[int]) -> int:
    """Fewest bins (chosen among ``capacities``) that hold ``sizes``: exhaustive search."""
    items = sorted(sizes, reverse=True)
    for k in range(0, len(capacities) + 1):
        for chosen in itertools.combinations(sorted(capacities, reverse=True), k):
            if sum(chosen) >= sum(items) and _fits(items, list(chosen)):
                return k
    raise AssertionError("items do not fit at all")


def test_guide_example_fifteen_percent() -> None:
    f = fragmentation(decode(guide_twenty_nodes()), GPU)
    assert (f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (20, 15, 12)
    assert f.min_exact
    assert f.percent == pytest.approx(15.0)


def test_guide_example_after_two_nodes_released_is_five_percent() -> None:
    state = decode(guide_twenty_nodes())
    nodes = state.task_node.copy()
    # Empty npu-13 and npu-14: their four 2-card pods go to the 2 free cards of npu-06..09.
    movers = [int(i) for name in ("npu-13", "npu-14") for i in np.flatnonzero(nodes == state.node(name))]
    for mover, receiver in zip(movers, ("npu-06", "npu-07", "npu-08", "npu-09"), strict=True):
        nodes[mover] = state.node(receiver)
    after = fragmentation(state, GPU, task_node=nodes)
    assert (after.occupied_nodes, after.min_occupied_nodes) == (13, 12)
    assert after.percent == pytest.approx(5.0)
    before = fragmentation(state, GPU)
    assert before.percent - after.percent == pytest.approx(10.0)  # "Improvement: 10 percentage points"


def test_dryrun_example_33_percent() -> None:
    state = decode(load_snapshot("sidecar/data/guide-ascend.json"))
    f = fragmentation(state, "huawei.com/ascend-1980")
    assert (f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (3, 3, 2)
    assert round(f.percent) == 33
    assert goal_resources(state) == ["huawei.com/ascend-1980"]


def test_only_staying_tasks_occupy() -> None:
    """Releasing, pipelined, terminated and unplaced tasks do not make a node occupied."""
    nodes = [node(f"n{i}") for i in range(6)]
    tasks = [
        task("run", "n0", 2),
        task("rel", "n1", 2, status=pb.Task.Releasing),
        task("pipe", "n2", 2, status=pb.Task.Pipelined),
        task("done", "n3", 2, status=pb.Task.Succeeded),
        task("fail", "n4", 2, status=pb.Task.Failed),
        task("pend", "", 2, status=pb.Task.Pending),
        task("cpu", "n5", 0),
    ]
    f = fragmentation(decode(snapshot(nodes, tasks)), GPU)
    assert (f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (6, 1, 1)
    assert f.allocated == 2


def test_nodes_without_the_resource_do_not_count() -> None:
    nodes = [node("gpu-a"), node("gpu-b"), node("cpu-only", cards=0)]
    tasks = [task("a", "gpu-a", 1), task("b", "gpu-b", 1), task("c", "cpu-only", 0)]
    f = fragmentation(decode(snapshot(nodes, tasks)), GPU)
    assert (f.providing_nodes, f.occupied_nodes, f.min_occupied_nodes) == (2, 2, 1)
    assert f.percent == pytest.approx(50.0)


def test_no_provider_is_zero_percent() -> None:
    f = fragmentation(decode(snapshot([node("c", cards=0)], [])), GPU)
    assert f.providing_nodes == 0 and f.percent == 0.0


def test_capacity_not_a_multiple_uses_gcd() -> None:
    # 7-card nodes hold at most three 2-card pods: 7 pods need 3 nodes, not ceil(14/7) = 2.
    m = min_occupied_nodes(np.array([7000] * 5), np.array([2000] * 7))
    assert m.nodes == 3


def test_half_size_items_never_share() -> None:
    m = min_occupied_nodes(np.array([8, 6, 6]), np.array([5, 5, 5]))
    assert m.nodes == 3 and not m.exact


@settings(max_examples=150, deadline=None)
@given(
    caps=st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=5),
    sizes=st.lists(st.integers(1, 8), min_size=0, max_size=7),
)
def test_minimum_is_a_lower_bound_for_any_capacities(caps: list[int], sizes: list[int]) -> None:
    sizes = [s for s in sizes if s <= max(caps)]
    if sum(sizes) > sum(caps):
        return
    try:
        opt = optimum(caps, sizes)
    except AssertionError:
        return  # does not fit at all: no packing to bound
    m = min_occupied_nodes(np.array(caps, np.int64), np.array(sizes, np.int64))
    assert m.nodes <= opt
    if m.exact:
        assert m.nodes == opt


@settings(max_examples=150, deadline=None)
@given(
    cap=st.sampled_from([4, 6, 7, 8, 12, 16]),
    chain=st.sampled_from([(1, 2, 4, 8), (1, 2, 4), (1, 3, 6), (2, 4), (1,)]),
    picks=st.lists(st.integers(0, 3), min_size=1, max_size=9),
)
def test_minimum_is_exact_for_identical_nodes_and_divisible_sizes(
    cap: int, chain: tuple[int, ...], picks: list[int]
) -> None:
    sizes = [chain[p % len(chain)] for p in picks if chain[p % len(chain)] <= cap]
    if not sizes:
        return
    n_bins = len(sizes)  # always enough
    m = min_occupied_nodes(np.array([cap] * n_bins, np.int64), np.array(sizes, np.int64))
    assert m.exact
    assert m.nodes == optimum([cap] * n_bins, sizes)


def test_synthetic_cluster_is_fragmented_and_bounded() -> None:
    state = decode(synth(SynthOptions(nodes=64, fill=0.6, seed=3)))
    f = fragmentation(state, GPU)
    assert f.min_occupied_nodes <= f.occupied_nodes <= f.providing_nodes
    assert f.percent > 0
