"""Benchmarks stay runnable: each one at a toy size (the real runs are `python -m bench.<name>`)."""

from __future__ import annotations

import pytest

from bench import decode


def test_decode_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert decode.main(["--nodes", "60", "--tasks", "600", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "ratio row/columnar" in out
