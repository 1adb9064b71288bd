"""Issue 13 item 19: deterministic ``snapshot synth`` files, ``from-trace`` without ``--out``,
progress only on a terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.cli import main
from sidecar.cli.progress import Progress
from sidecar.snapshot.io import load_snapshot

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,8,V100M16
n1,64000,262144,8,V100M32
c0,96000,393216,0,
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,4000,8192,1,460,,LS,Running,0,100,0
p1,4000,8192,1,460,,LS,Running,10,1000,10
p2,8000,16384,4,1000,V100M16|V100M32,BE,Running,20,1000,20
"""


def synth_in_a_process(out: Path, hash_seed: str) -> bytes:
    """A fresh interpreter per run: map iteration order may differ between processes, the file must not."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    argv = [sys.executable, "-m", "sidecar", "snapshot", "synth", "--nodes", "40", "--seed", "7", "--out", str(out)]
    subprocess.run(argv, check=True, env=env, capture_output=True, timeout=120)
    return out.read_bytes()


def test_synth_json_is_byte_identical_for_the_same_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = synth_in_a_process(tmp_path / "a.json", "1")
    b = synth_in_a_process(tmp_path / "b.json", "2")
    assert a == b
    assert main(["snapshot", "synth", "--nodes", "40", "--seed", "7"]) == 0
    assert capsys.readouterr().out.encode() == a  # stdout is the same document


def test_synth_json_maps_are_sorted(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    assert main(["snapshot", "synth", "--nodes", "30", "--seed", "3", "--out", str(path)]) == 0
    data = json.loads(path.read_text())
    node = data["nodes"][0]
    assert list(node["labels"]) == sorted(node["labels"]) and len(node["labels"]) > 1
    assert list(node["allocatable"]) == sorted(node["allocatable"]) and len(node["allocatable"]) > 1
    assert list(data) == sorted(data)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    openb = tmp_path / "traces" / "openb"
    openb.mkdir(parents=True)
    (openb / "openb_node_list_all_node.csv").write_text(NODES)
    (openb / "openb_pod_list_default.csv").write_text(PODS)
    return tmp_path / "traces"


def test_from_trace_without_out_writes_stdout_only(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["snapshot", "from-trace", "openb", "--traces", str(trace), "--time", "500"]) == 0
    captured = capsys.readouterr()
    assert list(work.iterdir()) == []
    snap_file = tmp_path / "from-stdout.json"
    snap_file.write_text(captured.out)
    snap = load_snapshot(snap_file)
    assert sorted(snap.task_columns.name) == ["p1", "p2"]
    assert "JSON on stdout" in captured.err and "\r" not in captured.err  # no progress line off a terminal
    out = tmp_path / "t.pb"
    assert main(["snapshot", "from-trace", "openb", "--traces", str(trace), "--time", "500", "--out", str(out)]) == 0
    assert load_snapshot(out) == snap


def test_from_trace_flag_errors_are_input_errors(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "from-trace", "openb", "--traces", str(trace)]) == 2
    assert "--fill/--time: give exactly one" in capsys.readouterr().err
    assert main(["snapshot", "from-trace", "openb", "--traces", str(trace), "--fill", "1.5"]) == 2
    assert "--fill: must be within (0, 1]" in capsys.readouterr().err


def test_from_trace_churn_flags(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "churned.json"
    argv = ["snapshot", "from-trace", "openb", "--traces", str(trace), "--fill", "0.3", "--depart-to", "0.26"]
    assert main([*argv, "--departures", "recorded", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    # p0 and p1 (one workload, last deleted at 1000) tie with p2 (1000): the first in the trace leaves
    assert "card fill 25.0% (filled to 37.5%, then 1 workload with 2 pods departed)" in err, err
    assert sorted(load_snapshot(out).task_columns.name) == ["p2"]
    assert main(["snapshot", "from-trace", "openb", "--traces", str(trace), "--time", "5", "--depart-to", "0.1"]) == 2
    assert "--depart-to: needs --fill" in capsys.readouterr().err
    assert main([*argv, "--refill", "0.05"]) == 2
    assert "--refill: needs --depart-to and must be within (--depart-to, 1]" in capsys.readouterr().err


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only() -> None:
    tty = FakeTerminal()
    with Progress("replaying openb", tty) as progress:
        progress.step("placing 10 pods")
        progress._last = 0.0  # the redraw throttle (0.2 s) would skip an update this soon
        progress.update(5, 10)
    text = tty.getvalue()
    assert "\rreplaying openb: placing 10 pods 0 s" in text
    assert "replaying openb: placing 10 pods  50% (5/10)" in text
    assert text.endswith("\r")  # cleared, so the next output starts at column 0
    pipe = io.StringIO()
    with Progress("x", pipe) as progress:
        progress.step("a")
        progress.update(1, 2)
    assert pipe.getvalue() == ""
