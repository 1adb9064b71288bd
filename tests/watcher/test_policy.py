"""RepackPolicy on the fake cluster port: runs on a schedule as a CronJob's Jobs (one per time, the
most recent missed one only, Forbid, Allow, suspend, history limits, a deleted run not recreated,
a crash between create and status), and for a job that waits (the whenPending check: a targeted
run for the gang blocked by fragmentation, the others' reasons in status and events, retries),
and every bad spec refused naming its field. (The CRD's own refusals and kubectl's view are the
real control plane's: tests/realcluster/test_real_policy.py.)"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sidecar.watcher.execute.reconciler import ExecuteReconciler
from sidecar.watcher.kit.cache import read_cluster
from sidecar.watcher.kit.port import EVENTS, PODGROUPS, REPACKPOLICIES, REPACKRUNS
from sidecar.watcher.kit.status import parse_time, rfc3339
from sidecar.watcher.policy.reconciler import PolicyOptions, PolicyReconciler
from sidecar.watcher.policy.runs import POLICY_LABEL
from sidecar.watcher.sidecarport import InProcessSidecar
from tests.execute_fixtures import NS, Box, guide_box, waiting_job

GUIDE_SPEC: dict[str, Any] = {
    "mode": "DryRun",
    "goals": [{"resource": "huawei.com/ascend-1980"}],
    "scope": {"nodes": {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}}},
}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def at(self, when: datetime) -> None:
        self.now = when


def policy(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"runTemplate": {"metadata": {"labels": {"team": "ml"}}, "spec": copy.deepcopy(GUIDE_SPEC)}}
    body.update(spec)
    return {
        "apiVersion": "repack.volcano.sh/v1alpha1",
        "kind": "RepackPolicy",
        "metadata": {"name": name},
        "spec": body,
    }


class Policies:
    """A policy on the guide's cluster, reconciled by hand at the clock's time."""

    def __init__(self, box: Box, clock: Clock, **options: Any) -> None:
        self.box, self.clock = box, clock
        cluster = box.cluster
        self.reconciler = PolicyReconciler(
            cluster,
            InProcessSidecar(),
            runs=lambda: cluster.items(REPACKRUNS),
            pod_groups=lambda: cluster.items(PODGROUPS),
            snapshot=lambda name: read_cluster(cluster, name=name),
            options=PolicyOptions(**options),
            clock=clock,
        )

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.box.cluster.create(REPACKPOLICIES, body)

    def get(self, name: str = "nightly") -> dict[str, Any]:
        found = self.box.cluster.get(REPACKPOLICIES, name)
        assert found is not None
        return found

    def reconcile(self, name: str = "nightly") -> float | None:
        return self.reconciler.reconcile(self.get(name)).requeue_after

    def runs(self, name: str = "nightly") -> list[dict[str, Any]]:
        mine = [
            r
            for r in self.box.cluster.items(REPACKRUNS)
            if (r["metadata"].get("labels") or {}).get(POLICY_LABEL) == name
        ]
        return sorted(mine, key=lambda r: r["metadata"]["name"])

    def finish(self, run: dict[str, Any], phase: str = "Succeeded", reason: str = "RepackRecommended") -> None:
        complete = {"type": "Complete", "status": "True", "reason": reason, "message": "done"}
        status = {"phase": phase, "completionTime": rfc3339(self.clock()), "conditions": [complete]}
        self.box.cluster.replace(REPACKRUNS, {**run, "status": status}, status=True)

    def events(self, name: str = "nightly") -> list[tuple[str, str, str]]:
        return [(e["type"], e["reason"], e["message"]) for e in self.box.cluster.items(EVENTS)
                if e["involvedObject"]["kind"] == "RepackPolicy" and e["involvedObject"]["name"] == name]  # fmt: skip


def created(p: Policies, name: str = "nightly") -> datetime:
    return parse_time(p.get(name)["metadata"]["creationTimestamp"])


def at_minute(t: datetime, minute: int) -> datetime:
    """The first time after ``t`` whose minute is ``minute`` (seconds 0), plus 10 s."""
    base = t.replace(second=0, microsecond=0)
    step = (minute - base.minute) % 60 or 60
    return base + timedelta(minutes=step, seconds=10)


def test_a_schedule_creates_one_run_per_time_named_after_it() -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock)
        p.create(policy(schedule="*/10 * * * *"))
        start = created(p)
        wait = p.reconcile()
        assert p.runs() == [] and wait is not None and 0 < wait <= 600
        due = at_minute(start, (start.minute // 10 * 10 + 10) % 60)
        clock.at(due)
        p.reconcile()
        p.reconcile()  # again at the same time: nothing more
        (run,) = p.runs()
        scheduled = due.replace(second=0)
        assert run["metadata"]["name"] == f"nightly-{int(scheduled.timestamp()) // 60}"
        assert run["spec"] == GUIDE_SPEC and run["metadata"]["labels"]["team"] == "ml"
        (owner,) = run["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "RepackPolicy", "nightly", p.get()["metadata"]["uid"], True)  # fmt: skip
        status = p.get()["status"]
        assert status["lastScheduleTime"] == rfc3339(scheduled)
        assert status["lastTrigger"]["kind"] == "Schedule" and status["active"] == [run["metadata"]["name"]]
        assert (
            "Normal",
            "SuccessfulCreate",
            f"created run {run['metadata']['name']} for {rfc3339(scheduled)}",
        ) in p.events()


def test_missed_times_are_not_replayed_in_bulk_and_forbid_waits_for_the_active_run() -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock)
        p.create(policy(schedule="*/10 * * * *"))
        clock.at(created(p) + timedelta(hours=2))  # twelve times missed: one run, for the latest
        p.reconcile()
        (run,) = p.runs()
        latest = clock().replace(second=0, microsecond=0)
        latest -= timedelta(minutes=latest.minute % 10)
        assert p.get()["status"]["lastScheduleTime"] == rfc3339(latest)
        clock.at(clock() + timedelta(minutes=10))  # the next time, the run still active: Forbid waits
        p.reconcile()
        assert len(p.runs()) == 1
        p.finish(run)
        p.reconcile()  # the run's end brings the policy back: the waiting time's run now
        assert len(p.runs()) == 2
        assert p.get()["status"]["lastOutcome"]["run"] == run["metadata"]["name"]
        assert p.get()["status"]["lastOutcome"]["reason"] == "RepackRecommended"


def test_allow_and_suspend_and_the_starting_deadline() -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock)
        p.create(policy(schedule="*/10 * * * *", concurrencyPolicy="Allow"))
        for k in (1, 2):
            clock.at(created(p) + timedelta(minutes=10 * k + 1))
            p.reconcile()
        assert len(p.runs()) == 2  # Allow: the first still runs
        p.create(policy("paused", schedule="*/10 * * * *", suspend=True))
        clock.at(created(p, "paused") + timedelta(hours=1))
        p.reconcile("paused")
        assert p.runs("paused") == []
        p.create(policy("strict", schedule="*/10 * * * *", startingDeadlineSeconds=60))
        clock.at(created(p, "strict") + timedelta(minutes=10))
        last = clock().replace(second=0, microsecond=0) - timedelta(minutes=clock().minute % 10)
        clock.at(last + timedelta(seconds=90))  # 90 s after its time: past the 60 s deadline
        p.reconcile("strict")
        assert p.runs("strict") == []


def test_history_limits_delete_the_oldest_finished_runs() -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock)
        p.create(policy(schedule="*/10 * * * *", successfulRunsHistoryLimit=2, failedRunsHistoryLimit=0))
        names = []
        for k in range(1, 6):
            clock.at(created(p) + timedelta(minutes=10 * k + 1))
            p.reconcile()
            run = next(r for r in p.runs() if r["metadata"]["name"] not in names)
            names.append(run["metadata"]["name"])
            p.finish(run, "Failed" if k == 3 else "Succeeded")
        p.reconcile()
        assert [r["metadata"]["name"] for r in p.runs()] == sorted([names[3], names[4]])
        assert p.get()["status"]["lastSuccessfulTime"]


def test_a_deleted_run_is_not_created_again_and_a_crash_after_create_makes_no_second_run() -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock)
        p.create(policy(schedule="*/10 * * * *"))
        clock.at(created(p) + timedelta(minutes=11))
        p.reconcile()
        (run,) = p.runs()
        box.cluster.delete(REPACKRUNS, run["metadata"]["name"])
        p.reconcile()
        assert p.runs() == []
        # the watcher dies right after its create, before the status says so: a new one meets AlreadyExists
        clock.at(clock() + timedelta(minutes=10))

        def die(label: str) -> None:
            if label.startswith("create:"):
                raise RuntimeError("killed")

        dying = Policies(box, clock)
        dying.reconciler._hook = die
        with pytest.raises(RuntimeError):
            dying.reconcile()
        assert len(p.runs()) == 1
        p.reconcile()
        assert len(p.runs()) == 1 and p.get()["status"]["active"] == [p.runs()[0]["metadata"]["name"]]


@pytest.mark.parametrize(
    ("spec", "reason", "message"),
    [
        ({"schedule": "61 * * * *"}, "InvalidSchedule", "spec.schedule: end of range (61) above maximum (59): 61"),
        ({"schedule": "TZ=UTC 0 * * * *"}, "InvalidSchedule", "spec.schedule: cannot use TZ or CRON_TZ in schedule"),
        ({"schedule": "0 * * * *", "timeZone": "Mars/Olympus"}, "InvalidTimeZone", "spec.timeZone: unknown time zone"),
        ({"schedule": "0 * * * *", "concurrencyPolicy": "Replace"}, "InvalidSpec", "spec.concurrencyPolicy: Replace"),
        ({"schedule": "0 * * * *", "failedRunsHistoryLimit": -1}, "InvalidSpec", "spec.failedRunsHistoryLimit: must"),
        ({}, "InvalidSpec", "spec: needs a schedule, a whenPending trigger, or both"),
        ({"schedule": "0 * * * *", "runTemplate": {"spec": {"goals": [{"resource": "nvidia.com/gpu"}]}}},
         "InvalidTemplate", "spec.runTemplate.spec.mode: missing"),
        ({"whenPending": {}, "runTemplate": {"spec": {**GUIDE_SPEC, "for": {"podGroup": "a/b"}}}},
         "InvalidTemplate", "spec.runTemplate.spec.for: set by the whenPending trigger"),
    ],
)  # fmt: skip
def test_a_bad_spec_is_a_false_valid_condition_naming_the_field(
    spec: dict[str, Any], reason: str, message: str
) -> None:
    with guide_box() as box:
        clock = Clock(datetime.now(UTC) + timedelta(days=1))
        p = Policies(box, clock)
        body = policy(**spec)
        if "runTemplate" in spec:
            body["spec"]["runTemplate"] = spec["runTemplate"]
        p.create(body)
        assert p.reconcile() is None
        (valid,) = p.get()["status"]["conditions"]
        assert (valid["type"], valid["status"], valid["reason"]) == ("Valid", "False", reason)
        assert valid["message"].startswith(message), valid["message"]
        assert p.runs() == []
        p.reconcile()
        assert [e for e in p.events() if e[0] == "Warning"] == [("Warning", reason, valid["message"])]  # once


def test_when_pending_makes_room_for_the_job_fragmentation_holds_back() -> None:
    """The guide's nodes hold 2 + 2 + 2 NPUs: a 4-NPU worker waits (fragmentation), an 8-NPU one
    can never fit (capacity), a third job's PodGroup is not enqueued yet. One targeted run is
    created, for the first; status and events say why the others wait."""
    with guide_box() as box:
        waiting_job(box.cluster, "whole-node", 1, 4)
        waiting_job(box.cluster, "too-big", 1, 8)
        box.cluster.create(PODGROUPS, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                       "metadata": {"name": "queued", "namespace": NS},
                                       "spec": {"minMember": 2}, "status": {"phase": "Pending"}})  # fmt: skip
        clock = Clock(datetime.now(UTC))
        p = Policies(box, clock, resync=30)
        p.create(policy("room", whenPending={"minPendingSeconds": 60, "namespaces": [NS]}))
        assert p.reconcile("room") == 30 and p.runs("room") == []  # not waiting long enough yet
        clock.at(clock() + timedelta(seconds=61))
        p.reconcile("room")
        (run,) = p.runs("room")
        assert run["spec"]["for"] == {"podGroup": f"{NS}/whole-node"}
        assert run["metadata"]["annotations"]["repack.volcano.sh/pod-group"] == f"{NS}/whole-node"
        status = p.get("room")["status"]
        assert status["lastTrigger"]["podGroup"] == f"{NS}/whole-node"
        assert status["lastTrigger"]["message"].startswith(f"freeing 1 node lets {NS}/whole-node start")
        waits = {w["podGroup"]: w["verdict"] for w in status["waiting"]}
        assert waits == {f"{NS}/too-big": "Capacity", f"{NS}/queued": "Enqueue"}
        (record,) = status["triggers"]
        assert (record["podGroup"], record["attempt"], record["run"]) == (
            f"{NS}/whole-node",
            1,
            run["metadata"]["name"],
        )
        reasons = {e[1] for e in p.events("room")}
        assert {"Triggered", "WaitsForCapacity", "WaitsForEnqueue"} <= reasons
        events = len(p.events("room"))
        # within the resync nothing is checked; past it, Forbid waits for the active run
        clock.at(clock() + timedelta(seconds=10))
        assert p.reconcile("room") == pytest.approx(20, abs=1)
        clock.at(clock() + timedelta(seconds=30))
        p.reconcile("room")
        assert len(p.runs("room")) == 1 and len(p.events("room")) == events  # verdicts unchanged: no new events
        # the run fails and the job still waits: another attempt only after retrySeconds (1800)
        p.finish(run, "Failed", "EvictionBlocked")
        clock.at(clock() + timedelta(seconds=31))
        p.reconcile("room")
        assert len(p.runs("room")) == 1
        clock.at(parse_time(record["time"]) + timedelta(seconds=1801))
        p.reconcile("room")
        assert [r["metadata"]["name"] for r in p.runs("room")] == sorted(
            [run["metadata"]["name"], run["metadata"]["name"][:-1] + "2"]
        )


def test_a_when_pending_execute_run_starts_the_waiting_job() -> None:
    """The whole story on the fake: the policy's Execute run frees a node and the job runs there."""
    with guide_box() as box:
        (worker,) = waiting_job(box.cluster, "whole-node", 1, 4)
        clock = Clock(datetime.now(UTC) + timedelta(minutes=5))
        p = Policies(box, clock)
        body = policy("room", whenPending={"minPendingSeconds": 60})
        body["spec"]["runTemplate"]["spec"]["mode"] = "Execute"
        p.create(body)
        p.reconcile("room")
        (run,) = p.runs("room")
        assert box.drive(ExecuteReconciler(box.cluster, InProcessSidecar()), run["metadata"]["name"]) == "Succeeded"
        node = box.pod(worker)["spec"]["nodeName"]
        assert node in box.run(run["metadata"]["name"])["status"]["plan"]["freedNodes"]
        p.reconcile("room")
        assert p.get("room")["status"]["lastOutcome"]["reason"] == "ExecutionCompleted"
