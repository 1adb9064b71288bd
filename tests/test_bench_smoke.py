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
