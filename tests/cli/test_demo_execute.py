"""``repack-sidecar demo --execute``: the guide's Steps 5–7 end to end on the in-memory fake cluster (the
sidecar and the watcher as shipped), as a person sees it."""

from __future__ import annotations

import re

import pytest

from sidecar.cli import main


def test_with_the_placement_gate_the_guide_cluster_is_repacked_and_step7_binds_on_the_freed_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--execute"]) == 0  # the shipped path: the gate's admission holds rebuilt pods
    out = capsys.readouterr().out
    assert "the placement gate: rebuilt pods are admitted behind it, as the watcher's webhook answers" in out
    assert "no placement gate" not in out
    assert "repackrun/ascend-execute-001 Succeeded  Complete: ExecutionCompleted" in out
    # each relocation is narrated: evicted, its planned node selected (nominated), bound there
    for worker, node in (("worker-0", "ascend-node-02"), ("worker-1", "ascend-node-03")):
        line = rf"{worker}\s+eviction=Evicted\s+placement=Bound\s+planned={node}\s+selected={node}\s+actual={node}"
        assert re.search(line, out), out
    assert "result: frag 0%, freed 1 ['ascend-node-01'], moved 2, verified True" in out
    assert re.search(r"ascend-node-01\s+0/4\s+-", out), "the freed node holds no NPU pod"
    assert "ascend-large-training bound on ascend-node-01" in out
    # the guide's Step 7 job does not fit its own example: the demo says what it runs instead
    assert "The guide writes 2 workers x 4 NPUs, which one freed 4-NPU node" in out
    assert "so the demo halves each worker" in out
    assert out.rstrip().endswith("The freed node took the whole job.")


def test_without_gates_the_run_still_ends_explicitly(capsys: pytest.CaptureFixture[str]) -> None:
    """The nomination races the scheduler's cycle: the outcome may differ, never silently."""
    code = main(["demo", "--execute", "--no-gates"])
    out = capsys.readouterr().out
    assert "no placement gate (--no-gates): rebuilt pods race the scheduler's next cycle" in out
    ended = re.search(r"repackrun/ascend-execute-001 (Succeeded|Failed)  (Complete|Failed): (\w+)", out)
    assert ended is not None, out
    assert (code == 0) == (ended.group(1) == "Succeeded" and "The freed node took the whole job." in out)
    if code:
        assert "placement gate" in out  # the explanation a person can act on
    if ended.group(1) == "Failed":
        assert "The placement gate (the default; this run had --no-gates) holds rebuilt pods until nominated" in out
