"""Execute on the fake cluster port under faults, each ending with an explicit condition: 409 on the
status write (and a stale writer that must not overwrite a newer journal), 429/500/503 on eviction
(injected with the fake's ``faults``, counted from its ``audit``), a PodDisruptionBudget that keeps
refusing, a sidecar that is down, slow or restarting, a planner lost mid-run, and the execution
deadline."""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
import pytest

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.client import RepackClient
from sidecar.fake.objects import object_uid
from sidecar.service import Deadline, DeadlineExceeded, RepackService
from sidecar.watcher.execute.reconciler import ExecuteOptions, ExecuteReconciler
from sidecar.watcher.kit.port import EVENTS, REPACKRUNS
from sidecar.watcher.sidecarport import InProcessSidecar, from_rpc, planner_error
from tests.execute_fixtures import (
    NS,
    WORKER0,
    WORKER1,
    Box,
    condition,
    execute_run,
    guide_box,
    relocation,
    true_reasons,
)
from tests.watcher.test_watcher_execute import Clock

NAME = "ascend-execute-001"
PLANNER = InProcessSidecar()


def status_writes(box: Box) -> list[int]:
    return [r.code for r in box.cluster.audit.records("update", "repackruns") if r.subresource == "status"]


def events_about(box: Box, name: str) -> list[Any]:
    """The Events the watcher recorded about run ``name`` (in ``default``, where those of cluster-scoped objects go)."""
    return [e for e in box.cluster.items(EVENTS, "default") if e["involvedObject"]["name"] == name]


def test_a_409_on_the_journal_write_rereads_and_reapplies_it() -> None:
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        box.cluster.faults.fail("update", "repackruns", 409, times=1, subresource="status")
        assert box.drive(ExecuteReconciler(box.cluster, PLANNER), NAME) == "Succeeded"
        assert status_writes(box)[:2] == [409, 200]
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}


def test_a_stale_writer_never_overwrites_a_newer_journal() -> None:
    clock = Clock()
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        stale = box.run(NAME)
        journaled = ExecuteReconciler(box.cluster, PLANNER, clock=clock, crash=_stop_after("status:journal"))
        with pytest.raises(Stop):
            journaled.reconcile(stale)
        # a second watcher with the pre-journal copy: its replan's journal write conflicts and is dropped
        assert ExecuteReconciler(box.cluster, PLANNER, clock=clock).reconcile(stale).phase is None
        assert status_writes(box) == [200, 409] and box.evictions() == {}
        newer = box.run(NAME)
        # another writer records a refused attempt for worker-0 after this copy was read
        run = box.run(NAME)
        record = relocation(run, WORKER0)
        record["eviction"] = {
            "phase": "Pending",
            "attempts": 1,
            "lastAttemptTime": "2026-07-30T10:00:00Z",
        }
        record["eviction"]["message"] = "HTTP 429: refused (written by another watcher)"
        box.cluster.replace(REPACKRUNS, run, status=True)
        assert ExecuteReconciler(box.cluster, PLANNER, clock=clock).reconcile(newer).phase == "Running"
        after = box.run(NAME)
        assert relocation(after, WORKER0)["eviction"]["message"] == "HTTP 429: refused (written by another watcher)"
        assert relocation(after, WORKER1)["eviction"]["phase"] == "Evicted"
        clock.advance(2)  # worker-0's backoff: the next pass sees it gone and records it without a call
        assert box.drive(ExecuteReconciler(box.cluster, PLANNER, clock=clock), NAME) == "Succeeded"
        assert relocation(box.run(NAME), WORKER0)["eviction"]["message"] == "already gone"
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}


class Stop(Exception):
    pass


def _stop_after(label: str) -> Any:
    def hook(step: str) -> None:
        if step == label:
            raise Stop(step)

    return hook


@pytest.mark.parametrize("code", [429, 503])
def test_a_refused_or_failed_eviction_is_retried_after_backoff(code: int) -> None:
    clock = Clock()
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        box.cluster.faults.fail("create", "pods", code, times=2, subresource="eviction")
        rec = ExecuteReconciler(box.cluster, PLANNER, clock=clock)
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        run = box.run(NAME)
        for pod in (WORKER0, WORKER1):
            eviction = relocation(run, pod)["eviction"]
            assert (eviction["phase"], eviction["attempts"]) == ("Pending", 1)
            assert eviction["message"].startswith(f"HTTP {code}: injected")
        assert condition(run, "Progressing")["reason"] == "Evicting"
        waiting = rec.reconcile(box.run(NAME))  # not due yet: no request, no sleep
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}
        # back for the retry: 1 s after the attempt as journaled (whole seconds), so within the next second
        assert waiting.requeue_after is not None and 0 < waiting.requeue_after <= 1.0
        clock.advance(1)
        assert box.drive(rec, NAME) == "Succeeded"
        run = box.run(NAME)
        assert [relocation(run, p)["eviction"]["attempts"] for p in (WORKER0, WORKER1)] == [2, 2]
        assert box.evictions() == {WORKER0: 2, WORKER1: 2}


def test_server_errors_until_the_eviction_deadline_fail_the_run() -> None:
    clock = Clock()
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        box.cluster.faults.fail("create", "pods", 500, times=100, subresource="eviction")
        rec = ExecuteReconciler(box.cluster, PLANNER, clock=clock, options=ExecuteOptions(eviction_timeout=10))
        for step in (0, 1, 2, 4, 8):  # attempts at 0, 1, 3, 7 s (backoff 1, 2, 4); at 15 s, past the deadline, the last
            clock.advance(step)
            phase = rec.reconcile(box.run(NAME)).phase
        assert phase == "Failed"
        run = box.run(NAME)
        assert true_reasons(run) == [("Failed", "EvictionBlocked")]
        assert "HTTP 500" in condition(run, "Failed")["message"]
        for pod in (WORKER0, WORKER1):
            r = relocation(run, pod)
            assert (r["eviction"]["phase"], r["eviction"]["attempts"], r["placement"]["phase"]) == (
                "Failed",
                5,
                "Skipped",
            )
        assert run["status"]["result"]["evictedPodCount"] == 0
        assert run["status"]["result"]["metricsVerified"] is True  # nothing evicted: nothing to wait for
        box.cluster.faults.clear()
        box.create_run(execute_run("next"))  # it evicted nothing: no cooldown
        assert rec.reconcile(box.run("next")).phase == "Running"


def test_a_pod_disruption_budget_that_keeps_refusing_ends_with_eviction_blocked() -> None:
    """The DryRun cannot promise the PDB still allows eviction: one appears after the journal."""
    clock = Clock()

    def budget(label: str) -> None:
        if label == "status:journal":
            pdb = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "training", "namespace": NS},
                "spec": {
                    "minAvailable": 2,
                    "selector": {"matchLabels": {"volcano.sh/job-name": "ascend-batch-training"}},
                },
                # as the disruption controller keeps it: both workers healthy, none may go
                "status": {"expectedPods": 2, "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0},
            }
            box.cluster.load([pdb])

    with guide_box() as box:
        box.create_run(execute_run(NAME))
        options = ExecuteOptions(eviction_timeout=5)
        rec = ExecuteReconciler(box.cluster, PLANNER, clock=clock, options=options, crash=budget)
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        assert relocation(box.run(NAME), WORKER0)["eviction"]["message"].startswith("HTTP 429")
        clock.advance(6)
        assert rec.reconcile(box.run(NAME)).phase == "Failed"
        run = box.run(NAME)
        assert true_reasons(run) == [("Failed", "EvictionBlocked")]
        for pod in (WORKER0, WORKER1):
            r = relocation(run, pod)
            assert (r["eviction"]["phase"], r["placement"]["phase"]) == ("Blocked", "Skipped")
            assert "disruption budget" in r["eviction"]["message"]
        victim = box.pod(WORKER0)
        assert victim is not None and victim["metadata"]["uid"] == object_uid("t-train-0")
        events = {e["reason"] for e in events_about(box, NAME)}
        assert {"EvictionBlocked", "Admitted"} <= events


NO_WAIT = ExecuteOptions(planner_wait=0)  # --planner-wait 0: a refused planner call is final


def test_a_sidecar_that_is_down_fails_the_run_before_anything_moves() -> None:
    with guide_box() as box, RepackClient("127.0.0.1:1", timeout=2) as down:
        box.create_run(execute_run(NAME))
        assert ExecuteReconciler(box.cluster, down, options=NO_WAIT).reconcile(box.run(NAME)).phase == "Failed"
        run = box.run(NAME)
        assert true_reasons(run) == [("Failed", "PlannerUnavailable")]
        assert "UNAVAILABLE" in condition(run, "Failed")["message"]
        assert run["status"]["relocations"] == [] and box.evictions() == {}


class Sidecar(service_pb2_grpc.RepackServicer):
    """A gRPC sidecar that is slow (``delay``) or restarting (UNAVAILABLE for the first ``fail`` Plans)."""

    def __init__(self, *, delay: float = 0.0, fail: int = 0, refuse: str = "") -> None:
        self.service, self.delay, self.fail, self.calls = RepackService(), delay, fail, Counter[str]()
        self.refuse = refuse  # answer INVALID_ARGUMENT with this message and no rich details

    def Plan(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.calls["Plan"] += 1
        if self.refuse:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.refuse)
        if self.calls["Plan"] <= self.fail:
            context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        time.sleep(self.delay)
        return self.service.plan(request, Deadline(None))

    def Evaluate(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.evaluate(request, Deadline(None))

    def Filter(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.filter(request, Deadline(None))

    def Prioritize(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.prioritize(request, Deadline(None))

    def OpenSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.open_session(request, Deadline(None))

    def CloseSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.close_session(request, Deadline(None))

    def Pipeline(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.service.pipeline(request, Deadline(None))


@contextmanager
def serving(sidecar: Sidecar) -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service_pb2_grpc.add_RepackServicer_to_server(sidecar, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)


def test_a_slow_sidecar_fails_the_run_at_its_deadline() -> None:
    with guide_box() as box, serving(Sidecar(delay=1.5)) as target, RepackClient(target, timeout=0.3) as slow:
        box.create_run(execute_run(NAME))
        assert ExecuteReconciler(box.cluster, slow, options=NO_WAIT).reconcile(box.run(NAME)).phase == "Failed"
        failed = condition(box.run(NAME), "Failed")
        assert failed["reason"] == "PlannerUnavailable" and "DEADLINE_EXCEEDED" in failed["message"]
        box.create_run(execute_run("in-process"))
        stalled = ExecuteReconciler(box.cluster, InProcessSidecar(timeout=0), options=NO_WAIT)
        assert stalled.reconcile(box.run("in-process")).phase == "Failed"
        failed = condition(box.run("in-process"), "Failed")
        assert failed["reason"] == "PlannerUnavailable" and "timed out" in failed["message"]
        assert box.evictions() == {}


def test_a_restarting_sidecar_is_retried_by_the_client() -> None:
    sidecar = Sidecar(fail=2)
    with guide_box() as box, serving(sidecar) as target, RepackClient(target, timeout=10) as remote:
        box.create_run(execute_run(NAME))
        assert box.drive(ExecuteReconciler(box.cluster, remote), NAME) == "Succeeded"
        assert sidecar.calls["Plan"] == 3  # two UNAVAILABLE answers, retried inside one call


class LostAfterPlanning(InProcessSidecar):
    """Plans, then every other call times out (the sidecar went away mid-run)."""

    def _gone(self, *_: Any) -> Any:
        raise DeadlineExceeded("deadline exceeded after decoding the snapshot")

    evaluate = filter = prioritize = open_session = close_session = pipeline = _gone  # type: ignore[assignment]


def test_a_planner_lost_mid_run_leaves_placement_to_the_scheduler() -> None:
    with guide_box(gates=True) as box:
        box.create_run(execute_run(NAME))
        phase = box.drive(ExecuteReconciler(box.cluster, LostAfterPlanning()), NAME)
        run = box.run(NAME)
        assert phase in ("Succeeded", "Failed") and true_reasons(run)
        for pod in (WORKER0, WORKER1):
            placement = relocation(run, pod)["placement"]
            assert placement["phase"] in ("Bound", "BoundElsewhere") and placement["selectedNodeName"] == ""
            replacement = box.pod(pod)
            released = replacement is not None and not replacement["spec"].get("schedulingGates")
            assert released  # the gate lifted: the scheduler places it
        result = run["status"]["result"]
        assert "fragAfterPercent" not in result and result["metricsVerified"] is False
        assert "fragmentation not measured" in result["message"]


def test_replacements_that_never_come_end_at_the_execution_deadline() -> None:
    clock = Clock()
    with guide_box() as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, PLANNER, clock=clock, options=ExecuteOptions(execution_timeout=60))
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        assert rec.reconcile(box.run(NAME)).phase == "Running"  # no controller rebuilds them here
        clock.advance(61)
        assert rec.reconcile(box.run(NAME)).phase == "Failed"
        run = box.run(NAME)
        assert true_reasons(run) == [("Failed", "ExecutionTimedOut")]
        for pod in (WORKER0, WORKER1):
            r = relocation(run, pod)
            assert (r["eviction"]["phase"], r["placement"]["phase"]) == ("Evicted", "TimedOut")
        result = run["status"]["result"]
        assert result["metricsVerified"] is False and result["evictedPodCount"] == 2
        assert result["freedNodes"] == ["ascend-node-01"]  # freed, but the workload is not back


def test_a_goal_no_node_provides_fails_with_invalid_spec() -> None:
    with guide_box() as box:
        box.create_run(execute_run(NAME, goals=[{"resource": "example.com/no-such-card"}], maxPerRun={"podGroups": 1}))
        assert ExecuteReconciler(box.cluster, PLANNER).reconcile(box.run(NAME)).phase == "Failed"
        failed = condition(box.run(NAME), "Failed")
        assert failed["reason"] == "InvalidSpec" and failed["message"].startswith("spec.goals[0].resource")
        assert box.evictions() == {}


def test_the_field_of_bad_input_comes_from_the_rich_error_details(server: Any) -> None:
    """The real sidecar names the field in a google.rpc.BadRequest; an INVALID_ARGUMENT without one
    (a proxy, another server) is charged to the request, however its sentence looks."""
    with guide_box() as box, RepackClient(server.target) as remote:
        box.create_run(execute_run(NAME, goals=[{"resource": "example.com/no-such-card"}], maxPerRun={"podGroups": 1}))
        assert ExecuteReconciler(box.cluster, remote).reconcile(box.run(NAME)).phase == "Failed"
        failed = condition(box.run(NAME), "Failed")
        assert failed["reason"] == "InvalidSpec" and failed["message"].startswith("spec.goals[0].resource: ")
    with serving(Sidecar(refuse="spec.mode: looks like a field")) as target, RepackClient(target) as proxy:
        with pytest.raises(grpc.RpcError) as err:
            proxy.plan(service_pb2.PlanRequest())
        bad = from_rpc(err.value)
        assert bad is not None and (bad.field, bad.problem) == ("request", "spec.mode: looks like a field")
        assert planner_error(err.value) == ("InvalidSpec", "request: spec.mode: looks like a field")


def test_the_planner_port_is_served_in_process_and_over_grpc(server: Any) -> None:
    """Filter and Prioritize, on a snapshot and on a session with Pipeline, answer alike through both
    sidecar ports (the watcher's placement calls)."""
    from sidecar.snapshot.io import load_snapshot
    from tests.execute_fixtures import GUIDE

    snap = load_snapshot(GUIDE)
    request = service_pb2.FilterRequest(snapshot=snap, task_uid="t-train-0", nodes=["ascend-node-02", "ascend-node-03"])
    ranked = service_pb2.PrioritizeRequest(snapshot=snap, task_uid="t-train-0")
    with RepackClient(server.target) as remote:
        for planner in (PLANNER, remote):
            assert list(planner.filter(request).feasible_nodes) == ["ascend-node-02", "ascend-node-03"]
        assert PLANNER.prioritize(ranked) == remote.prioritize(ranked)
        assert {s.node for s in remote.prioritize(ranked).scores} == {
            "ascend-node-01",
            "ascend-node-02",
            "ascend-node-03",
        }
        # one pass's session (execute/placement.py): the rebuilt workers are Pending; Pipeline counts
        # the first on node-02, so the second no longer fits there — alike on both
        rebuilt = copy.deepcopy(snap)
        for task in rebuilt.tasks:
            if task.uid in ("t-train-0", "t-train-1"):
                task.node, task.status = "", pb.Task.Pending
        receivers = ["ascend-node-02", "ascend-node-03"]
        for planner in (PLANNER, remote):
            session = planner.open_session(service_pb2.OpenSessionRequest(snapshot=rebuilt)).session_id
            first = service_pb2.FilterRequest(session_id=session, task_uid="t-train-0", nodes=receivers)
            assert list(planner.filter(first).feasible_nodes) == receivers
            planner.pipeline(service_pb2.PipelineRequest(session_id=session, task_uid="t-train-0", node=receivers[0]))
            second = service_pb2.FilterRequest(session_id=session, task_uid="t-train-1", nodes=receivers)
            assert list(planner.filter(second).feasible_nodes) == ["ascend-node-03"]
            assert planner.close_session(session).closed


def test_with_every_controller_on_its_own_thread_the_run_still_ends_explicitly() -> None:
    """Real concurrency: the scheduler may bind a rebuilt pod before the watcher's suggestion lands
    (no placement gate holds the rebuilt pods here), so the outcome may differ — but the run always ends,
    every relocation terminal, each victim evicted once."""
    with guide_box(threads=True, grace=1) as box:
        box.create_run(execute_run(NAME, grace=1))
        rec = ExecuteReconciler(box.cluster, PLANNER)
        deadline = time.monotonic() + 15
        phase = rec.reconcile(box.run(NAME)).phase
        while phase not in ("Succeeded", "Failed") and time.monotonic() < deadline:
            time.sleep(0.02)
            phase = rec.reconcile(box.run(NAME)).phase
        run = box.run(NAME)
        assert phase in ("Succeeded", "Failed") and true_reasons(run), run["status"]
        assert all(r["placement"]["phase"] in ("Bound", "BoundElsewhere") for r in run["status"]["relocations"])
        assert box.evictions() == {WORKER0: 1, WORKER1: 1}


def test_a_sidecar_restart_is_waited_out_with_backoff_then_the_run_goes_on() -> None:
    """Issue 25 item 5: refused planner calls keep the run Pending with Waiting True
    PlannerUnavailable, retried with a doubling delay, until the sidecar answers."""
    clock = Clock()
    sidecar = Sidecar(fail=10**9)  # restarting until told otherwise
    with guide_box() as box, serving(sidecar) as target, RepackClient(target, timeout=5) as restarting:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, restarting, clock=clock)

        def asked(seconds: float) -> int:
            """Advance the clock, reconcile (still Pending): how many Plan calls that made."""
            clock.advance(seconds)
            before = sidecar.calls["Plan"]
            assert rec.reconcile(box.run(NAME)).phase == "Pending"
            return sidecar.calls["Plan"] - before

        assert asked(0) > 0
        assert rec.reconcile(box.run(NAME)).requeue_after == pytest.approx(1.0)  # back when the backoff ends
        waiting = condition(box.run(NAME), "Waiting")
        assert (waiting["status"], waiting["reason"]) == ("True", "PlannerUnavailable")
        assert "UNAVAILABLE: restarting; retrying until " in waiting["message"]
        assert asked(0) == 0  # within the backoff: not asked
        assert asked(1) > 0  # 1 s later: asked
        assert asked(1) == 0 and asked(1) > 0  # then 2 s: the delay doubled
        sidecar.fail = 0  # the sidecar is back
        clock.advance(4)
        assert rec.reconcile(box.run(NAME)).phase == "Running"
        assert condition(box.run(NAME), "Waiting")["reason"] == "Admitted"
        events = events_about(box, NAME)
        assert [e["count"] for e in events if e["reason"] == "PlannerUnavailable"] == [1]  # announced once


def test_a_sidecar_down_past_the_wait_fails_the_run() -> None:
    clock = Clock()
    with guide_box() as box, RepackClient("127.0.0.1:1", timeout=2) as down:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, down, options=ExecuteOptions(planner_wait=30), clock=clock)
        assert rec.reconcile(box.run(NAME)).phase == "Pending"
        clock.advance(31)
        assert rec.reconcile(box.run(NAME)).phase == "Failed"
        assert true_reasons(box.run(NAME)) == [("Failed", "PlannerUnavailable")]
        assert box.evictions() == {}
