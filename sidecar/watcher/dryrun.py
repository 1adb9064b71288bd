"""DryRun: plan a RepackRun on the cluster as it is and write the plan to its status; nothing moves.

Pending → Running (startTime) → Succeeded/Failed (completionTime), each a resourceVersion-checked
status write (``status.StatusWriter``): a 409 re-reads the run, stops if someone else finished it,
and reapplies only this step's fields. A planner that does not answer is waited for while Running
(``plannerwait``), then the run fails ``PlannerUnavailable``.
"""

from __future__ import annotations

from datetime import datetime

import structlog
from google.protobuf import json_format
from kubernetes import client

from sidecar.api.repackrun import TERMINAL, Condition, Mode, Phase
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.kubeobj import Obj
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.cluster import SnapshotSource, read_cluster
from sidecar.watcher.planner import PLANNER_ERRORS, Planner, planner_error
from sidecar.watcher.plannerwait import UNAVAILABLE, PlannerWait, mark_waiting
from sidecar.watcher.requeue import Reconciled, after
from sidecar.watcher.source import plan_run
from sidecar.watcher.status import (
    Clock,
    Hook,
    StatusWriter,
    mode_of,
    phase_of,
    rfc3339,
    status_of,
    utcnow,
)

__all__ = ["DryRunReconciler", "failed", "wants"]

log = structlog.get_logger("sidecar.watcher")


def wants(run: Obj) -> bool:
    """A DryRun not yet finished (a Running one is resumed: planning again is harmless)."""
    return mode_of(run) == Mode.DRY_RUN and phase_of(run) not in TERMINAL


def failed(reason: str, message: str) -> Obj:
    return {
        "phase": Phase.FAILED,
        "conditions": [{"type": Condition.FAILED, "status": "True", "reason": reason, "message": message}],
    }


def _no_hook(_: str) -> None:
    return None


class DryRunReconciler:
    """Pending → Running → Succeeded/Failed for one run, each step a resourceVersion-checked write."""

    def __init__(
        self,
        api: client.ApiClient,
        planner: Planner,
        *,
        retries: int = 5,
        clock: Clock = utcnow,
        snapshot: SnapshotSource | None = None,
        crash: Hook = _no_hook,
        session_max_age: float = 0.0,
        planner_wait: float = 60.0,
    ) -> None:
        self._api = api
        self._wait = PlannerWait(planner_wait)
        self._planner = planner
        self._clock = clock
        self._snapshot: SnapshotSource = snapshot or (lambda name: read_cluster(api, name=name))
        #: plan on the sidecar's session ``latest`` while at most this old (seconds; 0: never)
        self._session_max_age = session_max_age
        self._writer = StatusWriter(api, clock=clock, hook=crash, retries=retries)

    def wants(self, run: Obj) -> bool:
        return wants(run)

    def reconcile(self, run: Obj) -> Reconciled:
        """Drive ``run`` to a terminal phase; returns that phase, or None when the run is not ours
        (not a DryRun, already finished, or finished by another writer meanwhile). A run waiting
        for the planner stays Running and asks to be requeued when its backoff ends."""
        if not wants(run):
            return Reconciled()
        current: Obj | None = run
        if not phase_of(run):
            current = self._write(run, {"phase": Phase.PENDING}, "pending")
        if current is not None and phase_of(current) == Phase.PENDING:
            current = self._write(current, {"phase": Phase.RUNNING, "startTime": rfc3339(self._clock())}, "running")
        if current is None:
            return Reconciled()
        if PlannerWait.since(current) is not None and not self._wait.due(current, self._clock()):
            return self._waiting_for_planner(current)  # not yet time to ask again
        outcome = self._plan(current)
        if outcome is None:
            return self._waiting_for_planner(current)
        outcome["completionTime"] = rfc3339(self._clock())
        final = self._write(current, outcome, "finished")
        if final is None:
            return Reconciled()
        status = final["status"]
        cond: Obj = next(iter(status.get("conditions") or []), {})
        warning = status["phase"] != Phase.SUCCEEDED
        self._writer.event(final, cond.get("reason", status["phase"]), cond.get("message", ""), warning=warning)
        return Reconciled(str(status["phase"]))

    def _waiting_for_planner(self, run: Obj) -> Reconciled:
        return Reconciled(Phase.RUNNING, after(self._clock(), [self._wait.next_try(run)]))

    def _plan(self, run: Obj) -> Obj | None:
        """The status fields of the finished run: the service's RepackStatus as the CRD's JSON;
        None while the run waits for a planner that did not answer."""
        try:
            spec = parse_dict(run.get("spec") or {}, spec_pb2.RepackSpec(), source="spec")
            name = run["metadata"]["name"]
            planned = plan_run(
                self._planner, spec, lambda: self._snapshot(name), max_age=self._session_max_age, run=name
            )
        except PLANNER_ERRORS as exc:
            reason, message = planner_error(exc)
            now = self._clock()
            until = self._wait.retry(run, now) if reason == UNAVAILABLE else None
            if until is None:
                return failed(reason, message)
            self._waiting(run, f"{message}; retrying until {rfc3339(until)}", now)
            return None
        self._wait.answered(run)
        log.info("repackrun planned", run=name, on=planned.source, age=round(planned.age, 3))
        return dict(json_format.MessageToDict(planned.response.status, always_print_fields_with_no_presence=True))

    def _waiting(self, run: Obj, message: str, now: datetime) -> None:
        """Waiting True PlannerUnavailable on the Running run (written, logged and announced when it
        begins or its message changes)."""
        status = status_of(run)
        if not mark_waiting(status, message, now):
            return
        log.warning("repackrun waiting for the planner", run=run["metadata"]["name"], message=message)
        written = self._write(run, {"conditions": status["conditions"]}, "waiting")
        if written is not None:
            self._writer.event(written, UNAVAILABLE, message, warning=True)

    def _write(self, run: Obj, fields: Obj, label: str) -> Obj | None:
        """Merge ``fields`` into the status; after a 409 only while the re-read run is still ours."""

        def step(current: Obj) -> Obj | None:
            return {**status_of(current), **fields} if wants(current) else None

        return self._writer.write(run, step, f"dryrun-{label}")
