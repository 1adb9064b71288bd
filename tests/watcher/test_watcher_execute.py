"""The RepackRun watcher's Execute mode on the fake cluster port: the guide's Step 5 run end to end
(in process and through a real sidecar), Step 7's gang on the freed node, serial admission and the
cooldown, rebuilt ModelServing and VCJob pods, alternative placement, the placement gate's lift.
(How kubectl shows an Execute run is the real control plane's: tests/realcluster/test_real_guide.py.)"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from sidecar.fake.objects import object_uid
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher.execute.placement import PLACEMENT_GATE
from sidecar.watcher.execute.reconciler import ExecuteOptions, ExecuteReconciler
from sidecar.watcher.kit.cache import read_cluster
from sidecar.watcher.kit.port import PODS
from sidecar.watcher.sidecarport import InProcessSidecar, Sidecar
from tests.execute_fixtures import (
    NPU,
    NS,
    TRAINING_PG,
    WORKER0,
    WORKER1,
    Box,
    condition,
    execute_run,
    guide_box,
    relocation,
    true_reasons,
    waiting_job,
)

NAME = "ascend-execute-001"


class Clock:
    """A settable clock for the watcher (admission, cooldown, backoff and deadlines read it)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def npu_pods_on(box: Box, node: str) -> list[str]:
    pods = [p for p in box.cluster.items(PODS) if p["spec"].get("nodeName") == node]
    return sorted(p["metadata"]["name"] for p in pods if NPU in p["spec"]["containers"][0]["resources"]["requests"])


def test_the_guides_execute_run_frees_ascend_node_01(sidecar: Sidecar) -> None:
    with guide_box() as box:
        box.create_run(execute_run(NAME, grace=1))  # the guide's 30 s, shortened: the kubelet waits it out
        rec = ExecuteReconciler(box.cluster, sidecar)
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        victim = box.pod(WORKER0)
        assert victim is not None and victim["metadata"]["uid"] == object_uid("t-train-0")
        assert victim["metadata"]["deletionTimestamp"] and victim["metadata"]["deletionGracePeriodSeconds"] == 1
        assert box.drive(rec, NAME, passes=80, between=lambda: time.sleep(0.03)) == "Succeeded"
        run = box.run(NAME)
        status = run["status"]
        assert status["observedGeneration"] == run["metadata"]["generation"]
        assert status["startTime"].endswith("Z") and status["completionTime"] >= status["startTime"]
        assert true_reasons(run) == [("Complete", "ExecutionCompleted")]
        assert condition(run, "Waiting")["reason"] == "Admitted"
        assert condition(run, "Progressing")["status"] == "False"
        assert status["plan"]["freedNodes"] == ["ascend-node-01"]
        rows = [
            (
                r["victimPodName"],
                r["fromNodeName"],
                r["plannedNodeName"],
                r["placement"]["selectedNodeName"],
                r["placement"]["actualNodeName"],
                r["eviction"]["phase"],
                r["placement"]["phase"],
            )
            for r in status["relocations"]
        ]
        assert rows == [
            (WORKER0, "ascend-node-01", "ascend-node-02", "ascend-node-02", "ascend-node-02", "Evicted", "Bound"),
            (WORKER1, "ascend-node-01", "ascend-node-03", "ascend-node-03", "ascend-node-03", "Evicted", "Bound"),
        ]
        for r in status["relocations"]:
            assert r["podGroupName"] == TRAINING_PG and r["replacementPodGroupName"] == ""
            assert r["owner"]["kind"] == "Job" and r["owner"]["uid"]
            assert r["placement"]["replacementPodName"] == r["victimPodName"]
            replacement = box.pod(r["victimPodName"])
            assert replacement is not None and replacement["metadata"]["uid"] == r["placement"]["replacementPodUID"]
            assert replacement["metadata"]["uid"] != r["victimPodUID"] and replacement["status"]["phase"] == "Running"
        result = status["result"]
        assert result["freedNodeCount"] >= 1 and result["freedNodes"] == ["ascend-node-01"]
        assert (result["fragAfterPercent"], result["movedCardCount"], result["evictedPodCount"]) == (0, 2, 2)
        assert result["metricsVerified"] is True
        assert npu_pods_on(box, "ascend-node-01") == []
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}
        reasons = sorted(e["reason"] for e in box.events(NAME))
        assert reasons == ["Admitted", "Evicted", "Evicted", "ExecutionCompleted"]
        assert rec.reconcile(run).phase is None  # finished: left alone


def large_training(box: Box) -> list[str]:
    """The guide's Step 7 job as its controller would create it: a PodGroup of minMember 2 and two
    workers of 4 NPUs each, in the Ascend pool."""
    return waiting_job(box.cluster, "ascend-large-training", 2, 4)


def test_step7_the_8_card_gang_binds_on_the_freed_node() -> None:
    """The guide's Step 7 premise: a freed node holds the 2×4-NPU gang. guide-ascend.json's nodes have
    4 cards, so the same cluster is loaded with 8 per node (the moves stay the training job's)."""
    with guide_box(cards=8) as box:
        box.create_run(execute_run(NAME))
        assert box.drive(ExecuteReconciler(box.cluster, InProcessSidecar()), NAME) == "Succeeded"
        status = box.run(NAME)["status"]
        assert status["result"]["freedNodes"] == ["ascend-node-01"] and npu_pods_on(box, "ascend-node-01") == []
        workers = large_training(box)
        box.schedule()
        pods = [box.pod(name) for name in workers]
        assert [(p["spec"]["nodeName"], p["status"]["phase"]) for p in pods if p] == [("ascend-node-01", "Running")] * 2


def test_serial_admission_cooldown_and_a_replan_with_nothing_to_do() -> None:
    clock = Clock()
    with guide_box() as box:
        rec = ExecuteReconciler(box.cluster, InProcessSidecar(), options=ExecuteOptions(cooldown=120), clock=clock)
        box.create_run(execute_run("first"))
        time.sleep(1.1)  # creationTimestamp has a one-second resolution
        box.create_run(execute_run("second"))
        held = rec.reconcile(box.run("second"))
        assert held.phase == "Pending"  # the older one goes first
        assert held.requeue_after is None  # another run's progress ends this hold: an event, not a timer
        waiting = condition(box.run("second"), "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("True", "AnotherRunActive")
        assert "first" in waiting["message"]
        assert rec.reconcile(box.run("first")).phase == "Running"
        assert rec.reconcile(box.run("second")).phase == "Pending"
        assert "RepackRun first is executing" in condition(box.run("second"), "Waiting")["message"]
        assert box.drive(rec, "first") == "Succeeded"
        completed = box.run("first")["status"]["completionTime"]
        assert rec.reconcile(box.run("second")).phase == "Pending"
        second = box.run("second")
        waiting = condition(second, "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("True", "ExecuteCooldownActive")
        ends = (datetime.fromisoformat(completed.replace("Z", "+00:00")) + timedelta(seconds=120)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        assert waiting["message"] == f"cooldown after RepackRun first ends at {ends}"
        writes = len(box.cluster.audit.records("update", "repackruns"))
        with capture_logs() as logs:
            cooling = rec.reconcile(second)
            assert cooling.phase == "Pending"  # still held: nothing new to write, log or announce
        # the cooldown ends by itself: the run asks to come back then (120 s after first completed)
        ends_at = datetime.fromisoformat(completed.replace("Z", "+00:00")) + timedelta(seconds=120)
        assert cooling.requeue_after == pytest.approx((ends_at - clock()).total_seconds())
        assert not [e for e in logs if e["event"] == "repackrun held"], logs
        assert len(box.cluster.audit.records("update", "repackruns")) == writes
        clock.advance(121)
        assert rec.reconcile(box.run("second")).phase == "Succeeded"  # admitted, replanned: nothing left to move
        second = box.run("second")
        assert true_reasons(second) == [("Complete", "NoFragmentation")]
        waiting = condition(second, "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("False", "Admitted")
        assert second["status"]["relocations"] == [] and second["status"]["result"]["evictedPodCount"] == 0
        # a run that evicted nothing starts no cooldown
        box.create_run(execute_run("third"))
        assert rec.reconcile(box.run("third")).phase == "Succeeded"
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}
        # an Event on each transition, none while nothing changes (issue 25 item 7)
        said = sorted((e["reason"], e["message"], e["count"]) for e in box.events("second"))
        assert said == [
            ("AnotherRunActive", "held: RepackRun first is executing; Execute runs one at a time", 1),
            ("AnotherRunActive", "held: RepackRun first was created earlier and executes first", 1),
            ("ExecuteCooldownActive", f"held: cooldown after RepackRun first ends at {ends}", 1),
            ("NoFragmentation", said[3][1], 1),
            ("Released", "no longer held (ExecuteCooldownActive): admitting", 1),
        ]


def serving_scope() -> dict[str, Any]:
    return {
        "scope": {
            "podGroups": {"include": {"names": [f"{NS}/ascend-online-serving-0"]}},
            "nodes": {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}},
        }
    }


def test_a_modelserving_group_rebuilt_under_a_new_podgroup_is_followed() -> None:
    with guide_box() as box:
        box.create_run(execute_run(NAME, **serving_scope()))
        assert box.drive(ExecuteReconciler(box.cluster, InProcessSidecar()), NAME) == "Succeeded"
        run = box.run(NAME)
        assert run["status"]["plan"]["freedNodes"] == ["ascend-node-02"]
        for pod in ("ascend-online-serving-0-entry", "ascend-online-serving-0-worker"):
            r = relocation(run, pod)
            assert r["podGroupName"] == "ascend-online-serving-0"
            assert r["replacementPodGroupName"] == "ascend-online-serving-0-r1"
            assert r["owner"]["kind"] == "ModelServing"
            assert r["placement"]["phase"] == "Bound"
            rebuilt = box.pod(pod)
            assert (
                rebuilt is not None and rebuilt["metadata"]["annotations"][GROUP_NAME] == "ascend-online-serving-0-r1"
            )
            assert rebuilt["metadata"]["uid"] == r["placement"]["replacementPodUID"]
        assert npu_pods_on(box, "ascend-node-02") == []
        assert all(n <= 1 for n in box.evictions().values())


def test_the_planned_node_filled_meanwhile_gives_an_alternative_placement() -> None:
    """After the journal is written, another workload takes the planned node: Filter fails there,
    Prioritize picks another receiver (never the freed node), the run still frees its node."""

    def occupy(label: str) -> None:
        if label == "status:journal":
            box.cluster.load([blocker("ascend-node-02", cards=5)])

    with guide_box(cards=8) as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, InProcessSidecar(), crash=occupy)
        assert box.drive(rec, NAME) == "Succeeded"
        run = box.run(NAME)
        assert true_reasons(run) == [("Complete", "ExecutionCompletedWithAlternativePlacement")]
        for pod in (WORKER0, WORKER1):
            r = relocation(run, pod)
            assert r["plannedNodeName"] == "ascend-node-02"
            assert r["placement"]["selectedNodeName"] == r["placement"]["actualNodeName"] == "ascend-node-03"
            assert r["placement"]["phase"] == "Bound"
        assert run["status"]["result"]["freedNodes"] == ["ascend-node-01"]


def blocker(node: str, cards: int) -> dict[str, Any]:
    """A running pod outside Volcano holding ``cards`` NPUs on ``node``."""
    meta = {"name": f"blocker-{node}", "namespace": "default", "uid": f"blocker-{node}"}
    container = {"name": "main", "image": "busybox", "resources": {"requests": {NPU: str(cards)}}}
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    spec = {"nodeName": node, "schedulerName": "default-scheduler", "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def test_a_replacement_bound_before_any_nomination_is_recorded_as_is() -> None:
    """The scheduler binds the rebuilt pods before the watcher's next pass: nothing is nominated,
    the binding is recorded (BoundElsewhere when not the planned node) and the outcome reported."""
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, InProcessSidecar())
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        box.rebuild()
        box.schedule()  # no watcher pass in between
        phase = box.drive(rec, NAME)
        run = box.run(NAME)
        for pod in (WORKER0, WORKER1):
            placement = relocation(run, pod)["placement"]
            assert placement["selectedNodeName"] == ""
            actual = box.pod(pod)
            assert actual is not None and placement["actualNodeName"] == actual["spec"]["nodeName"]
            on_plan = actual["spec"]["nodeName"] == relocation(run, pod)["plannedNodeName"]
            expected = "Bound" if on_plan else "BoundElsewhere"
            assert placement["phase"] == expected
        assert (phase, true_reasons(run)) in (
            ("Failed", [("Failed", "PartiallyCompleted")]),
            ("Succeeded", [("Complete", "ExecutionCompleted")]),
            ("Succeeded", [("Complete", "ExecutionCompletedWithAlternativePlacement")]),
        )
        if phase == "Failed":
            assert "0 of 1 planned nodes freed" in condition(run, "Failed")["message"]


def quota_gate_first(box: Box) -> None:
    """Another admission, before the placement gate's, that gates every pod create on a quota."""
    ours = box.cluster.admission
    assert ours is not None

    def both(review: dict[str, Any]) -> dict[str, Any]:
        review["request"]["object"]["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
        return ours(review)

    box.cluster.admission = both


def test_only_this_projects_scheduling_gate_is_removed_after_the_nomination() -> None:
    with guide_box(gates=True) as box:
        quota_gate_first(box)
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, InProcessSidecar())
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        box.rebuild()
        rebuilt = box.pod(WORKER0)
        assert rebuilt is not None and [g["name"] for g in rebuilt["spec"]["schedulingGates"]] == [
            "example.com/quota",
            PLACEMENT_GATE,
        ]
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        run = box.run(NAME)
        for pod in (WORKER0, WORKER1):
            r = relocation(run, pod)
            assert r["placement"]["phase"] == "Nominated"
            replacement = box.pod(pod)
            assert replacement is not None
            nominated = replacement["status"]["nominatedNodeName"]
            assert nominated == r["placement"]["selectedNodeName"] == r["plannedNodeName"]
            assert [g["name"] for g in replacement["spec"]["schedulingGates"]] == ["example.com/quota"]
            box.cluster.patch(
                PODS, pod, NS, [{"op": "remove", "path": "/spec/schedulingGates/0"}]
            )  # its owner lifts it
        assert box.drive(rec, NAME) == "Succeeded"
        assert true_reasons(box.run(NAME)) == [("Complete", "ExecutionCompleted")]


def test_a_rebuilt_pod_the_cache_has_not_seen_yet_keeps_its_gate_until_a_later_pass() -> None:
    """The pod GET sees the rebuild before the informer cache does: no selection is possible on
    that snapshot, so the pass must not lift the gate (the scheduler would then race the
    nomination); the next pass, on a snapshot that has the pod, nominates and lifts it."""
    with guide_box(gates=True) as box:
        stale: list[Any] = []

        def lagging(name: str) -> Any:
            fresh = read_cluster(box.cluster, name=name)
            return stale[0] if stale else fresh

        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, InProcessSidecar(), snapshot=lagging)
        assert rec.reconcile(box.run(NAME)).phase == "Running"  # journal + evictions
        stale.append(read_cluster(box.cluster, name=NAME))  # the cache stops here: before the rebuild
        box.rebuild()
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        for pod in (WORKER0, WORKER1):
            rebuilt = box.pod(pod)
            assert rebuilt is not None and [g["name"] for g in rebuilt["spec"]["schedulingGates"]] == [PLACEMENT_GATE]
            r = relocation(box.run(NAME), pod)
            assert r["placement"]["phase"] != "Nominated" and not r["placement"]["selectedNodeName"]
        stale.clear()  # the cache catches up
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        for pod in (WORKER0, WORKER1):
            r = relocation(box.run(NAME), pod)
            assert r["placement"]["phase"] == "Nominated" and r["placement"]["selectedNodeName"] == r["plannedNodeName"]
            rebuilt = box.pod(pod)
            assert rebuilt is not None and not rebuilt["spec"].get("schedulingGates")
        assert box.drive(rec, NAME) == "Succeeded"


def test_placements_flushed_one_by_one_journal_each_before_its_nomination() -> None:
    """``flush_seconds`` 0: every decision with a nomination is journaled and acted on at once (a
    slow pass nominates its first pods early); each nomination still follows its own journal write."""
    labels: list[str] = []
    with guide_box(gates=True) as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(
            box.cluster, InProcessSidecar(), options=ExecuteOptions(flush_seconds=0), crash=labels.append
        )
        assert box.drive(rec, NAME) == "Succeeded"
    steps = [x for x in labels if x.startswith(("status:placements", "nominate:"))]
    assert steps[:4] == [  # (later passes journal the bindings)
        "status:placements", f"nominate:{NS}/{WORKER0}", "status:placements", f"nominate:{NS}/{WORKER1}",
    ]  # fmt: skip


def test_a_victim_that_finished_by_itself_is_not_evicted_and_not_waited_for() -> None:
    def finish(label: str) -> None:
        if label == "status:journal":
            done = [{"op": "replace", "path": "/status/phase", "value": "Succeeded"}]
            box.cluster.patch(PODS, WORKER0, NS, done, status=True)

    with guide_box() as box:
        box.create_run(execute_run(NAME))
        assert box.drive(ExecuteReconciler(box.cluster, InProcessSidecar(), crash=finish), NAME) == "Succeeded"
        run = box.run(NAME)
        r = relocation(run, WORKER0)
        assert (r["eviction"]["phase"], r["placement"]["phase"]) == ("Evicted", "Skipped")
        assert r["eviction"]["message"] == "not needed: the pod already finished (Succeeded)"
        assert box.evictions() == {WORKER1: 1}
        assert run["status"]["result"]["freedNodes"] == ["ascend-node-01"]  # a finished pod holds no card
