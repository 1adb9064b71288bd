"""A targeted Execute run (spec.for) on the fake cluster port: the guide's cluster with a whole-node
job waiting; the run frees one node, nominates the job's pod there once the eviction is made, and
follows it until it runs; a job that already fits moves nothing; a job deleted mid-run ends the run
(TargetDeleted) without the evictions not yet made. (kubectl's view and vc-scheduler's side are the
real control plane's: tests/realcluster/test_real_policy.py.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sidecar.watcher.execute.reconciler import ExecuteOptions, ExecuteReconciler
from sidecar.watcher.kit.port import PDBS, PODGROUPS, PODS
from sidecar.watcher.sidecarport import InProcessSidecar
from tests.execute_fixtures import NPU, NS, TRAINING_PG, Box, condition, execute_run, guide_box, waiting_job

NAME = "make-room"
TRAINING_LABELS = {"volcano.sh/job-name": "ascend-batch-training"}
JOB = "whole-node"


def targeted_run(name: str = NAME, **spec: Any) -> dict[str, Any]:
    """The guide's Execute run, aimed at ``repack-demo/whole-node``: scope and budgets as the guide's."""
    return execute_run(name, **{"for": {"job": f"{NS}/{JOB}"}, **spec})


def test_the_run_frees_one_node_nominates_the_waiting_pod_there_and_follows_it_until_it_runs() -> None:
    """The guide's 3 Ascend nodes hold 2 + 2 + 2 NPUs: a 4-NPU worker cannot start. The targeted run
    moves one node's two pods, nominates the worker to that node, and ends when it is bound."""
    with guide_box() as box:
        (worker,) = waiting_job(box.cluster, JOB, 1, 4)
        box.schedule()
        assert not box.pod(worker)["spec"].get("nodeName")  # fragmentation holds it back
        box.create_run(targeted_run())
        assert box.drive(ExecuteReconciler(box.cluster, InProcessSidecar()), NAME) == "Succeeded"
        status = box.run(NAME)["status"]
        freed = status["plan"]["freedNodes"]
        assert len(freed) == 1
        assert status["plan"]["target"]["verdict"] == "Fits"
        assert [(p["podName"], p["node"]) for p in status["plan"]["target"]["placements"]] == [(worker, freed[0])]
        target = status["target"]
        assert (target["podGroup"], target["phase"]) == (f"{NS}/{JOB}", "Started")
        assert target["podGroupUID"] == box.cluster.get(PODGROUPS, JOB, NS)["metadata"]["uid"]
        (nomination,) = target["nominations"]
        assert (nomination["podName"], nomination["phase"], nomination["actualNodeName"]) == (worker, "Bound", freed[0])
        pod = box.pod(worker)
        assert pod["spec"]["nodeName"] == freed[0] and pod["status"].get("nominatedNodeName") == freed[0]
        assert nomination["podUID"] == pod["metadata"]["uid"]
        complete = condition(box.run(NAME), "Complete")
        assert complete["reason"] == "ExecutionCompleted", complete
        assert f"{NS}/{JOB} started: 1 pods bound on {freed[0]}" in complete["message"]
        assert status["result"]["freedNodes"] == freed  # the worker on it does not count against it
        reasons = [e["reason"] for e in box.events(NAME)]
        assert "TargetNominated" in reasons and "TargetStarted" in reasons


def _hold_evictions(box: Box) -> ExecuteReconciler:
    """A reconciler whose journal write is followed by a PodDisruptionBudget over the moved job (as
    if an operator added one meanwhile): the plan stands, its evictions are refused (429, retried)."""

    def hook(label: str) -> None:
        if label == "status:journal" and box.cluster.get(PDBS, "hold", NS) is None:
            box.cluster.create(PDBS, {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "hold", "namespace": NS},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": TRAINING_LABELS}},
            })  # fmt: skip

    return ExecuteReconciler(box.cluster, InProcessSidecar(), crash=hook)


def test_the_nomination_waits_until_no_eviction_is_pending() -> None:
    with guide_box() as box:
        waiting_job(box.cluster, JOB, 1, 4)
        box.create_run(targeted_run())
        _hold_evictions(box).reconcile(box.run(NAME))
        status = box.run(NAME)["status"]
        assert any(r["eviction"]["phase"] == "Pending" for r in status["relocations"]), status["relocations"]
        assert status["target"]["phase"] == "Waiting"
        assert [n["phase"] for n in status["target"]["nominations"]] == ["Pending"]
        assert not box.pod(f"{JOB}-worker-0")["status"].get("nominatedNodeName")


def test_a_job_that_fits_or_runs_already_moves_nothing() -> None:
    with guide_box(cards=8) as box:  # 6 free NPUs per node: the 4-NPU worker fits as things are
        waiting_job(box.cluster, JOB, 1, 4)
        box.create_run(targeted_run())
        assert ExecuteReconciler(box.cluster, InProcessSidecar()).reconcile(box.run(NAME)).phase == "Succeeded"
        run = box.run(NAME)
        assert condition(run, "Complete")["reason"] == "TargetFitsWithoutRepack"
        assert run["status"]["relocations"] == [] and box.evictions() == {}
        assert "nothing evicted" in run["status"]["result"]["message"]
    with guide_box() as box:  # the training job is the target: it runs
        box.create_run(targeted_run("runs", **{"for": {"podGroup": f"{NS}/{TRAINING_PG}"}}))
        ExecuteReconciler(box.cluster, InProcessSidecar()).reconcile(box.run("runs"))
        assert condition(box.run("runs"), "Complete")["reason"] == "TargetAlreadyRunning"
        assert box.evictions() == {}


def test_a_target_deleted_mid_run_ends_it_without_the_evictions_not_yet_made() -> None:
    """The job is deleted while one eviction is held back by a PodDisruptionBudget: the next pass
    calls that eviction off, still places what was already evicted, and ends TargetDeleted."""
    with guide_box() as box:
        (worker,) = waiting_job(box.cluster, JOB, 1, 4)
        box.create_run(targeted_run())
        rec = _hold_evictions(box)
        rec.reconcile(box.run(NAME))
        pending = [r for r in box.run(NAME)["status"]["relocations"] if r["eviction"]["phase"] == "Pending"]
        assert pending
        box.cluster.delete(PODS, worker, NS)
        box.cluster.delete(PODGROUPS, JOB, NS)
        assert box.drive(rec, NAME) == "Failed"
        run = box.run(NAME)
        failed = condition(run, "Failed")
        assert failed["reason"] == "TargetDeleted", failed
        assert f"PodGroup {NS}/{JOB} was deleted during the run" in failed["message"]
        assert run["status"]["target"]["phase"] == "Deleted"
        called_off = [
            r for r in run["status"]["relocations"] if r["victimPodName"] in {p["victimPodName"] for p in pending}
        ]
        assert all(r["eviction"]["phase"] == "Failed" and "was deleted" in r["eviction"]["message"] for r in called_off)
        evicted = box.evictions()
        assert all(n == 1 for n in evicted.values())
        for r in called_off:  # refused once by the budget, never tried again after the deletion
            assert box.pod(r["victimPodName"]) is not None
        assert any(e["reason"] == "TargetDeleted" for e in box.events(NAME))


def test_a_job_not_started_by_the_deadline_fails_the_run() -> None:
    """The worker's pod is gated by someone else (not this project's gate): it stays Pending, the run
    times out with the target NotStarted."""
    with guide_box() as box:
        (worker,) = waiting_job(box.cluster, JOB, 1, 4)
        pod = box.pod(worker)
        pod["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
        box.cluster.replace(PODS, pod)
        box.create_run(targeted_run())
        now = [datetime.now(UTC)]
        options = ExecuteOptions(execution_timeout=60)
        rec = ExecuteReconciler(box.cluster, InProcessSidecar(), options=options, clock=lambda: now[0])
        phase = None
        for _ in range(10):  # the moves finish; the worker stays gated
            phase = rec.reconcile(box.run(NAME)).phase
            box.rebuild()
            box.schedule()
        assert phase == "Running" and box.run(NAME)["status"]["target"]["phase"] == "Nominated"
        now[0] += timedelta(seconds=61)
        phase = rec.reconcile(box.run(NAME)).phase
        assert phase == "Failed"
        run = box.run(NAME)
        assert condition(run, "Failed")["reason"] == "ExecutionTimedOut"
        assert run["status"]["target"]["phase"] == "NotStarted"
        assert f"{worker} not bound" in condition(run, "Failed")["message"]


def npu_on(box: Box, node: str) -> list[str]:
    pods = [p for p in box.cluster.items(PODS) if p["spec"].get("nodeName") == node]
    return [p["metadata"]["name"] for p in pods if NPU in p["spec"]["containers"][0]["resources"].get("requests", {})]
