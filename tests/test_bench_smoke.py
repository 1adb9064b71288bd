"""Benchmarks stay runnable: each one at a toy size (the real runs are `python -m bench.<name>`)."""

from __future__ import annotations

import pytest

from bench import decode


def test_decode_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert decode.main(["--nodes", "60", "--tasks", "600", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "ratio row/columnar" in out


def test_mirror_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import mirror

    assert (
        mirror.main(["--nodes", "40", "--tasks", "300", "--repeats", "1", "--twin-classes", "3", "--calls", "5"]) == 0
    )
    out = capsys.readouterr().out
    assert "Filter, one task over 40 nodes" in out


def test_quality_benchmark_runs_and_never_beats_the_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("highspy", reason="HiGHS is part of the test extra")
    from bench import quality

    # bench.quality raises if the planner ever frees more nodes than the exact model allows.
    assert quality.main(["--instances", "6", "--max-nodes", "12", "--seed", "3"]) == 0
    assert "mean freed/optimal" in capsys.readouterr().out


def test_planner_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import planner

    assert planner.main(["--repeats", "1", "--sizes", "200", "--tenk-nodes", "300"]) == 0
    out = capsys.readouterr().out
    assert "curve" in out and "Plan with the snapshot inline" in out


def test_baselines_and_judge_on_a_small_cluster() -> None:
    from bench import baselines as B
    from sidecar.api.v1alpha1 import spec_pb2
    from sidecar.repack.spec import validate
    from sidecar.scenarios.synth import SynthOptions, synth
    from sidecar.snapshot.decode import decode

    state = decode(synth(SynthOptions(nodes=30, fill=0.5, seed=4)))
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    outcomes = {
        fn.__name__: B.measure(state, run, fn(state, run))
        for fn in (B.planner_proposal, B.descheduler_high_node_utilization, B.karpenter_consolidation, B.ffd_drain)
    }
    ours = outcomes["planner_proposal"]
    assert ours.infeasible_moves == 0 and ours.stranded_pods == 0 and ours.freed > 0
    # the judge is independent of the planner: replaying our own plan frees what the plan says
    from sidecar.mirror.core import Mirror
    from sidecar.repack.planner import Planner

    assert ours.freed == len(Planner(Mirror(state), run).plan().freed)


def test_the_judge_counts_freed_nodes_net_of_idle_nodes_lit() -> None:
    """Moving a node's only pod onto an idle node empties one node and lights another: no gain."""
    from builders import node, snapshot, task

    from bench import baselines as B
    from sidecar.api.v1alpha1 import spec_pb2
    from sidecar.repack.spec import validate
    from sidecar.snapshot.decode import decode

    snap = snapshot(
        [node("a"), node("b"), node("c")],
        [task("x", "a", 2), task("y", "b", 2)],
    )
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    x, c, b = state.task_name.index("x"), state.node("c"), state.node("b")
    to_idle = B.measure(state, run, B.Proposal("to idle", [(x, c)]))
    assert (to_idle.freed, to_idle.lit, len(to_idle.freed_nodes)) == (0, 1, 1)
    to_busy = B.measure(state, run, B.Proposal("to busy", [(x, b)]))
    assert (to_busy.freed, to_busy.lit) == (1, 0)
