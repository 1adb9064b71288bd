"""The RepackRun watcher's DryRun on the fake cluster port: the guide's Step 4 run planned in process
and through a real sidecar, a bad goal, a 409 on the status write, a sidecar that is down, the loop,
``watch --once`` from the CLI (its cluster the fake), and an injected snapshot source.
(How kubectl shows a run is the real control plane's: tests/realcluster/test_real_crd.py.)"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.cli import main
from sidecar.client import RepackClient
from sidecar.fake.cluster import FakeCluster
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher import runner
from sidecar.watcher.dryrun import DryRunReconciler, dry_run
from sidecar.watcher.kit.controller import Controller
from sidecar.watcher.kit.port import EVENTS, REPACKRUNS
from sidecar.watcher.sidecarport import InProcessSidecar, Sidecar
from tests.execute_fixtures import GUIDE
from tests.k8s_fixtures import wait_for

ROOT = Path(__file__).resolve().parents[2]
DRYRUN = ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml"
NAME = "ascend-guarded-dryrun"


def apply_guide_run(cluster: FakeCluster, name: str = NAME) -> None:
    """The guide's Step 4 manifest, created as ``kubectl apply`` would."""
    body = yaml.safe_load(DRYRUN.read_text())
    body["metadata"]["name"] = name
    cluster.create(REPACKRUNS, body)


def read_run(cluster: FakeCluster, name: str = NAME) -> dict[str, Any]:
    found = cluster.get(REPACKRUNS, name)
    assert found is not None, f"no RepackRun {name}"
    return found


def events_about(cluster: FakeCluster, name: str) -> list[dict[str, Any]]:
    return [e for e in cluster.items(EVENTS, "default") if e["involvedObject"]["name"] == name]


def condition(run: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in run["status"]["conditions"] if c["type"] == kind)


def test_the_guides_dryrun_succeeds_with_its_plan(cluster: FakeCluster, sidecar: Sidecar) -> None:
    apply_guide_run(cluster)
    assert Controller(cluster, [dry_run(cluster, sidecar)]).run_once() == {NAME: "Succeeded"}
    run = read_run(cluster)
    status = run["status"]
    assert status["phase"] == "Succeeded"
    assert status["observedGeneration"] == run["metadata"]["generation"]
    assert status["startTime"].endswith("Z") and status["completionTime"] >= status["startTime"]
    complete = condition(run, "Complete")
    assert (complete["status"], complete["reason"]) == ("True", "RepackRecommended")
    assert complete["lastTransitionTime"].endswith("Z")
    summary = status["plan"]["summary"]
    assert (summary["fragBeforePercent"], summary["fragAfterPercent"]) == (33.3, 0)
    assert (summary["freedNodeCount"], summary["movedCardCount"]) == (1, 2)
    assert status["plan"]["freedNodes"] == ["ascend-node-01"]
    moved = [(p["name"], p["fromNode"], p["toNode"]) for m in status["plan"]["moves"] for p in m["pods"]]
    assert moved == [
        ("ascend-batch-training-worker-0", "ascend-node-01", "ascend-node-02"),
        ("ascend-batch-training-worker-1", "ascend-node-01", "ascend-node-03"),
    ]
    # Pending -> Running -> Succeeded, each a write through the status subresource
    writes = [r for r in cluster.audit.records("update", "repackruns") if r.subresource == "status"]
    assert [r.code for r in writes] == [200, 200, 200]
    (event,) = events_about(cluster, NAME)
    assert (event["reason"], event["type"], event["involvedObject"]["kind"]) == (
        "RepackRecommended",
        "Normal",
        "RepackRun",
    )
    # a finished run is left alone
    assert Controller(cluster, [dry_run(cluster, sidecar)]).run_once() == {}


def test_a_goal_no_node_provides_fails_naming_the_field(cluster: FakeCluster, sidecar: Sidecar) -> None:
    body = {
        "apiVersion": REPACKRUNS.api_version,
        "kind": "RepackRun",
        "metadata": {"name": "no-such-cards"},
        "spec": {"mode": "DryRun", "goals": [{"resource": "example.com/no-such-card"}]},
    }
    cluster.create(REPACKRUNS, body)
    assert Controller(cluster, [dry_run(cluster, sidecar)]).run_once() == {"no-such-cards": "Failed"}
    run = read_run(cluster, "no-such-cards")
    failed = condition(run, "Failed")
    assert (run["status"]["phase"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert failed["message"].startswith("spec.goals[0].resource: no node provides")
    complete = condition(run, "Complete")  # every terminal status is written the same way (StatusWriter.finish)
    assert (complete["status"], complete["reason"]) == ("False", "InvalidSpec")
    assert [(e["reason"], e["type"]) for e in events_about(cluster, "no-such-cards")] == [("InvalidSpec", "Warning")]


def test_a_409_on_the_status_write_rereads_and_still_succeeds(cluster: FakeCluster) -> None:
    apply_guide_run(cluster)
    cluster.audit.clear()  # the watcher's calls only, from here
    cluster.faults.fail("update", "repackruns", 409, times=1, subresource="status")
    assert Controller(cluster, [dry_run(cluster, InProcessSidecar())]).run_once() == {NAME: "Succeeded"}
    assert cluster.faults.pending() == 0
    writes = [r.code for r in cluster.audit.records("update", "repackruns") if r.subresource == "status"]
    assert writes == [409, 200, 200, 200]
    assert [r.name for r in cluster.audit.records("get", "repackruns")] == [NAME]  # the re-read
    assert condition(read_run(cluster), "Complete")["reason"] == "RepackRecommended"


def test_a_409_after_another_writer_finished_the_run_does_not_overwrite(cluster: FakeCluster) -> None:
    apply_guide_run(cluster)
    run = read_run(cluster)
    done = {
        **run,
        "status": {"phase": "Failed", "conditions": [{"type": "Failed", "status": "True", "reason": "Other"}]},
    }
    cluster.replace(REPACKRUNS, done, status=True)
    # the watcher still holds the stale copy (no status): its first write conflicts, the re-read shows it finished
    assert dry_run(cluster, InProcessSidecar()).reconcile(run).phase is None
    assert condition(read_run(cluster), "Failed")["reason"] == "Other"


def test_the_cli_watches_once(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``watch --once`` as the CLI runs it, its cluster the fake (the kubeconfig is the real control plane's)."""
    apply_guide_run(cluster)
    monkeypatch.setattr(runner, "connect", lambda kubeconfig, retries=True: cluster)
    assert main(["watch", "--kubeconfig", "fake", "--in-process", "--once"]) == 0
    assert f"repackrun/{NAME} Succeeded" in capsys.readouterr().out
    assert read_run(cluster)["status"]["phase"] == "Succeeded"


def test_a_sidecar_that_is_down_fails_the_run_explicitly(cluster: FakeCluster) -> None:
    apply_guide_run(cluster)
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        assert Controller(cluster, [dry_run(cluster, down, planner_wait=0)]).run_once() == {NAME: "Failed"}
    failed = condition(read_run(cluster), "Failed")
    assert failed["reason"] == "PlannerUnavailable" and "UNAVAILABLE" in failed["message"]


def test_a_sidecar_that_is_down_is_waited_for_then_the_run_fails(cluster: FakeCluster) -> None:
    """Issue 25 item 5: Running with Waiting True PlannerUnavailable while the wait lasts, retried
    with backoff; Failed once ``planner_wait`` has passed; planned as soon as the sidecar answers."""
    apply_guide_run(cluster)
    now = [datetime(2026, 12, 1, tzinfo=UTC)]
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        rec = DryRunReconciler(cluster, down, clock=lambda: now[0], planner_wait=30)
        first = rec.reconcile(read_run(cluster))
        assert first.phase == "Running" and first.requeue_after == 1.0  # back when the first backoff ends
        waiting = condition(read_run(cluster), "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("True", "PlannerUnavailable")
        assert waiting["message"].endswith("retrying until 2026-12-01T00:00:30Z")
        now[0] += timedelta(seconds=31)
        assert rec.reconcile(read_run(cluster)).phase == "Failed"
    assert condition(read_run(cluster), "Failed")["reason"] == "PlannerUnavailable"
    # a sidecar back within the wait: the run is planned
    apply_guide_run(cluster, "second")
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        rec = DryRunReconciler(cluster, down, clock=lambda: now[0], planner_wait=30)
        assert rec.reconcile(read_run(cluster, "second")).phase == "Running"
    rec = DryRunReconciler(cluster, InProcessSidecar(), clock=lambda: now[0], planner_wait=30)
    assert rec.reconcile(read_run(cluster, "second")).phase == "Succeeded"
    kinds = [c["type"] for c in read_run(cluster, "second")["status"]["conditions"]]
    assert "Waiting" not in kinds  # the plan's conditions replace the wait


def test_the_loop_reconciles_new_runs_and_stops(cluster: FakeCluster) -> None:
    controller = Controller(cluster, [dry_run(cluster, InProcessSidecar())], period=0.05)
    loop = threading.Thread(target=controller.run, daemon=True)
    loop.start()
    try:
        apply_guide_run(cluster)
        wait_for(lambda: (read_run(cluster).get("status") or {}).get("phase") == "Succeeded")
    finally:
        controller.stop()
        loop.join(5)
    assert not loop.is_alive()


def test_the_snapshot_source_can_be_injected(cluster: FakeCluster) -> None:
    """An informer cache passes its own snapshot (run name -> Snapshot); the reconciler reads no other."""
    apply_guide_run(cluster)
    asked: list[str] = []

    def cached(name: str) -> pb.Snapshot:
        asked.append(name)
        return load_snapshot(GUIDE)

    reconciler = DryRunReconciler(cluster, InProcessSidecar(), snapshot=cached)
    run = read_run(cluster)
    assert reconciler.wants(run)
    assert reconciler.reconcile(run).phase == "Succeeded"
    assert asked == [NAME]
    assert not reconciler.wants(read_run(cluster))
