"""The RepackRun watcher's DryRun on the sandbox API server, with the official client and kubectl:
the guide's Step 4 run planned in process and through a real sidecar, a bad goal, a 409 on the status write."""

from __future__ import annotations

import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.cli import main
from sidecar.client import RepackClient
from sidecar.sandbox.apiserver import ApiServer
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.controller import Controller, dry_run
from sidecar.watcher.dryrun import DryRunReconciler
from sidecar.watcher.planner import InProcessPlanner, Planner
from sidecar.watcher.status import GROUP, PLURAL, VERSION
from tests.execute_fixtures import GUIDE
from tests.sandbox_fixtures import wait_for

ROOT = Path(__file__).resolve().parents[2]
DRYRUN = ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml"
NAME = "ascend-guarded-dryrun"
HAVE_KUBECTL = subprocess.run(["which", "kubectl"], capture_output=True).returncode == 0
needs_kubectl = pytest.mark.skipif(not HAVE_KUBECTL, reason="kubectl is not installed")


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def apply_guide_run(k8s: client.ApiClient, kubeconfig: Path) -> None:
    if HAVE_KUBECTL:
        kubectl(kubeconfig, "apply", "-f", str(DRYRUN))
    else:
        import yaml

        client.CustomObjectsApi(k8s).create_cluster_custom_object(
            GROUP, VERSION, PLURAL, yaml.safe_load(DRYRUN.read_text())
        )


def read_run(k8s: client.ApiClient, name: str = NAME) -> dict[str, Any]:
    return client.CustomObjectsApi(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)  # type: ignore[no-any-return]


def condition(run: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in run["status"]["conditions"] if c["type"] == kind)


def test_the_guides_dryrun_succeeds_with_its_plan(
    api: ApiServer, k8s: client.ApiClient, kubeconfig: Path, planner: Planner
) -> None:
    apply_guide_run(k8s, kubeconfig)
    assert Controller(k8s, [dry_run(k8s, planner)]).run_once() == {NAME: "Succeeded"}
    run = read_run(k8s)
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
    writes = [r for r in api.audit.records("update", "repackruns") if r.subresource == "status"]
    assert [r.code for r in writes] == [200, 200, 200]
    events = client.CoreV1Api(k8s).list_namespaced_event("default").items
    (event,) = [e for e in events if e.involved_object.name == NAME]
    assert (event.reason, event.type, event.involved_object.kind) == ("RepackRecommended", "Normal", "RepackRun")
    # a finished run is left alone
    assert Controller(k8s, [dry_run(k8s, planner)]).run_once() == {}


@needs_kubectl
def test_kubectl_wide_shows_mode_phase_and_fragmentation(k8s: client.ApiClient, kubeconfig: Path) -> None:
    apply_guide_run(k8s, kubeconfig)
    Controller(k8s, [dry_run(k8s, InProcessPlanner())]).run_once()
    header, row = kubectl(kubeconfig, "get", "repackruns", "-o", "wide").splitlines()
    assert header.split()[:7] == ["NAME", "MODE", "PHASE", "REASON", "FRAG-BEFORE", "FRAG-AFTER", "FREED"]
    assert row.split()[:7] == [NAME, "DryRun", "Succeeded", "RepackRecommended", "33.3", "0", "1"]
    assert row.split()[8] == "huawei.com/ascend-1980"


def test_a_goal_no_node_provides_fails_naming_the_field(k8s: client.ApiClient, planner: Planner) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RepackRun",
        "metadata": {"name": "no-such-cards"},
        "spec": {"mode": "DryRun", "goals": [{"resource": "example.com/no-such-card"}]},
    }
    client.CustomObjectsApi(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    assert Controller(k8s, [dry_run(k8s, planner)]).run_once() == {"no-such-cards": "Failed"}
    run = read_run(k8s, "no-such-cards")
    failed = condition(run, "Failed")
    assert (run["status"]["phase"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert failed["message"].startswith("spec.goals[0].resource: no node provides")
    events = client.CoreV1Api(k8s).list_namespaced_event("default").items
    assert [(e.reason, e.type) for e in events if e.involved_object.name == "no-such-cards"] == [
        ("InvalidSpec", "Warning")
    ]


def test_a_409_on_the_status_write_rereads_and_still_succeeds(
    api: ApiServer, k8s: client.ApiClient, kubeconfig: Path
) -> None:
    apply_guide_run(k8s, kubeconfig)
    api.audit.clear()  # kubectl apply reads the run too
    api.faults.fail("update", "repackruns", 409, times=1, subresource="status")
    assert Controller(k8s, [dry_run(k8s, InProcessPlanner())]).run_once() == {NAME: "Succeeded"}
    assert api.faults.pending() == 0
    writes = [r.code for r in api.audit.records("update", "repackruns") if r.subresource == "status"]
    assert writes == [409, 200, 200, 200]
    assert [r.name for r in api.audit.records("get", "repackruns")] == [NAME]  # the re-read
    assert condition(read_run(k8s), "Complete")["reason"] == "RepackRecommended"


def test_a_409_after_another_writer_finished_the_run_does_not_overwrite(
    api: ApiServer, k8s: client.ApiClient, kubeconfig: Path
) -> None:
    apply_guide_run(k8s, kubeconfig)
    custom = client.CustomObjectsApi(k8s)
    run = read_run(k8s)
    done = {
        **run,
        "status": {"phase": "Failed", "conditions": [{"type": "Failed", "status": "True", "reason": "Other"}]},
    }
    custom.replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, NAME, done)
    # the watcher still holds the stale copy (no status): its first write conflicts, the re-read shows it finished
    assert dry_run(k8s, InProcessPlanner()).reconcile(run).phase is None
    assert condition(read_run(k8s), "Failed")["reason"] == "Other"


def test_the_cli_watches_once(k8s: client.ApiClient, kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apply_guide_run(k8s, kubeconfig)
    assert main(["watch", "--kubeconfig", str(kubeconfig), "--in-process", "--once"]) == 0
    assert f"repackrun/{NAME} Succeeded" in capsys.readouterr().out
    assert read_run(k8s)["status"]["phase"] == "Succeeded"


def test_a_sidecar_that_is_down_fails_the_run_explicitly(k8s: client.ApiClient, kubeconfig: Path) -> None:
    apply_guide_run(k8s, kubeconfig)
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        assert Controller(k8s, [dry_run(k8s, down, planner_wait=0)]).run_once() == {NAME: "Failed"}
    failed = condition(read_run(k8s), "Failed")
    assert failed["reason"] == "PlannerUnavailable" and "UNAVAILABLE" in failed["message"]


def test_a_sidecar_that_is_down_is_waited_for_then_the_run_fails(k8s: client.ApiClient, kubeconfig: Path) -> None:
    """Issue 25 item 5: Running with Waiting True PlannerUnavailable while the wait lasts, retried
    with backoff; Failed once ``planner_wait`` has passed; planned as soon as the sidecar answers."""
    apply_guide_run(k8s, kubeconfig)
    now = [datetime(2026, 12, 1, tzinfo=UTC)]
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        rec = DryRunReconciler(k8s, down, clock=lambda: now[0], planner_wait=30)
        first = rec.reconcile(read_run(k8s))
        assert first.phase == "Running" and first.requeue_after == 1.0  # back when the first backoff ends
        waiting = condition(read_run(k8s), "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("True", "PlannerUnavailable")
        assert waiting["message"].endswith("retrying until 2026-12-01T00:00:30Z")
        now[0] += timedelta(seconds=31)
        assert rec.reconcile(read_run(k8s)).phase == "Failed"
    assert condition(read_run(k8s), "Failed")["reason"] == "PlannerUnavailable"
    # a sidecar back within the wait: the run is planned
    import yaml

    body = yaml.safe_load(DRYRUN.read_text())
    body["metadata"]["name"] = "second"
    client.CustomObjectsApi(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    with RepackClient("127.0.0.1:1", timeout=2) as down:
        rec = DryRunReconciler(k8s, down, clock=lambda: now[0], planner_wait=30)
        assert rec.reconcile(read_run(k8s, "second")).phase == "Running"
    rec = DryRunReconciler(k8s, InProcessPlanner(), clock=lambda: now[0], planner_wait=30)
    assert rec.reconcile(read_run(k8s, "second")).phase == "Succeeded"
    kinds = [c["type"] for c in read_run(k8s, "second")["status"]["conditions"]]
    assert "Waiting" not in kinds  # the plan's conditions replace the wait


def test_the_loop_reconciles_new_runs_and_stops(k8s: client.ApiClient, kubeconfig: Path) -> None:
    controller = Controller(k8s, [dry_run(k8s, InProcessPlanner())], period=0.05)
    loop = threading.Thread(target=controller.run, daemon=True)
    loop.start()
    try:
        apply_guide_run(k8s, kubeconfig)
        wait_for(lambda: (read_run(k8s).get("status") or {}).get("phase") == "Succeeded")
    finally:
        controller.stop()
        loop.join(5)
    assert not loop.is_alive()


def test_the_snapshot_source_can_be_injected(k8s: client.ApiClient, kubeconfig: Path) -> None:
    """An informer cache passes its own snapshot (run name -> Snapshot); the reconciler reads no other."""
    apply_guide_run(k8s, kubeconfig)
    asked: list[str] = []

    def cached(name: str) -> pb.Snapshot:
        asked.append(name)
        return load_snapshot(GUIDE)

    reconciler = DryRunReconciler(k8s, InProcessPlanner(), snapshot=cached)
    run = read_run(k8s)
    assert reconciler.wants(run)
    assert reconciler.reconcile(run).phase == "Succeeded"
    assert asked == [NAME]
    assert not reconciler.wants(read_run(k8s))
