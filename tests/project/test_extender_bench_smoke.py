"""bench.extender stays runnable at a toy size (the real run: `python -m bench.extender`)."""

from __future__ import annotations

import pytest

from bench import extender


def test_extender_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert extender.main(["--nodes", "20", "30", "--repeats", "1", "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "usable after arrival at 20 nodes" in out and "msgspec" in out
