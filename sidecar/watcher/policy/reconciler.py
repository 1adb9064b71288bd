"""RepackPolicy: RepackRuns created from a template on a schedule and for a job that waits.

One pass over a policy (leader only, as every controller of the watcher):

1. **Read** the spec (``spec.py``); a problem is the ``Valid`` condition False naming the field
   (and a Warning event when it changes); nothing is created.
2. **Its runs** (``runs.py``): ``active`` (unfinished), ``lastOutcome``/``lastSuccessfulTime``
   from the newest finished one, and finished runs past the history limits deleted, oldest first.
3. **Schedule** (when set, not suspended): CronJob's arithmetic (``schedule.py``): the most
   recent scheduled time not yet run, within ``startingDeadlineSeconds``, gets one run named
   after it; missed times are never replayed in bulk; under ``Forbid`` a due time waits while a
   run is active (and is missed past its deadline). The next time comes back as the requeue.
4. **whenPending** (when set, not suspended, no active run under ``Forbid``), at most every
   ``resync`` seconds: the candidates (``waiting.py``) go to the sidecar's CheckPending; the
   first blocked by fragmentation gets a targeted run (``for`` = that PodGroup), recorded in
   ``status.triggers``; ``status.waiting`` says why the others wait, and an event tells each new
   verdict that is not fragmentation (capacity, the enqueue action, no plan within budgets).
5. **Status**, written only when it changed.

Crash safety is the deterministic run names: a run is created before its trigger is recorded,
so a restart in between re-creates the same name and meets AlreadyExists (one run per trigger);
a run deleted after it was recorded is not created again.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from sidecar.api.repackrun import Phase, Waits
from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1.policy_pb2 import TriggerRecord
from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.watcher import observer as observe
from sidecar.watcher.execute.journal import stamp, to_json
from sidecar.watcher.kit.cache import SnapshotSource
from sidecar.watcher.kit.port import REPACKPOLICIES, REPACKRUNS, ApiError, Cluster
from sidecar.watcher.kit.requeue import Reconciled, soonest
from sidecar.watcher.kit.status import Clock, Hook, StatusWriter, parse_time, phase_of, rfc3339, set_condition, utcnow
from sidecar.watcher.policy import runs as R
from sidecar.watcher.policy.schedule import TOO_MANY_MISSED, next_time, requeue_after, run_name
from sidecar.watcher.policy.spec import Concurrency, Invalid, PolicyError, PolicySpec, read
from sidecar.watcher.policy.waiting import candidates, records_of
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar, planner_error

log = structlog.get_logger("sidecar.watcher")
VALID = "Valid"
#: verdicts a policy tells in an event (not fragmentation: why no run is created for the group)
TOLD = {Waits.CAPACITY: "WaitsForCapacity", Waits.ENQUEUE: "WaitsForEnqueue", Waits.NO_PLAN: "NoPlan"}


@dataclass(frozen=True)
class PolicyOptions:
    #: seconds between two whenPending checks of one policy
    resync: float = 30.0
    #: targeted plans one check may try
    max_plans: int = 3
    #: PodGroups kept in status.waiting, trigger records in status.triggers
    waiting_shown: int = 20
    triggers_kept: int = 100
    #: events about verdicts one check may emit
    events_per_check: int = 5


def _no_hook(_: str) -> None:
    return None


class PolicyReconciler:
    def __init__(
        self,
        cluster: Cluster,
        sidecar: Sidecar,
        *,
        runs: Callable[[], list[Obj]],
        pod_groups: Callable[[], list[Obj]],
        snapshot: SnapshotSource,
        options: PolicyOptions | None = None,
        clock: Clock = utcnow,
        crash: Hook = _no_hook,
    ) -> None:
        self._cluster, self._sidecar = cluster, sidecar
        self._runs, self._pod_groups, self._snapshot = runs, pod_groups, snapshot
        self.options = options or PolicyOptions()
        self._clock, self._hook = clock, crash
        self._writer = StatusWriter(cluster, clock=clock, hook=crash, resource=REPACKPOLICIES)

    def wants(self, policy: Obj) -> bool:
        return not (policy.get("metadata") or {}).get("deletionTimestamp")

    def reconcile(self, policy: Obj) -> Reconciled:
        now = self._clock()
        before = copy.deepcopy(dict(policy.get("status") or {}))
        status = copy.deepcopy(before)
        mine = R.owned(policy, self._runs())
        try:
            spec = read(policy)
        except PolicyError as exc:
            self._outcome(status, mine)
            set_condition(status, VALID, "False", exc.reason, str(exc.error), now)
            self._write(policy, before, status)
            return Reconciled()
        set_condition(status, VALID, "True", "Valid", "the schedule, trigger and run template are valid", now)
        mine = self._history(spec, mine)
        requeue: list[float | None] = []
        if not spec.suspend:
            if spec.schedule is not None:
                requeue.append(self._scheduled(policy, spec, status, mine, now))
            if spec.pending is not None:
                requeue.append(self._pending(policy, spec, status, mine, now))
        self._outcome(status, mine)
        self._write(policy, before, status)
        return Reconciled(requeue_after=soonest(requeue))

    # -- runs ------------------------------------------------------------------------------------
    def _history(self, spec: PolicySpec, mine: list[Obj]) -> list[Obj]:
        """Delete the finished runs past the limits (oldest first); returns the runs kept."""
        gone: set[str] = set()
        for run in R.beyond_history(mine, spec.successful_history, spec.failed_history):
            meta = run["metadata"]
            try:
                self._cluster.delete(REPACKRUNS, meta["name"], uid=meta.get("uid", ""))
            except ApiError as exc:
                if exc.status not in (404, 409):
                    raise
            self._hook(f"delete:repackrun/{meta['name']}")
            gone.add(meta["name"])
        return [r for r in mine if r["metadata"]["name"] not in gone]

    @staticmethod
    def _outcome(status: Obj, mine: list[Obj]) -> None:
        status["active"] = sorted(r["metadata"]["name"] for r in R.active(mine))
        done = R.finished_order(mine)
        if done:
            last = done[-1]
            run_status = last.get("status") or {}
            verdict: Obj = next((c for c in run_status.get("conditions") or [] if c.get("status") == "True"), {})
            status["lastOutcome"] = {
                "run": last["metadata"]["name"],
                "phase": phase_of(last),
                "reason": verdict.get("reason", ""),
                "message": verdict.get("message", ""),
                "completionTime": run_status.get("completionTime", ""),
            }
        succeeded = [r for r in done if phase_of(r) == Phase.SUCCEEDED]
        if succeeded:
            status["lastSuccessfulTime"] = (succeeded[-1].get("status") or {}).get("completionTime", "")

    def _create(self, policy: Obj, body: Obj, status: Obj, now: datetime) -> bool:
        """Create the run (AlreadyExists: it was, before a restart); False when the API refuses the
        template (``Valid`` False InvalidTemplate with the API server's words)."""
        try:
            self._cluster.create(REPACKRUNS, body)
        except ApiError as exc:
            if exc.status == 409:
                log.info(
                    "repackpolicy run already created", policy=policy["metadata"]["name"], run=body["metadata"]["name"]
                )
            elif exc.status in (400, 422):
                message = f"the API server refused run {body['metadata']['name']}: {exc.message}"
                set_condition(status, VALID, "False", Invalid.TEMPLATE, f"spec.runTemplate: {message}", now)
                return False
            else:
                raise
        finally:
            self._hook(f"create:repackrun/{body['metadata']['name']}")
        return True

    # -- schedule --------------------------------------------------------------------------------
    def _scheduled(self, policy: Obj, spec: PolicySpec, status: Obj, mine: list[Obj], now: datetime) -> float | None:
        assert spec.schedule is not None
        created = parse_time(str(policy["metadata"].get("creationTimestamp") or rfc3339(now)))
        last = parse_time(status["lastScheduleTime"]) if status.get("lastScheduleTime") else None
        try:
            due, missed = next_time(spec.schedule, created=created, last_scheduled=last, now=now,
                                    starting_deadline_seconds=spec.starting_deadline)  # fmt: skip
        except InputError as exc:
            set_condition(status, VALID, "False", Invalid.SCHEDULE, str(exc), now)
            return None
        if due is not None and missed > TOO_MANY_MISSED:
            self._writer.event(policy, "TooManyMissedTimes", f"too many missed start times: {missed}", warning=True)
        if due is not None and not (spec.concurrency == Concurrency.FORBID and R.active(mine)):
            name = run_name(policy["metadata"]["name"], due)
            body = R.run_object(policy, spec.template, name, R.SCHEDULE, now=now, scheduled=due)
            if self._create(policy, body, status, now):
                mine.append(body | {"status": {}})
                last = due
                status["lastScheduleTime"] = rfc3339(due)
                status["lastTrigger"] = {"kind": R.SCHEDULE, "run": name, "time": rfc3339(now),
                                         "scheduledTime": rfc3339(due)}  # fmt: skip
                self._writer.event(policy, "SuccessfulCreate", f"created run {name} for {rfc3339(due)}")
                observe.policy_run(policy["metadata"]["name"], R.SCHEDULE, name, rfc3339(due))
        wait = requeue_after(spec.schedule, created=created, last_scheduled=last, now=now)
        return None if wait is None else wait.total_seconds()

    # -- whenPending -----------------------------------------------------------------------------
    def _pending(self, policy: Obj, spec: PolicySpec, status: Obj, mine: list[Obj], now: datetime) -> float:
        assert spec.pending is not None
        resync = self.options.resync
        checked = parse_time(status["lastCheckTime"]) if status.get("lastCheckTime") else None
        if checked is not None and now - checked < timedelta(seconds=resync):
            return (checked + timedelta(seconds=resync) - now).total_seconds()
        if spec.concurrency == Concurrency.FORBID and R.active(mine):
            return resync  # checked again once the active run ends (its events bring the policy back)
        status["lastCheckTime"] = rfc3339(now)
        records = records_of(status)
        by_name = {r["metadata"]["name"]: r for r in self._runs()}
        found = candidates(self._pod_groups(), spec.pending, records, by_name, now)
        if not found:
            status["waiting"] = []
            return resync
        name = policy["metadata"]["name"]
        keys = [c.key for c in found]
        request = service_pb2.CheckPendingRequest(
            snapshot=self._snapshot(name), spec=spec.run, pod_groups=keys, max_plans=self.options.max_plans
        )
        try:
            verdicts = list(self._sidecar.check_pending(request).verdicts)
        except PLANNER_ERRORS as exc:
            reason, message = planner_error(exc)
            self._writer.event(policy, reason, f"whenPending check not made: {message}", warning=True)
            return resync
        told, triggered = 0, False
        old = {w.get("podGroup"): w for w in status.get("waiting") or []}
        waiting: list[Obj] = []
        for cand, verdict in zip(found, verdicts, strict=True):
            since = old.get(cand.key, {}).get("since") or rfc3339(now)
            entry = {"podGroup": cand.key, "verdict": verdict.verdict, "message": verdict.message, "since": since}
            if verdict.verdict == Waits.FRAGMENTATION and not triggered:
                run = R.pending_name(name, cand.uid, cand.attempt)
                body = R.run_object(policy, spec.template, run, R.PENDING, now=now, pod_group=cand.key)
                if self._create(policy, body, status, now):
                    mine.append(body | {"status": {}})
                    records.append(TriggerRecord(pod_group=cand.key, pod_group_uid=cand.uid, attempt=cand.attempt,
                                                 run=run, time=stamp(now)))  # fmt: skip
                    status["lastTrigger"] = {"kind": R.PENDING, "run": run, "time": rfc3339(now),
                                             "podGroup": cand.key, "message": verdict.message}  # fmt: skip
                    triggered = True
                    self._writer.event(policy, "Triggered", f"created run {run} for {cand.key}, blocked by "
                                       f"fragmentation: {verdict.message}")  # fmt: skip
                    observe.policy_run(name, R.PENDING, run, cand.key)
                continue
            new = verdict.verdict in TOLD and old.get(cand.key, {}).get("verdict") != verdict.verdict
            if new and told < self.options.events_per_check:
                self._writer.event(policy, TOLD[Waits(verdict.verdict)], f"{cand.key}: {verdict.message}")
                told += 1
            waiting.append(entry)
        status["waiting"] = waiting[: self.options.waiting_shown]
        status["triggers"] = [to_json(r) for r in records[-self.options.triggers_kept :]]
        return resync

    # -- status ----------------------------------------------------------------------------------
    def _write(self, policy: Obj, before: Obj, status: Obj) -> None:
        """Write ``status`` when it differs from what was read (a re-read after a conflict gets it too)."""
        status.setdefault("active", [])
        if {**status, "observedGeneration": None} == {**before, "observedGeneration": None} and before.get(
            "observedGeneration"
        ) == policy["metadata"].get("generation", 1):
            return
        valid = next((c for c in status.get("conditions") or [] if c.get("type") == VALID), None)
        was = next((c for c in before.get("conditions") or [] if c.get("type") == VALID), None)
        written = self._writer.write(policy, lambda _cur: copy.deepcopy(status), "policy")
        invalid = valid is not None and valid.get("status") == "False"
        changed = was is None or (was.get("status"), was.get("message")) != ("False", (valid or {}).get("message"))
        if written is not None and valid is not None and invalid and changed:
            self._writer.event(written, str(valid.get("reason")), str(valid.get("message")), warning=True)


def owner_policies(kind: str, run: Obj) -> list[str]:
    """A run's events go to the policy that created it (its outcome, history, Forbid's release)."""
    owner = R.owner_of(run)
    return [owner] if owner else []


__all__ = ["PolicyOptions", "PolicyReconciler", "owner_policies"]
