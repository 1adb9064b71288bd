"""DryRun: plan a RepackRun on the cluster as it is and write the plan to its status; nothing moves.

Pending → Running (startTime) → Succeeded/Failed, each a resourceVersion-checked status write
(``kit.status.StatusWriter``): a 409 re-reads the run, stops if someone else finished it, and
reapplies only this step's fields; the end is ``StatusWriter.finish``, as for every run. A planner
that does not answer is waited for while Running (``plannerwait``), then the run fails
``PlannerUnavailable``.
"""

from __future__ import annotations

from datetime import datetime

import structlog
from google.protobuf import json_format

from sidecar.api.repackrun import TERMINAL, Condition, Mode, Phase
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.kubeobj import Obj
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.kit.cache import ClusterCache, SnapshotSource, read_cluster
from sidecar.watcher.kit.port import Cluster
from sidecar.watcher.kit.requeue import Reconciled, after
from sidecar.watcher.kit.status import Clock, Hook, StatusWriter, mode_of, phase_of, rfc3339, status_of, utcnow
from sidecar.watcher.plannerwait import UNAVAILABLE, PlannerWait, mark_waiting
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar, planner_error
from sidecar.watcher.source import plan_run

__all__ = ["DryRunReconciler", "dry_run", "wants"]

log = structlog.get_logger("sidecar.watcher")


def wants(run: Obj) -> bool:
    """A DryRun not yet finished (a Running one is resumed: planning again is harmless)."""
    return mode_of(run) == Mode.DRY_RUN and phase_of(run) not in TERMINAL


def _no_hook(_: str) -> None:
    return None


def dry_run(
    cluster: Cluster,
    sidecar: Sidecar,
    cache: ClusterCache | None = None,
    *,
    session_max_age: float = 0.0,
    planner_wait: float = 60.0,
) -> DryRunReconciler:
    """The DryRun reconciler, planning on the cache's snapshot (a fresh read without a cache), or on
    the sidecar's session ``latest`` while it is at most ``session_max_age`` seconds old."""
    snapshot = cache.snapshot if cache is not None else None
    return DryRunReconciler(
        cluster, sidecar, snapshot=snapshot, session_max_age=session_max_age, planner_wait=planner_wait
    )


class DryRunReconciler:
    """Pending → Running → Succeeded/Failed for one run, each step a resourceVersion-checked write."""

    def __init__(
        self,
        cluster: Cluster,
        sidecar: Sidecar,
        *,
        retries: int = 5,
        clock: Clock = utcnow,
        snapshot: SnapshotSource | None = None,
        crash: Hook = _no_hook,
        session_max_age: float = 0.0,
        planner_wait: float = 60.0,
    ) -> None:
        self._wait = PlannerWait(planner_wait)
        self._sidecar = sidecar
        self._clock = clock
        self._snapshot: SnapshotSource = snapshot or (lambda name: read_cluster(cluster, name=name))
        #: plan on the sidecar's session ``latest`` while at most this old (seconds; 0: never)
        self._session_max_age = session_max_age
        self._writer = StatusWriter(cluster, clock=clock, hook=crash, retries=retries)

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
        phase, reason, message, fields = outcome

        def end(cur: Obj) -> Obj | None:  # the conditions so far (a wait for the planner) end with the run
            return {**status_of(cur), **fields, "conditions": []} if wants(cur) else None

        final = self._writer.finish(current, end, phase, reason, message)
        return Reconciled(None if final is None else phase)

    def _waiting_for_planner(self, run: Obj) -> Reconciled:
        return Reconciled(Phase.RUNNING, after(self._clock(), [self._wait.next_try(run)]))

    def _plan(self, run: Obj) -> tuple[Phase, str, str, Obj] | None:
        """How the run ends — (phase, reason, message, the status fields: the service's
        RepackStatus as the CRD's JSON when it planned) — or None while it waits for a planner
        that did not answer."""
        try:
            spec = parse_dict(run.get("spec") or {}, spec_pb2.RepackSpec(), source="spec")
            name = run["metadata"]["name"]
            planned = plan_run(
                self._sidecar, spec, lambda: self._snapshot(name), max_age=self._session_max_age, run=name
            )
        except PLANNER_ERRORS as exc:
            reason, message = planner_error(exc)
            now = self._clock()
            until = self._wait.retry(run, now) if reason == UNAVAILABLE else None
            if until is None:
                return Phase.FAILED, reason, message, {}
            self._waiting(run, f"{message}; retrying until {rfc3339(until)}", now)
            return None
        self._wait.answered(run)
        log.info("repackrun planned", run=name, on=planned.source, age=round(planned.age, 3))
        status = planned.response.status
        verdict = next(c for c in status.conditions if c.type == Condition.COMPLETE)
        fields = dict(json_format.MessageToDict(status, always_print_fields_with_no_presence=True))
        fields.pop("conditions", None)  # the verdict is written by ``finish``, as every run's end
        return Phase(status.phase), verdict.reason, verdict.message, fields

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
