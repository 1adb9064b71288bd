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
