"""Execute: replan on the live cluster, evict through the Eviction API, suggest where the rebuilt
pods go, and verify the result — with the run's status as the journal.

A pass (``reconcile``) never sleeps; the controller calls it again. Its steps, each journaled
before the next starts:

1. **Admission** (``serial.py``): held ⇒ Pending with ``Waiting`` True. Admitted ⇒ replan on
   live state (never a DryRun's plan). No moves ⇒ Succeeded with the planner's reason. Otherwise
   ONE write — phase Running, startTime, the plan, one Pending relocation per pod move — before
   the first eviction: that write is the journal.
2. **Evictions** (``eviction.py``): every due relocation is attempted, then one status write.
3. **Placement** (``placement.py``): rebuilt pods recognised by the journal's record; the
   selected node is journaled first, then ``nominatedNodeName`` is patched, then only this
   project's scheduling gate removed, then Nominated is journaled; bindings are recorded. The pass
   that admitted the run stops after its evictions (it decoded the cluster for the plan); the
   rebuilt pods' events bring the next pass, which places them on one sidecar session.
4. **Finish** (``result.py``, which holds the outcome table): when every relocation is terminal,
   or at the execution deadline (unfinished ⇒ TimedOut): result, then ``StatusWriter.finish``
   (phase, conditions, completionTime, Event) — the one way every run ends, here and before the
   journal exists (InvalidSpec, PlannerUnavailable, a replan with nothing to do).

Crash safety: every decision is in the status before it is acted on, each action is idempotent
given the journal (an evicted victim is recognised by UID; a nomination is re-sent), and every
write carries the resourceVersion it was computed from (``status.StatusWriter``): after a 409 a
step is re-applied only to records nobody else changed. ``crash`` is called with a label after
every status write and API call, so tests can kill the reconciler at each point and resume.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog
from google.protobuf import json_format

from sidecar.api.repackrun import TERMINAL, Condition, Mode, Phase, Reason
from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.execute import target
from sidecar.watcher.execute.eviction import Evictor
from sidecar.watcher.execute.journal import ExecutionResult, relocations_from_plan, to_json
from sidecar.watcher.execute.progress import ExecuteOptions, Pass, Tools
from sidecar.watcher.execute.serial import ANOTHER_RUN_ACTIVE, COOLDOWN_ACTIVE, hold
from sidecar.watcher.kit.cache import SnapshotSource, read_cluster
from sidecar.watcher.kit.port import PODGROUPS, REPACKRUNS, Cluster
from sidecar.watcher.kit.requeue import Reconciled, after
from sidecar.watcher.kit.status import (
    Clock,
    Hook,
    StatusWriter,
    condition,
    mode_of,
    phase_of,
    rfc3339,
    set_condition,
    status_of,
    utcnow,
)
from sidecar.watcher.plannerwait import UNAVAILABLE, PlannerWait, mark_waiting
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar, planner_error
from sidecar.watcher.source import plan_run

RunSource = Callable[[], list[Obj]]

log = structlog.get_logger("sidecar.watcher")


def wants(run: Obj) -> bool:
    """An Execute run not yet finished (Pending ones wait for admission, Running ones resume)."""
    return mode_of(run) == Mode.EXECUTE and phase_of(run) not in TERMINAL


def _no_hook(_: str) -> None:
    return None


def _admitted(status: Obj, now: datetime) -> None:
    """Waiting False Admitted: the run left admission (the one place that writes it)."""
    set_condition(status, Condition.WAITING, "False", Reason.ADMITTED, f"admitted at {rfc3339(now)}", now)


def _pending(run: Obj) -> bool:
    return phase_of(run) in ("", Phase.PENDING)


class ExecuteReconciler:
    """Drives Execute runs one pass at a time; any instance resumes any run from its status."""

    def __init__(
        self,
        cluster: Cluster,
        sidecar: Sidecar,
        *,
        options: ExecuteOptions | None = None,
        clock: Clock = utcnow,
        snapshot: SnapshotSource | None = None,
        runs: RunSource | None = None,
        crash: Hook = _no_hook,
        retries: int = 5,
        session_max_age: float = 0.0,
    ) -> None:
        self.options = options or ExecuteOptions()
        self._wait = PlannerWait(self.options.planner_wait)
        #: when the run admission just left Pending needs a pass again (set by ``_admit``)
        self._wake: datetime | None = None
        #: plan on the sidecar's session ``latest`` while at most this old (seconds; 0: never)
        self._session_max_age = session_max_age
        self._cluster, self._sidecar, self._clock, self._hook = cluster, sidecar, clock, crash
        self._snapshot: SnapshotSource = snapshot or (lambda name: read_cluster(cluster, name=name))
        self._runs: RunSource = runs or self._list_runs
        self._writer = StatusWriter(cluster, clock=clock, hook=crash, retries=retries)
        self._tools = Tools(
            options=self.options,
            writer=self._writer,
            evictor=Evictor(cluster, crash),
            sidecar=sidecar,
            snapshot=self._snapshot,
            cluster=cluster,
            clock=clock,
            hook=crash,
        )

    def wants(self, run: Obj) -> bool:
        return wants(run)

    def reconcile(self, run: Obj) -> Reconciled:
        """One pass over ``run``; returns the phase it reached, or None when it is not ours (not an
        unfinished Execute run, or another writer changed it under this pass: the next pass resumes),
        and when the run needs a pass again without an event (a cooldown's end, the planner's
        backoff, an eviction retry, the eviction and execution deadlines)."""
        if not wants(run):
            return Reconciled()
        now = self._clock()
        try:
            spec = parse_dict(run.get("spec") or {}, spec_pb2.RepackSpec(), source="spec")
        except InputError as exc:
            failed = self._fail_early(run, Reason.INVALID_SPEC, str(exc), now, admitted=False)
            return Reconciled(None if failed is None else phase_of(failed))
        current: Obj | None = run
        admitted = _pending(run)
        if admitted:
            self._wake = None
            current = self._admit(run, spec, now)
            if current is None or phase_of(current) != Phase.RUNNING:
                return Reconciled(None if current is None else phase_of(current), after(now, [self._wake]))
        assert current is not None
        step = Pass(self._tools, current, spec)
        return Reconciled(step.run(place=not admitted), after(self._clock(), [step.wake()]))

    # -- admission -------------------------------------------------------------------------------
    def _list_runs(self) -> list[Obj]:
        listed = self._cluster.listing(REPACKRUNS).items
        self._hook("list:repackruns")
        return listed

    def _admit(self, run: Obj, spec: spec_pb2.RepackSpec, now: datetime) -> Obj | None:
        held = hold(run, self._runs(), now, self.options.cooldown)
        waiting = condition(run.get("status") or {}, Condition.WAITING) or {}
        if held is not None:
            same = (waiting.get("status"), waiting.get("reason"), waiting.get("message"))
            self._wake = held.until  # a cooldown ends by itself; another run's progress comes as an event
            if phase_of(run) == Phase.PENDING and same == ("True", held.reason, held.message):
                return run  # still held the same way: nothing to write, log or announce

            def wait(cur: Obj) -> Obj | None:
                if not _pending(cur):
                    return None
                status = {**status_of(cur), "phase": Phase.PENDING}
                set_condition(status, Condition.WAITING, "True", held.reason, held.message, now)
                return status

            log.info("repackrun held", run=run["metadata"]["name"], reason=held.reason, message=held.message)
            written = self._writer.write(run, wait, "waiting")
            if written is not None:
                self._writer.event(written, held.reason, f"held: {held.message}")
            return written
        name = run["metadata"]["name"]
        if waiting.get("status") == "True" and waiting.get("reason") in (ANOTHER_RUN_ACTIVE, COOLDOWN_ACTIVE):
            log.info("repackrun released", run=name, was=waiting.get("reason"))  # held until now: say so once
            self._writer.event(run, "Released", f"no longer held ({waiting.get('reason')}): admitting")
        if PlannerWait.since(run) is not None and not self._wait.due(run, now):
            self._wake = self._wait.next_try(run)
            return run  # waiting for the planner, not yet time to ask again
        try:
            planned = plan_run(
                self._sidecar, spec, lambda: self._snapshot(name), max_age=self._session_max_age, run=name
            )
        except PLANNER_ERRORS as exc:
            reason, message = planner_error(exc)
            until = self._wait.retry(run, now) if reason == UNAVAILABLE else None
            if until is None:
                return self._fail_early(run, reason, message, now, admitted=True)
            self._wake = self._wait.next_try(run)
            return self._wait_for_planner(run, f"{message}; retrying until {rfc3339(until)}", now)
        self._wait.answered(run)
        response, plan = planned.response, planned.response.status.plan
        plan_json = json_format.MessageToDict(plan, always_print_fields_with_no_presence=True)
        if not plan.moves:
            return self._nothing_to_do(run, response.status, plan_json, now)
        rels = relocations_from_plan(plan, planned.snapshot)
        workload = target.initial(plan, self._pod_group_uid(plan.target.pod_group)) if plan.target.pod_group else None
        nodes = ", ".join(plan.freed_nodes)
        message = f"{len(rels)} pods to move, {plan.summary.moved_card_count:g} cards, to free {nodes}"

        retry = False

        def journal(cur: Obj) -> Obj | None:
            nonlocal retry
            if not _pending(cur):
                return None  # another writer admitted it (and wrote its own journal) meanwhile
            if retry and hold(cur, self._runs(), now, self.options.cooldown) is not None:
                return None  # after a 409: admitted only if still admissible
            retry = True
            status = status_of(cur)
            status.update(phase=Phase.RUNNING, startTime=rfc3339(now), plan=plan_json)
            status["warnings"] = list(response.status.warnings)
            status["relocations"] = [to_json(r) for r in rels]
            if workload is not None:
                status["target"] = to_json(workload)
            _admitted(status, now)
            set_condition(status, Condition.PROGRESSING, "True", Reason.EVICTING, message, now)
            return status

        written = self._writer.write(run, journal, "journal")
        log.info("repackrun admitted", run=run["metadata"]["name"], journaled=written is not None, moves=message)
        if written is not None:
            self._writer.event(written, Reason.ADMITTED, f"replanned on {planned.describe()}: {message}")
        return written

    def _pod_group_uid(self, key: str) -> str:
        """The UID of the targeted PodGroup (namespace/name) as the journal records it ("" when gone)."""
        namespace, _, name = key.partition("/")
        group = self._cluster.get(PODGROUPS, name, namespace)
        self._hook(f"get:podgroup/{key}")
        return str(group["metadata"].get("uid") or "") if group is not None else ""

    def _wait_for_planner(self, run: Obj, message: str, now: datetime) -> Obj | None:
        """Pending with Waiting True PlannerUnavailable (written, logged and announced when it begins
        or its message changes): the next reconcile after the backoff asks again."""
        if not mark_waiting(status_of(run), message, now):
            return run

        def wait(cur: Obj) -> Obj | None:
            if not _pending(cur):
                return None
            status = {**status_of(cur), "phase": Phase.PENDING}
            mark_waiting(status, message, now)
            return status

        log.warning("repackrun waiting for the planner", run=run["metadata"]["name"], message=message)
        written = self._writer.write(run, wait, "waiting")
        if written is not None:
            self._writer.event(written, UNAVAILABLE, message, warning=True)
        return written

    def _nothing_to_do(self, run: Obj, planned: plan_pb2.RepackStatus, plan_json: Obj, now: datetime) -> Obj | None:
        """Replan found no moves: Succeeded with the planner's reason (NoFragmentation, InsufficientImprovement)."""
        complete = next((c for c in planned.conditions if c.type == Condition.COMPLETE), None)
        reason = complete.reason if complete is not None else Reason.INSUFFICIENT_IMPROVEMENT
        message = complete.message if complete is not None else "the replan has no moves"
        before = plan_json.get("summary", {}).get("fragBeforePercent", 0.0)
        result = ExecutionResult(
            frag_after_percent=before, metrics_verified=True, message=f"nothing evicted: {message}"
        )

        def done(cur: Obj) -> Obj | None:
            if not _pending(cur):
                return None
            status = status_of(cur)
            status.update(startTime=rfc3339(now), plan=plan_json, relocations=[], result=to_json(result))
            status["warnings"] = list(planned.warnings)
            _admitted(status, now)
            return status

        return self._writer.finish(run, done, Phase.SUCCEEDED, reason, message)

    def _fail_early(self, run: Obj, reason: str, message: str, now: datetime, *, admitted: bool) -> Obj | None:
        """Failed before anything was evicted (InvalidSpec, PlannerUnavailable)."""

        def failed(cur: Obj) -> Obj | None:
            if not _pending(cur):
                return None
            status = status_of(cur)
            status["relocations"] = []
            status["result"] = to_json(ExecutionResult(message=f"nothing evicted: {message}"))
            if admitted:
                status["startTime"] = rfc3339(now)
                _admitted(status, now)
            return status

        return self._writer.finish(run, failed, Phase.FAILED, reason, message)


__all__ = ["ExecuteOptions", "ExecuteReconciler", "wants"]
