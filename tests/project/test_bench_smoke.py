"""Benchmarks stay runnable: each one at a toy size (the real runs are `python -m bench.<name>`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import decode
from bench.common import OUT, out_dir


@pytest.fixture(autouse=True)
def toy_results_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Smoke runs write their toy-size results under tmp_path; bench/out keeps the real numbers."""
    before = {p: p.stat().st_mtime_ns for p in OUT.glob("*.json")}
    monkeypatch.setenv("REPACK_BENCH_OUT", str(tmp_path / "out"))
    yield tmp_path / "out"
    assert {p: p.stat().st_mtime_ns for p in OUT.glob("*.json")} == before, "a smoke test wrote to bench/out"


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

    args = ["--repeats", "1", "--sizes", "200,400", "--tenk-nodes", "300", "--pdbs", "20", "--no-traces"]
    assert planner.main(args) == 0
    out = capsys.readouterr().out
    assert "curve" in out and "Plan with the snapshot inline" in out
    assert "time per freed node" in out and out.count("✔") + out.count("✘") >= 3


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
    from bench import baselines as B
    from sidecar.api.v1alpha1 import spec_pb2
    from sidecar.repack.spec import validate
    from sidecar.snapshot.decode import decode
    from tests.builders import node, snapshot, task

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


def test_watcher_execute_benchmark_runs_on_the_guide_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """The Execute benchmark's core (the fake cluster with its simulated Volcano on threads, a sidecar
    over gRPC, the informer-fed controller as ``watch`` wires it) on the guide's three Ascend nodes,
    without and with the placement gate."""
    from bench import watcher_execute

    argv = ["--source", "guide", "--repeats", "1", "--schedule-period", "0.1", "--timeout", "30"]
    assert watcher_execute.main(argv) == 0
    out = capsys.readouterr().out
    assert "bare: 1 runs" in out  # bare rebuilt pods race the scheduler: any outcome
    assert "webhook gate: 1 runs" in out and "Succeeded/ExecutionCompleted" in out.split("webhook gate: 1 runs")[1]
    assert "✔ nominated before bind 100% (>= 100%)" in out
    assert "✔ decodes of the cluster per pass 1, in passes choosing placements 1 (<= 1)" in out
    saved = json.loads((out_dir() / "watcher_execute_guide.json").read_text())
    for runs in saved["runs"].values():
        (run,) = runs
        assert run["relocations"] == 2 and run["plan_freed_nodes"] == 1
        assert run["api_requests"] > 0 and run["api_requests_by_kind"]["evict pods"] == 2
    (gated,) = saved["runs"]["webhook gate"]
    # with the gate the scheduler cannot bind a replacement before its nomination
    assert gated["nominated_before_bind"] == 2 and gated["on_selected_node"] == 2
    assert gated["sidecar_calls"]["Plan"] == 1 and gated["sidecar_calls"]["Pipeline"] == 2
    assert gated["placing_passes"] >= 1 and gated["max_decodes_per_placing_pass"] == gated["max_decodes_per_pass"] == 1
    assert gated["result_freed_nodes"] == 1 and gated["frag_after_percent"] == 0
    assert gated["api_requests_by_kind"]["patch pods"] == 2  # one gate removed per replacement


def test_repair_drops_every_source_with_a_rejected_move_and_dominance_is_pareto() -> None:
    """A drain that puts two 2-card pods on a node with 2 free cards: the repaired proposal keeps
    only sources whose every move replays; dominance needs no-worse on all three and better on one."""
    from bench import baselines as B
    from sidecar.api.v1alpha1 import spec_pb2
    from sidecar.repack.spec import validate
    from sidecar.snapshot.decode import decode
    from tests.builders import node, snapshot, task

    snap = snapshot(
        [node("a"), node("b"), node("c")],
        [task("x", "a", 2), task("y", "b", 2), task("z", "c", 6)],
    )
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    ids = {n: i for i, n in enumerate(state.task_name)}
    c = state.node_names.index("c")
    greedy = B.Proposal("greedy", [(ids["x"], c), (ids["y"], c)])
    judged = B.measure(state, run, greedy)
    assert judged.infeasible_moves == 1  # y does not fit on c after x
    fixed = B.repair(state, run, greedy)
    assert fixed.evictions == [(ids["x"], c)] and fixed.method == "greedy (repaired)"
    repaired = B.measure(state, run, fixed)
    assert (repaired.infeasible_moves, repaired.freed) == (0, 1)
    curve = B.prefixes(state, run, greedy)
    assert [o.pods_moved for o in curve] == [1, 2]
    first = B.shortest_prefix(state, run, fixed, 1)
    assert first is not None and (first.freed, first.pods_moved) == (1, 1)
    assert B.shortest_prefix(state, run, fixed, 2) is None

    def out(freed: int, below: int, cards: float) -> B.Outcome:
        return B.Outcome("m", freed, cards, 0, below, 0, 0, 0.0)

    assert B.dominates(out(2, 0, 4), out(1, 0, 4)) and not B.dominates(out(1, 0, 4), out(1, 0, 4))
    assert not B.dominates(out(2, 1, 4), out(1, 0, 4)), "better on freed, worse on gangs: a trade, not dominance"
    assert B.dominates(out(1, 0, 3), out(1, 0, 4))
