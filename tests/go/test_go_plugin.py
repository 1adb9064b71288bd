"""The Volcano scheduler plugin ``repack`` (go/plugin): its Go tests, and one session read two ways.

``go/controlplane/build.sh`` builds the plugin's test binary beside ``vc-scheduler-repack``. Its
tests run on Volcano's own framework test helpers (``uthelper``: a scheduler cache, a session
opened by ``framework.OpenSession`` with the plugin's builder registered): each session published
as ``latest``, a slow or absent sidecar never holding a cycle, the hooks' Volcano codes, the
arguments. Then the cross-check: the Go test writes one session both as the plugin's Snapshot and
as the JSON Volcano's ``extender`` plugin marshals of it; here the sidecar's decoder of that JSON
(``sidecar.snapshot.volcano``, with ``kube``'s rules) must read the same cluster — node for node,
task for task, PodGroup for PodGroup. Two front doors, one reading of a session.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from realcluster.launcher import ROOT, ClusterError, ensure_built
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.volcano import snapshot_from_session


@pytest.fixture(scope="module")
def plugin_test() -> Path:
    try:
        binary = ensure_built() / "repack-plugin.test"
    except ClusterError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the plugin is built with the real control plane, which is not available: {exc}")
    return binary


def _run(binary: Path, *args: str, env: dict[str, str] | None = None, package: str = "repack") -> str:
    proc = subprocess.run(
        [str(binary), "-test.count=1", *args], capture_output=True, text=True, timeout=600,
        env={**os.environ, **(env or {})}, cwd=ROOT / "go" / "plugin" / package,  # where `go test` runs it
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc.stdout


def test_the_fidelity_oracles_go_tests_pass(plugin_test: Path) -> None:
    out = _run(plugin_test.with_name("fidelity.test"), "-test.v", package="fidelity")
    for name in ("TestEvaluateAnswersEveryTaskUnderEveryConf", "TestEvaluateNamesTheBadInput"):
        assert f"--- PASS: {name}" in out, out[-4000:]


def test_the_plugins_go_tests_pass(plugin_test: Path) -> None:
    out = _run(plugin_test, "-test.v")
    for name in (
        "TestEachSessionIsPublishedAsLatest",
        "TestASlowSidecarNeverHoldsTheCycle",
        "TestNoSidecarCostsNothing",
        "TestHooksMapTheSidecarsAnswersToVolcanos",
        "TestArgumentsAreCheckedAndNamed",
        "TestConversionStopsAtItsBudget",
    ):
        assert f"--- PASS: {name}" in out, out[-4000:]


def test_the_plugins_snapshot_is_the_extender_decoders_reading_of_the_same_session(
    plugin_test: Path, tmp_path: Path
) -> None:
    out = _run(plugin_test, "-test.v", "-test.run", "TestConversionMatchesTheExtenderDecoder",
               env={"REPACK_PLUGIN_FIXTURES": str(tmp_path)})  # fmt: skip
    assert "--- PASS: TestConversionMatchesTheExtenderDecoder" in out, out
    from_json = snapshot_from_session((tmp_path / "session.json").read_bytes())
    from_go = to_rows(pb.Snapshot.FromString((tmp_path / "snapshot.pb").read_bytes()))
    assert len(from_go.tasks) == 5 and len(from_go.nodes) == 4  # the Go test's cluster, all of it
    assert [n.name for n in from_go.nodes] == [n.name for n in from_json.nodes]
    for want, got in zip(from_json.nodes, from_go.nodes, strict=True):
        assert got == want, (want, got)
    assert list(from_go.pod_groups) == list(from_json.pod_groups)
    assert [t.name for t in from_go.tasks] == [t.name for t in from_json.tasks]  # the API's list order
    for want, got in zip(from_json.tasks, from_go.tasks, strict=True):
        assert got == want, (want, got)
    # what only the plugin can send: the scheduler conf of the session's tiers
    assert [p.name for tier in from_go.scheduler_config.tiers for p in tier.plugins] == [
        "gang", "predicates", "repack", "nodeorder"
    ]  # fmt: skip


def test_the_plugin_cycle_benchmark_runs(plugin_test: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m bench.plugin_cycle`` at smoke size (1k nodes, two iterations): it reports both
    variants, the capture and the builds (the numbers themselves are docs/volcano-plugin.md's)."""
    from bench import plugin_cycle

    monkeypatch.setenv("REPACK_BENCH_OUT", str(tmp_path))
    assert plugin_cycle.main(["--quick", "--count", "1"]) == 0
    (row,) = json.loads((tmp_path / "plugin_cycle.json").read_text())["sizes"]
    assert row["nodes"] == 1000 and row["cycle_stock_ms"] > 0 and row["cycle_repack_ms"] > 0
    assert 0 < row["capture_ms"] < row["cycle_stock_ms"] and row["snapshot_memo_ms"] > 0
