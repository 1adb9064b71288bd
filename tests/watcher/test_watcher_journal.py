"""The Execute watcher's pure parts: journal records and their JSON, the per-record merge that keeps
another writer's newer records, the eviction backoff, admission order and cooldown, and the outcome
table (execute/result.py), row by row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sidecar.watcher.execute.eviction import backoff, due
from sidecar.watcher.execute.journal import (
    EvictionRecord,
    ExecutionResult,
    PlacementRecord,
    Relocation,
    WorkloadOwner,
    apply_changes,
    from_json,
    stamp,
    to_json,
)
from sidecar.watcher.execute.result import outcome, result
from sidecar.watcher.execute.serial import hold
from sidecar.watcher.kit.status import rfc3339

T0 = datetime(2026, 7, 30, 8, 0, 0, tzinfo=UTC)


def rel(
    name: str = "w-0", *, planned: str = "n2", evicted: str = "Evicted", placed: str = "Bound", actual: str = "n2"
) -> Relocation:
    return Relocation(
        namespace="ns",
        victim_pod_name=name,
        victim_pod_uid=f"uid-{name}",
        pod_group_name="pg",
        owner=WorkloadOwner(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train", uid="job-uid"),
        from_node_name="n1",
        planned_node_name=planned,
        cards=1.0,
        eviction=EvictionRecord(phase=evicted, attempts=1),
        placement=PlacementRecord(phase=placed, actual_node_name=actual if placed in ("Bound", "BoundElsewhere")
                                  else ""),
    )  # fmt: skip


def test_records_speak_the_status_schema_in_camel_case() -> None:
    doc = to_json(rel())
    assert set(doc) == {
        "namespace", "victimPodName", "victimPodUID", "podGroupName", "owner", "fromNodeName", "plannedNodeName",
        "cards", "replacementPodGroupName", "eviction", "placement",
    }  # fmt: skip
    assert doc["owner"] == {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "job-uid"}
    assert set(doc["eviction"]) == {"phase", "attempts", "message"}  # never tried: no time (date-time typed)
    tried = to_json(EvictionRecord(phase="Pending", attempts=1, last_attempt_time=stamp(T0)))
    assert set(tried) == {"phase", "attempts", "lastAttemptTime", "message"}
    assert tried["lastAttemptTime"] == "2026-07-30T08:00:00Z"  # metav1.Time's wire form
    assert set(doc["placement"]) == {
        "phase", "selectedNodeName", "actualNodeName", "replacementPodName", "replacementPodUID", "message",
    }  # fmt: skip
    assert doc["cards"] == 1
    assert from_json({**doc, "addedLater": True}, Relocation()) == rel()
    assert set(to_json(ExecutionResult(frag_after_percent=0.0))) == {
        "fragAfterPercent", "freedNodeCount", "freedNodes", "movedCardCount", "evictedPodCount", "metricsVerified",
        "message",
    }  # fmt: skip
    assert "fragAfterPercent" not in to_json(ExecutionResult())  # not measured: absent, never a made-up 0


def test_a_change_lands_only_on_the_record_it_was_computed_from() -> None:
    a, b = rel("w-0", placed="Pending"), rel("w-1", placed="Pending")
    theirs = {**to_json(b), "eviction": {"phase": "Blocked", "attempts": 9}, "note": "kept"}
    status: dict[str, Any] = {"relocations": [{**to_json(a), "note": "kept"}, theirs]}
    mine_a = rel("w-0", placed="Bound")
    mine_b = rel("w-1", placed="Bound")
    assert apply_changes(status, [(a, mine_a), (b, mine_b)]) == 1
    assert from_json(status["relocations"][0], Relocation()) == mine_a and status["relocations"][0]["note"] == "kept"
    assert status["relocations"][1] == theirs


def test_eviction_backoff_doubles_from_one_second_up_to_thirty() -> None:
    assert [backoff(n) for n in range(8)] == [0, 1, 2, 4, 8, 16, 30, 30]
    pending = rel(evicted="Pending", placed="Pending")
    pending.eviction.CopyFrom(
        EvictionRecord(phase="Pending", attempts=3, last_attempt_time=stamp(T0), message="HTTP 429")
    )
    deadline = T0 + timedelta(seconds=300)
    assert not due(pending, T0 + timedelta(seconds=3), deadline)
    assert due(pending, T0 + timedelta(seconds=4), deadline)
    assert due(pending, T0 + timedelta(seconds=1), T0)  # at the deadline: the last attempt


def run(name: str, phase: str = "", created: str = "2026-07-30T08:00:00Z", **status: Any) -> dict[str, Any]:
    meta = {"name": name, "creationTimestamp": created}
    return {"metadata": meta, "spec": {"mode": "Execute"}, "status": {"phase": phase, **status}}


def test_admission_is_serial_oldest_first_then_cools_down() -> None:
    me = run("b")
    assert hold(me, [me], T0, 300) is None
    running = hold(me, [me, run("z", "Running")], T0, 300)
    assert (
        running is not None and running.reason == "AnotherRunActive" and "RepackRun z is executing" in running.message
    )
    older = hold(me, [me, run("a")], T0, 300)  # same second: the name decides
    assert older is not None and "RepackRun a was created earlier" in older.message
    assert hold(me, [me, run("c")], T0, 300) is None
    assert hold(me, [me, run("a", created="2026-07-30T08:00:01Z")], T0, 300) is None
    dry = {**run("a", "Running"), "spec": {"mode": "DryRun"}}
    assert hold(me, [me, dry], T0, 300) is None
    done = {"completionTime": rfc3339(T0 - timedelta(seconds=100))}
    evicted = run("x", "Succeeded", relocations=[to_json(rel())], **done)
    cooling = hold(me, [me, evicted], T0, 300)
    assert cooling is not None and cooling.reason == "ExecuteCooldownActive"
    assert cooling.message == f"cooldown after RepackRun x ends at {rfc3339(T0 + timedelta(seconds=200))}"
    assert hold(me, [me, evicted], T0 + timedelta(seconds=200), 300) is None
    nothing = run("y", "Failed", relocations=[to_json(rel(evicted="Blocked", placed="Skipped"))], **done)
    assert hold(me, [me, nothing], T0, 300) is None


@pytest.mark.parametrize(
    ("rels", "freed", "phase", "reason"),
    [
        ([rel(evicted="Blocked", placed="Skipped"), rel("w-1", placed="TimedOut")], [], "Failed", "EvictionBlocked"),
        ([rel(evicted="Blocked", placed="Skipped")], ["n1"], "Succeeded", "ExecutionCompleted"),
        ([rel(placed="TimedOut")], ["n1"], "Failed", "ExecutionTimedOut"),
        ([rel(placed="BoundElsewhere", actual="n1")], [], "Failed", "PartiallyCompleted"),
        (
            [rel(placed="BoundElsewhere", actual="n3")],
            ["n1"],
            "Succeeded",
            "ExecutionCompletedWithAlternativePlacement",
        ),
        ([rel(placed="Bound", actual="n3")], ["n1"], "Succeeded", "ExecutionCompletedWithAlternativePlacement"),
        ([rel()], ["n1"], "Succeeded", "ExecutionCompleted"),
    ],
)
def test_the_outcome_table(rels: list[Relocation], freed: list[str], phase: str, reason: str) -> None:
    got = outcome(rels, ["n1"], freed)
    assert (got.phase, got.reason) == (phase, reason)
    assert f"{len(freed)} of 1 planned nodes freed" in got.message


def test_metrics_are_verified_only_when_measured_after_every_replacement_is_bound() -> None:
    assert result([rel()], ["n1"], ["n1"], 0.0, 33.3).metrics_verified
    assert not result([rel()], ["n1"], ["n1"], None, 33.3, "planner down").metrics_verified
    assert not result([rel(placed="TimedOut")], ["n1"], ["n1"], 0.0, 33.3).metrics_verified
    done = result([rel(), rel("w-1", evicted="Blocked", placed="Skipped")], ["n1"], [], 33.3, 33.3)
    assert (done.evicted_pod_count, done.moved_card_count, done.metrics_verified) == (1, 1.0, True)
