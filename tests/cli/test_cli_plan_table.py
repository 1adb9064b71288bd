"""Issue 13 item 18: the plan table for a person — a summary, moves grouped by source node, the
reasons nodes were not emptied counted, lists cut unless ``-o wide``, ``--no-headers``."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from sidecar.cli import main
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.io import save_snapshot

GUIDE = "sidecar/data/guide-ascend.json"
GUIDE_RUN = "sidecar/data/guide-ascend-dryrun.yaml"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A 300-node cluster whose minimal DryRun frees dozens of nodes."""
    folder = tmp_path_factory.mktemp("big")
    snap, run = folder / "s.json", folder / "run.yaml"
    save_snapshot(synth(SynthOptions(nodes=300, cards_per_node=8, fill=0.55, seed=5)), snap)
    run.write_text("mode: DryRun\ngoals:\n- resource: nvidia.com/gpu\n")
    return str(snap), str(run)


def plan_output(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["plan", *argv]) == 0
    return capsys.readouterr().out


def test_the_guide_plan_reads_top_down(capsys: pytest.CaptureFixture[str]) -> None:
    out = plan_output(capsys, "--snapshot", GUIDE, "--run", GUIDE_RUN)
    lines = out.splitlines()
    assert lines[0] == (
        "Result: RepackRecommended — freeing 1 node lowers huawei.com/ascend-1980 fragmentation"
        " 33.3% -> 0% (33.3 points)"
    )
    assert lines[1] == (
        "Fragmentation: huawei.com/ascend-1980 33.3% -> 0% (occupied nodes 3 -> 2, minimum 2, 3 nodes provide it)"
    )
    assert lines[2:4] == ["Freed nodes: 1", "  ascend-node-01"]
    assert lines[4] == "Moves: 2 pods, 2 cards; 1 PodGroup disturbed (1 below MinAvailable, 1 workload affected)"
    moves = out.split("Moves by source node (1 nodes emptied):\n")[1].split("\n\n")[0].splitlines()
    assert moves[0].split() == ["FROM", "POD", "TO", "CARDS", "PODGROUP", "OWNER"]
    assert moves[1].split()[:3] == ["ascend-node-01", "ascend-batch-training-worker-0", "ascend-node-02"]
    assert moves[2].startswith(" ") and moves[2].split()[:2] == ["ascend-batch-training-worker-1", "ascend-node-03"]
    reasons = out.split("Nodes not emptied (2), by reason:\n")[1].splitlines()
    assert reasons[1].split()[:2] == ["UnmovablePod", "2"]


def test_a_large_plan_stays_readable(big: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    snap, run = big
    status = yaml.safe_load(plan_output(capsys, "--snapshot", snap, "--run", run, "-o", "yaml"))["status"]
    freed = status["plan"]["freedNodes"]
    pods = [p for m in status["plan"]["moves"] for p in m["pods"]]
    assert len(freed) > 30 and len(pods) > 40
    out = plan_output(capsys, "--snapshot", snap, "--run", run)
    lines = out.splitlines()
    assert len(lines) < 50 and max(len(line) for line in lines) <= 130
    assert f"… and {len(freed) - 8} more (-o wide lists all)" in out
    sources = {p["fromNode"] for p in pods}
    assert re.search(rf"… and {len(sources) - 10} more source nodes \(\d+ pods; -o wide lists every move\)", out)
    kept = [c for c in status["plan"]["candidates"] if c["reason"] != "Emptied"]
    counted = {
        line.split()[0]: int(line.split()[1]) for line in out.split("by reason:\n")[1].splitlines()[1:] if line.strip()
    }
    assert counted == Counter(c["reason"] for c in kept)
    assert f"Nodes not emptied ({len(kept)}), by reason:" in out


def test_wide_lists_every_move_and_node(big: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    snap, run = big
    status = yaml.safe_load(plan_output(capsys, "--snapshot", snap, "--run", run, "-o", "yaml"))["status"]
    out = plan_output(capsys, "--snapshot", snap, "--run", run, "-o", "wide")
    assert "more" not in out
    for node in status["plan"]["freedNodes"]:
        assert node in out
    for move in status["plan"]["moves"]:
        for pod in move["pods"]:
            assert re.search(rf"\b{pod['name']}\s+{pod['toNode']}\b", out)
    for c in status["plan"]["candidates"]:
        if c["reason"] != "Emptied":
            assert re.search(rf"^{c['node']}\s+{c['reason']}\s", out, re.MULTILINE)


def test_no_headers(capsys: pytest.CaptureFixture[str]) -> None:
    out = plan_output(capsys, "--snapshot", GUIDE, "--run", GUIDE_RUN, "--no-headers")
    assert "FROM" not in out and "REASON" not in out
    assert "ascend-node-01  ascend-batch-training-worker-0  ascend-node-02" in out
    assert main(["evaluate", "--snapshot", GUIDE, "--no-headers"]) == 0
    (row,) = capsys.readouterr().out.splitlines()
    assert row.split()[0] == "huawei.com/ascend-1980"


def test_table_options_do_not_change_machine_output(capsys: pytest.CaptureFixture[str]) -> None:
    yaml_out = plan_output(capsys, "--snapshot", GUIDE, "--run", GUIDE_RUN, "-o", "yaml")
    assert plan_output(capsys, "--snapshot", GUIDE, "--run", GUIDE_RUN, "-o", "yaml", "--no-headers") == yaml_out


def test_a_targeted_plan_says_where_the_waiting_job_lands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """spec.for: the verdict and each waiting pod's node come before the moves that make room."""
    guide = yaml.safe_load(Path(GUIDE).read_text())
    guide["podGroups"].append({"namespace": "repack-demo", "name": "large", "minMember": 1, "phase": "Inqueue"})
    guide["tasks"].append({
        "uid": "t-large-0", "namespace": "repack-demo", "name": "large-worker-0", "status": "Pending",
        "podGroup": "large", "requests": {"cpu": 4000, "huawei.com/ascend-1980": 4000},
        "profile": {"schedulerName": "volcano", "nodeSelector": {"accelerator-pool": "ascend-npu"}},
    })  # fmt: skip
    snap, run = tmp_path / "s.json", tmp_path / "run.yaml"
    snap.write_text(yaml.safe_dump(guide))
    run.write_text("mode: DryRun\nfor: {podGroup: repack-demo/large}\ngoals:\n- resource: huawei.com/ascend-1980\n")
    out = plan_output(capsys, "--snapshot", str(snap), "--run", str(run))
    lines = out.splitlines()
    assert lines[0].startswith("Result: RepackRecommended — freeing 1 node lets repack-demo/large start")
    at = lines.index("Target repack-demo/large: Fits (minAvailable 1, 0 started, 1 waiting)")
    assert lines[at + 1].split() == ["POD", "LANDS", "ON", "PIPELINED"]
    assert lines[at + 2].split() == ["large-worker-0", "ascend-node-01"]
    assert at < lines.index("Moves by source node (1 nodes emptied):")
