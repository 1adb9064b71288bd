"""ttlSecondsAfterFinished on the sandbox API server with the official client and an injected clock:
finished runs are deleted once their time is up (not before), from status.completionTime or the
final condition's transition time, and a UID precondition keeps a run created again under the same
name from being deleted by a stale decision.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from sidecar import logs
from sidecar.sandbox.apiserver import ApiServer
from sidecar.watcher.ttl import DELETED, TTLReconciler, finished_at, parse_time

GROUP, VERSION, PLURAL = "repack.volcano.sh", "v1alpha1", "repackruns"
FINISHED = datetime(2026, 7, 30, 10, 0, 0, tzinfo=UTC)
STAMP = "2026-07-30T10:00:00Z"


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as s:
        s.load([])
        yield s


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def create(k8s: client.ApiClient, name: str = "r", *, ttl: int | None = 0, status: dict[str, Any] | None = None) -> Any:
    """A DryRun through the API, then its status through the status subresource (as the watcher writes it)."""
    spec: dict[str, Any] = {"mode": "DryRun", "goals": [{"resource": "huawei.com/ascend-1980"}]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    custom = client.CustomObjectsApi(k8s)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "RepackRun", "metadata": {"name": name}, "spec": spec}
    run = custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    if status is None:
        status = {"phase": "Succeeded", "completionTime": STAMP, "conditions": [complete(STAMP)]}
    return custom.replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, name, {**run, "status": status})


def complete(stamp: str, *, type_: str = "Complete", status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": "RepackRecommended", "lastTransitionTime": stamp}


def exists(k8s: client.ApiClient, name: str = "r") -> bool:
    try:
        client.CustomObjectsApi(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except ApiException as exc:
        assert exc.status == 404
        return False
    return True


def test_which_runs_it_wants() -> None:
    def run(phase: str | None, ttl: Any) -> dict[str, Any]:
        spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
        return {"metadata": {"name": "r"}, "spec": spec, "status": {"phase": phase} if phase else {}}

    assert TTLReconciler.wants(run("Succeeded", 0)) and TTLReconciler.wants(run("Failed", 604800))
    assert not TTLReconciler.wants(run("Succeeded", None)), "no TTL: kept forever"
    assert not TTLReconciler.wants(run("Running", 0)) and not TTLReconciler.wants(run("Pending", 0))
    assert not TTLReconciler.wants(run(None, 0)), "not started"
    assert not TTLReconciler.wants(run("Succeeded", True)) and not TTLReconciler.wants(run("Succeeded", -1))


def test_ttl_zero_deletes_at_once(api: ApiServer, k8s: client.ApiClient) -> None:
    run = create(k8s, ttl=0)
    api.audit.clear()
    assert TTLReconciler(k8s, clock=Clock(FINISHED)).reconcile(run).phase == DELETED
    assert not exists(k8s)
    (delete,) = api.audit.records("delete", "repackruns")
    assert delete.code == 200


def test_ttl_60_waits_until_its_time(k8s: client.ApiClient) -> None:
    run = create(k8s, ttl=60)
    clock = Clock(FINISHED + timedelta(seconds=59))
    ttl = TTLReconciler(k8s, clock=clock)
    assert ttl.expires_at(run) == FINISHED + timedelta(seconds=60)
    kept = ttl.reconcile(run)
    assert kept.phase is None and exists(k8s), "59 s after finishing: kept"
    assert kept.requeue_after == pytest.approx(1.0), "and asked back for when it is due"
    clock.now = FINISHED + timedelta(seconds=60)
    assert ttl.reconcile(run).phase == DELETED and not exists(k8s)


def test_unfinished_runs_and_runs_without_ttl_are_kept(k8s: client.ApiClient) -> None:
    running = create(k8s, "running", ttl=0, status={"phase": "Running", "startTime": STAMP})
    forever = create(k8s, "forever", ttl=None)
    ttl = TTLReconciler(k8s, clock=Clock(FINISHED + timedelta(days=365)))
    assert ttl.reconcile(running).phase is None and ttl.reconcile(forever).phase is None
    assert exists(k8s, "running") and exists(k8s, "forever")


def test_without_completion_time_the_final_conditions_tell_when_it_finished(k8s: client.ApiClient) -> None:
    conditions = [
        complete("2026-07-30T10:00:00Z", type_="Waiting"),  # not a final condition
        complete("2026-07-30T10:30:00Z", type_="Failed", status="False"),  # not True
        complete("2026-07-30T09:00:00Z", type_="Failed"),
        complete("2026-07-30T10:00:10Z"),  # the latest True Complete/Failed transition
    ]
    run = create(k8s, ttl=30, status={"phase": "Failed", "conditions": conditions})
    assert finished_at(run) == FINISHED + timedelta(seconds=10)
    ttl = TTLReconciler(k8s, clock=Clock(FINISHED + timedelta(seconds=39)))
    assert ttl.reconcile(run).phase is None and exists(k8s)
    ttl = TTLReconciler(k8s, clock=Clock(FINISHED + timedelta(seconds=40)))
    assert ttl.reconcile(run).phase == DELETED and not exists(k8s)


def test_a_finished_run_without_any_time_is_left_alone(k8s: client.ApiClient) -> None:
    run = create(k8s, ttl=0, status={"phase": "Succeeded", "conditions": [{"type": "Complete", "status": "True"}]})
    ttl = TTLReconciler(k8s, clock=Clock(FINISHED + timedelta(days=365)))
    assert ttl.expires_at(run) is None and ttl.reconcile(run).phase is None and exists(k8s)


def test_a_run_replaced_under_the_same_name_is_never_deleted(api: ApiServer, k8s: client.ApiClient) -> None:
    stale = create(k8s, ttl=0)  # the decision is taken on this copy...
    client.CustomObjectsApi(k8s).delete_cluster_custom_object(GROUP, VERSION, PLURAL, "r")
    fresh = create(k8s, ttl=0, status={"phase": "Running"})  # ...while someone recreates the run
    assert fresh["metadata"]["uid"] != stale["metadata"]["uid"]
    api.audit.clear()
    assert TTLReconciler(k8s, clock=Clock(FINISHED + timedelta(hours=1))).reconcile(stale).phase is None
    (delete,) = api.audit.records("delete", "repackruns")
    assert delete.code == 409, "the UID precondition refused it"
    kept = client.CustomObjectsApi(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, "r")
    assert kept["metadata"]["uid"] == fresh["metadata"]["uid"]


def test_a_run_already_gone_counts_as_deleted(k8s: client.ApiClient) -> None:
    run = create(k8s, ttl=0)
    client.CustomObjectsApi(k8s).delete_cluster_custom_object(GROUP, VERSION, PLURAL, "r")
    assert TTLReconciler(k8s, clock=Clock(FINISHED)).reconcile(run).phase == DELETED


def test_other_api_errors_propagate_for_the_next_pass(api: ApiServer, k8s: client.ApiClient) -> None:
    run = create(k8s, ttl=0)
    api.faults.fail("delete", "repackruns", 503, times=1)
    ttl = TTLReconciler(k8s, clock=Clock(FINISHED))
    with pytest.raises(ApiException) as exc:
        ttl.reconcile(run)
    assert exc.value.status == 503 and exists(k8s)
    assert ttl.reconcile(run).phase == DELETED


def test_the_deletion_is_logged(k8s: client.ApiClient, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("json", "info")  # the suite's conftest puts its level back afterwards
    run = create(k8s, ttl=0)
    assert TTLReconciler(k8s, clock=Clock(FINISHED)).reconcile(run).phase == DELETED
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
