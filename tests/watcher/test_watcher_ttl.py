"""ttlSecondsAfterFinished on the fake cluster port with an injected clock:
finished runs are deleted once their time is up (not before), from status.completionTime or the
final condition's transition time, and a UID precondition keeps a run created again under the same
name from being deleted by a stale decision.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sidecar import logs
from sidecar.fake.cluster import FakeCluster
from sidecar.watcher.kit.port import REPACKRUNS, ApiError
from sidecar.watcher.ttl import DELETED, TTLReconciler, finished_at, parse_time

FINISHED = datetime(2026, 7, 30, 10, 0, 0, tzinfo=UTC)
STAMP = "2026-07-30T10:00:00Z"


@pytest.fixture
def cluster() -> FakeCluster:
    """An empty cluster (the RepackRuns are each test's own)."""
    return FakeCluster()


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def create(
    cluster: FakeCluster, name: str = "r", *, ttl: int | None = 0, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A DryRun through the port, then its status through the status subresource (as the watcher writes it)."""
    spec: dict[str, Any] = {"mode": "DryRun", "goals": [{"resource": "huawei.com/ascend-1980"}]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    body = {"apiVersion": REPACKRUNS.api_version, "kind": "RepackRun", "metadata": {"name": name}, "spec": spec}
    run = cluster.create(REPACKRUNS, body)
    if status is None:
        status = {"phase": "Succeeded", "completionTime": STAMP, "conditions": [complete(STAMP)]}
    return cluster.replace(REPACKRUNS, {**run, "status": status}, status=True)


def complete(stamp: str, *, type_: str = "Complete", status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": "RepackRecommended", "lastTransitionTime": stamp}


def exists(cluster: FakeCluster, name: str = "r") -> bool:
    return cluster.get(REPACKRUNS, name) is not None


def test_which_runs_it_wants() -> None:
    def run(phase: str | None, ttl: Any) -> dict[str, Any]:
        spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
        return {"metadata": {"name": "r"}, "spec": spec, "status": {"phase": phase} if phase else {}}

    assert TTLReconciler.wants(run("Succeeded", 0)) and TTLReconciler.wants(run("Failed", 604800))
    assert not TTLReconciler.wants(run("Succeeded", None)), "no TTL: kept forever"
    assert not TTLReconciler.wants(run("Running", 0)) and not TTLReconciler.wants(run("Pending", 0))
    assert not TTLReconciler.wants(run(None, 0)), "not started"
    assert not TTLReconciler.wants(run("Succeeded", True)) and not TTLReconciler.wants(run("Succeeded", -1))


def test_ttl_zero_deletes_at_once(cluster: FakeCluster) -> None:
    run = create(cluster, ttl=0)
    cluster.audit.clear()
    assert TTLReconciler(cluster, clock=Clock(FINISHED)).reconcile(run).phase == DELETED
    assert not exists(cluster)
    (delete,) = cluster.audit.records("delete", "repackruns")
    assert delete.code == 200


def test_ttl_60_waits_until_its_time(cluster: FakeCluster) -> None:
    run = create(cluster, ttl=60)
    clock = Clock(FINISHED + timedelta(seconds=59))
    ttl = TTLReconciler(cluster, clock=clock)
    assert ttl.expires_at(run) == FINISHED + timedelta(seconds=60)
    kept = ttl.reconcile(run)
    assert kept.phase is None and exists(cluster), "59 s after finishing: kept"
    assert kept.requeue_after == pytest.approx(1.0), "and asked back for when it is due"
    clock.now = FINISHED + timedelta(seconds=60)
    assert ttl.reconcile(run).phase == DELETED and not exists(cluster)


def test_unfinished_runs_and_runs_without_ttl_are_kept(cluster: FakeCluster) -> None:
    running = create(cluster, "running", ttl=0, status={"phase": "Running", "startTime": STAMP})
    forever = create(cluster, "forever", ttl=None)
    ttl = TTLReconciler(cluster, clock=Clock(FINISHED + timedelta(days=365)))
    assert ttl.reconcile(running).phase is None and ttl.reconcile(forever).phase is None
    assert exists(cluster, "running") and exists(cluster, "forever")


def test_without_completion_time_the_final_conditions_tell_when_it_finished(cluster: FakeCluster) -> None:
    conditions = [
        complete("2026-07-30T10:00:00Z", type_="Waiting"),  # not a final condition
        complete("2026-07-30T10:30:00Z", type_="Failed", status="False"),  # not True
        complete("2026-07-30T09:00:00Z", type_="Failed"),
        complete("2026-07-30T10:00:10Z"),  # the latest True Complete/Failed transition
    ]
    run = create(cluster, ttl=30, status={"phase": "Failed", "conditions": conditions})
    assert finished_at(run) == FINISHED + timedelta(seconds=10)
    ttl = TTLReconciler(cluster, clock=Clock(FINISHED + timedelta(seconds=39)))
    assert ttl.reconcile(run).phase is None and exists(cluster)
    ttl = TTLReconciler(cluster, clock=Clock(FINISHED + timedelta(seconds=40)))
    assert ttl.reconcile(run).phase == DELETED and not exists(cluster)


def test_a_finished_run_without_any_time_is_left_alone(cluster: FakeCluster) -> None:
    run = create(cluster, ttl=0, status={"phase": "Succeeded", "conditions": [{"type": "Complete", "status": "True"}]})
    ttl = TTLReconciler(cluster, clock=Clock(FINISHED + timedelta(days=365)))
    assert ttl.expires_at(run) is None and ttl.reconcile(run).phase is None and exists(cluster)


def test_a_run_replaced_under_the_same_name_is_never_deleted(cluster: FakeCluster) -> None:
    stale = create(cluster, ttl=0)  # the decision is taken on this copy...
    cluster.delete(REPACKRUNS, "r")
    fresh = create(cluster, ttl=0, status={"phase": "Running"})  # ...while someone recreates the run
    assert fresh["metadata"]["uid"] != stale["metadata"]["uid"]
    cluster.audit.clear()
    assert TTLReconciler(cluster, clock=Clock(FINISHED + timedelta(hours=1))).reconcile(stale).phase is None
    (delete,) = cluster.audit.records("delete", "repackruns")
    assert delete.code == 409, "the UID precondition refused it"
    kept = cluster.get(REPACKRUNS, "r")
    assert kept is not None and kept["metadata"]["uid"] == fresh["metadata"]["uid"]


def test_a_run_already_gone_counts_as_deleted(cluster: FakeCluster) -> None:
    run = create(cluster, ttl=0)
    cluster.delete(REPACKRUNS, "r")
    assert TTLReconciler(cluster, clock=Clock(FINISHED)).reconcile(run).phase == DELETED


def test_other_api_errors_propagate_for_the_next_pass(cluster: FakeCluster) -> None:
    run = create(cluster, ttl=0)
    cluster.faults.fail("delete", "repackruns", 503, times=1)
    ttl = TTLReconciler(cluster, clock=Clock(FINISHED))
    with pytest.raises(ApiError) as exc:
        ttl.reconcile(run)
    assert exc.value.status == 503 and exists(cluster)
    assert ttl.reconcile(run).phase == DELETED


def test_the_deletion_is_logged(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("json", "info")  # the suite's conftest puts its level back afterwards
    run = create(cluster, ttl=0)
    assert TTLReconciler(cluster, clock=Clock(FINISHED)).reconcile(run).phase == DELETED
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    (entry,) = [e for e in lines if e.get("event") == "repackrun deleted after ttl"]
    assert (entry["level"], entry["run"], entry["uid"]) == ("info", "r", run["metadata"]["uid"])
    assert (entry["ttl_seconds"], entry["phase"]) == (0, "Succeeded") and entry["due"].startswith("2026-07-30T10:00:00")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-07-30T10:00:00Z", FINISHED),
        ("2026-07-30T12:00:00+02:00", FINISHED),
        ("2026-07-30T10:00:00.250000Z", FINISHED + timedelta(milliseconds=250)),
        ("2026-07-30T10:00:00", FINISHED),
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_time(text: Any, expected: datetime | None) -> None:
    assert parse_time(text) == expected
