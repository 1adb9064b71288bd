"""One pass over a Running Execute run: due evictions, placements, and the finish.

Each phase of the pass reads what it needs, decides, journals the decision (one status write per
batch of placements; evictions, which act first, one write per eviction as it returns), and only
then acts; the next phase starts from the run as written. The pass's placements share one
sidecar session (``placement.Placements``: the cluster decoded once), in which each selection is
recorded as pipelined, so two replacements selected in the same pass never count the same free
cards twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sidecar.api.repackrun import Condition, EvictionPhase, Phase, PlacementPhase, Reason
from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.watcher import observer as observe
from sidecar.watcher.execute import target
from sidecar.watcher.execute.eviction import Evictor, due, read_pod, retry_at
from sidecar.watcher.execute.journal import (
    EvictionRecord,
    PlacementRecord,
    Relocation,
    apply_changes,
    changed,
    done,
    eviction_outcome,
    key,
    relocations_of,
    to_json,
)
from sidecar.watcher.execute.placement import (
    Placements,
    bound_phase,
    is_pending,
    nominate,
    owner_uids,
    replacement_group,
    ungate,
)
from sidecar.watcher.execute.result import freed_now, outcome, result
from sidecar.watcher.kit.cache import SnapshotSource
from sidecar.watcher.kit.port import Cluster
from sidecar.watcher.kit.status import (
    Clock,
    Hook,
    StatusWriter,
    parse_time,
    phase_of,
    rfc3339,
    set_condition,
    status_of,
)
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar, planner_error

Change = tuple[Relocation, Relocation]


@dataclass
class _Batch:
    """Placement decisions not yet journaled: record changes, nominations, gates to lift."""

    changes: list[Change] = field(default_factory=list)
    nominations: list[tuple[Relocation, Obj, str]] = field(default_factory=list)
    ungates: list[Obj] = field(default_factory=list)


@dataclass(frozen=True)
class ExecuteOptions:
    """Seconds: ``cooldown`` after a run that evicted something; ``eviction_timeout`` and
    ``execution_timeout`` counted from the run's startTime; ``grace`` the eviction's
    gracePeriodSeconds when the spec sets none (None: the pod's own)."""

    cooldown: float = 300.0
    eviction_timeout: float = 300.0
    execution_timeout: float = 900.0
    grace: int | None = None
    #: how long a pass decides placements before it journals and nominates what it has
    flush_seconds: float = 0.2
    #: how long admission waits for a planner that does not answer (``plannerwait``)
    planner_wait: float = 60.0


@dataclass(frozen=True)
class Tools:
    """What a pass works with (built once by the reconciler)."""

    options: ExecuteOptions
    writer: StatusWriter
    evictor: Evictor
    sidecar: Sidecar
    snapshot: SnapshotSource
    cluster: Cluster
    clock: Clock
    hook: Hook


class Pass:
    """``run()`` drives one Running run one step further; returns its phase, or None when another
    writer changed it under this pass (the next pass resumes from the newer journal)."""

    def __init__(self, tools: Tools, run: Obj, spec: spec_pb2.RepackSpec) -> None:
        self.t, self.run_obj, self.spec = tools, run, spec
        self.name: str = run["metadata"]["name"]
        plan = run["status"].get("plan") or {}
        summary = plan.get("summary") or {}
        self.goal: str = summary.get("resource", "")
        self.before: float = float(summary.get("fragBeforePercent") or 0.0)
        self.freed_planned: list[str] = list(plan.get("freedNodes") or [])
        self._snap: pb.Snapshot | None = None
        self._placements: Placements | None = None

    def _deadlines(self) -> tuple[datetime, datetime]:
        """(the execution deadline, the eviction deadline), both counted from the run's startTime."""
        start = parse_time(str(self.run_obj["status"]["startTime"]))
        end = start + timedelta(seconds=self.t.options.execution_timeout)
        return end, min(start + timedelta(seconds=self.t.options.eviction_timeout), end)

    def wake(self) -> datetime | None:
        """When the run needs a pass again without an event (None once it left Running): the
        execution deadline, and while evictions are pending their deadline and retries. Rebuilt
        pods arrive as Pod events (the controller maps them to the run through its journal)."""
        if phase_of(self.run_obj) != Phase.RUNNING:
            return None
        end, evict_by = self._deadlines()
        pending = [r for r in relocations_of(self.run_obj["status"]) if r.eviction.phase == EvictionPhase.PENDING]
        retries = [t for t in (retry_at(r) for r in pending) if t is not None]
        return min([end, *([evict_by] if pending else []), *retries])

    def run(self, *, place: bool = True) -> str | None:
        """One pass: due evictions, then (unless ``place`` is False) placements, then the finish when
        every relocation is done or the execution deadline passed. The pass that admitted the run
        (and decoded the cluster for its plan) evicts only: its rebuilt pods arrive as events and the
        next pass places them, so no pass decodes the cluster twice."""
        now = self.t.clock()
        end, evict_by = self._deadlines()
        if now < end and not self._workload_gone():
            return None
        if now < end and not (self._evictions(now, evict_by) and (not place or self._placements_done())):
            return None
        if now < end and not self._workload_step():
            return None
        unfinished = not all(done(r) for r in relocations_of(self.run_obj["status"]))
        if now < end and (unfinished or not target.settled(self._workload())):
            return Phase.RUNNING
        return self._finish(now, end)

    # -- a targeted run's workload (target.py) ------------------------------------------------------
    def _workload(self) -> target.TargetProgress | None:
        return target.progress_of(self.run_obj["status"])

    def _workload_gone(self) -> bool:
        """The workload went away: journal it Deleted, calling off the evictions not yet made."""
        old = self._workload()
        if old is None or target.settled(old) or target.exists(self.t.cluster, old):
            return True
        return self._journal_workload(old, target.deleted(old), cancel=True)

    def _workload_step(self) -> bool:
        """Once no eviction is pending: journal the nominations, send them, record the bindings."""
        old = self._workload()
        rels = relocations_of(self.run_obj["status"])
        if old is None or target.settled(old) or any(r.eviction.phase == EvictionPhase.PENDING for r in rels):
            return True
        new, sends = target.advance(self.t.cluster, old, self.t.hook)
        if not self._journal_workload(old, new):
            return False
        for pod, node in sends:
            current = self._workload()
            if current is None or not nominate(self.t.cluster, pod, node, self.t.hook):
                continue
            if not self._journal_workload(current, target.confirm(current, pod["metadata"]["name"])):
                return False
        return True

    def _journal_workload(self, old: target.TargetProgress, new: target.TargetProgress, cancel: bool = False) -> bool:
        ok, self.run_obj = target.journal(self.t.writer, self.run_obj, old, new, cancel=cancel)
        return ok

    # -- journal ---------------------------------------------------------------------------------
    def _update(self, changes: list[Change], label: str) -> bool:
        """Journal relocation changes (only onto records nobody else changed); Progressing follows.
        False when the run is no longer Running (the pass stops); True otherwise, also when another
        writer changed every record meanwhile (the pass goes on from that newer journal, and acts
        only on what the journal holds: ``_journaled``)."""
        if not changes:
            return True
        now = self.t.clock()
        newer: list[Obj] = []

        def step(cur: Obj) -> Obj | None:
            if phase_of(cur) != Phase.RUNNING:
                return None
            status = status_of(cur)
            if not apply_changes(status, changes):
                newer.append(cur)
                return None
            rels = relocations_of(status)
            evicting = any(r.eviction.phase == EvictionPhase.PENDING for r in rels)
            reason = Reason.EVICTING if evicting else Reason.PLACING
            message = f"{sum(not done(r) for r in rels)} of {len(rels)} relocations unfinished"
            set_condition(status, Condition.PROGRESSING, "True", reason, message, now)
            return status

        written = self.t.writer.write(self.run_obj, step, label)
        if written is None:
            if not newer:
                return False
            self.run_obj = newer[-1]
            return True
        self.run_obj = written
        return True

    def _journaled(self, rel: Relocation) -> bool:
        """Whether ``rel`` is the record the journal holds now (the last write kept this change)."""
        return rel in relocations_of(self.run_obj["status"])

    # -- evictions -------------------------------------------------------------------------------
    def _evictions(self, now: datetime, deadline: datetime) -> bool:
        grace: int | None = self.t.options.grace
        if self.spec.eviction.HasField("grace_period_seconds"):
            grace = int(self.spec.eviction.grace_period_seconds)
        todo = [r for r in relocations_of(self.run_obj["status"]) if due(r, now, deadline)]
        for old in todo:
            # journaled as each call returns, not after the whole batch: a crash between two calls
            # leaves every eviction made so far recorded as made (attempts, phase), none "Pending"
            new = self.t.evictor.attempt(old, grace, now, deadline)
            if not self._update([(old, new)], "evictions"):
                return False
            phase = new.eviction.phase
            if phase == old.eviction.phase or phase == EvictionPhase.PENDING or not self._journaled(new):
                continue
            ev = new.eviction
            observe.eviction(key(new), new.victim_pod_uid, new.from_node_name, eviction_outcome(new), ev.attempts,
                             ev.message)  # fmt: skip
            where = f"{key(new)} on {new.from_node_name}: {new.eviction.message}"
            reason = "Evicted" if phase == EvictionPhase.EVICTED else f"Eviction{phase}"
            self.t.writer.event(self.run_obj, reason, where, warning=phase != EvictionPhase.EVICTED)
        return True

    # -- placements ------------------------------------------------------------------------------
    def _snapshot(self) -> pb.Snapshot:
        """The cluster as this pass sees it (read once)."""
        if self._snap is None:
            self._snap = self.t.snapshot(self.name)
        return self._snap

    def _session(self) -> Placements:
        """This pass's placement session (opened on the sidecar by its first selection)."""
        if self._placements is None:
            self._placements = Placements(self.t.sidecar, self._snapshot(), self.goal, self.freed_planned)
        return self._placements

    def _placements_done(self) -> bool:
        try:
            return self._place_all()
        finally:
            if self._placements is not None:
                self._placements.close()

    def _place_all(self) -> bool:
        """Decide every placement, journaling and acting in batches: a batch is flushed once its
        decisions took ``options.flush_seconds``, so the first nominations reach their pods before
        the scheduler's next cycle, not after the last."""
        batch = _Batch()
        started = time.monotonic()
        for rel in relocations_of(self.run_obj["status"]):
            if rel.eviction.phase != EvictionPhase.EVICTED or done(rel):
                continue
            new, pod, node = self._decide(rel)
            if new != rel:
                batch.changes.append((rel, new))
            if pod is not None and node:
                batch.nominations.append((new, pod, node))
            elif pod is not None:
                batch.ungates.append(pod)
            if batch.nominations and time.monotonic() - started >= self.t.options.flush_seconds:
                if not self._flush(batch):
                    return False
                batch, started = _Batch(), time.monotonic()
        return self._flush(batch)

    def _flush(self, batch: _Batch) -> bool:
        """Journal the batch's decisions, then act on the ones the journal kept."""
        if not self._update(batch.changes, "placements"):
            return False
        for pod in batch.ungates:
            ungate(self.t.cluster, pod, self.t.hook)
        nominated: list[Change] = []
        for rel, pod, node in batch.nominations:
            if not self._journaled(rel):
                continue  # another writer changed this record meanwhile: no action without its journal entry
            if nominate(self.t.cluster, pod, node, self.t.hook):
                ungate(self.t.cluster, pod, self.t.hook)
                nominated.append((rel, changed(rel, phase=PlacementPhase.NOMINATED)))
        return self._update(nominated, "nominated")

    def _decide(self, rel: Relocation) -> tuple[Relocation, Obj | None, str]:
        """(the relocation's next record, the pod to act on once it is journaled, the node to
        nominate there — "" to only remove this project's scheduling gate)."""
        pod = read_pod(self.t.cluster, rel.namespace, rel.victim_pod_name, self.t.hook)
        group = replacement_group(rel, pod, lambda ns, name: owner_uids(self._snapshot()).get((ns, name), ""))
        if pod is None or group is None:
            why = "waiting for the rebuilt pod"
            if pod is not None and pod["metadata"].get("uid") != rel.victim_pod_uid:
                why = f"pod {pod['metadata'].get('uid')} under the victim's name is terminating or not of this workload"
            waiting = Relocation()
            waiting.CopyFrom(rel)
            waiting.placement.CopyFrom(PlacementRecord(phase=PlacementPhase.WAITING_FOR_REPLACEMENT, message=why))
            return waiting, None, ""
        uid, meta = str(pod["metadata"]["uid"]), pod["metadata"]
        known = Relocation()
        known.CopyFrom(rel)
        if rel.placement.replacement_pod_uid not in ("", uid):  # a newer rebuild than the one recorded: start over
            known.placement.CopyFrom(PlacementRecord(phase=PlacementPhase.WAITING_FOR_REPLACEMENT))
        known.replacement_pod_group_name = "" if group == rel.pod_group_name else group
        known.placement.replacement_pod_name, known.placement.replacement_pod_uid = meta["name"], uid
        placement = known.placement
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node:
            phase = bound_phase(known, node)
            where = "its selected node" if known.placement.selected_node_name else "its planned node"
            message = f"bound on {where}" if phase == PlacementPhase.BOUND else "the scheduler bound it elsewhere"
            return changed(known, phase=phase, actual_node_name=node, message=message), None, ""
        if not is_pending(pod):
            return known, None, ""
        if placement.phase == PlacementPhase.NOMINATED:
            return known, pod, ""  # the gate again, for a crash between nomination and un-gating
        if placement.selected_node_name:  # journaled, the nomination not confirmed: send it (again)
            return known, pod, placement.selected_node_name
        session = self._session()
        if not session.knows(uid):  # the cache lags the GET: keep any gate, next pass
            return changed(known, message="the rebuilt pod is not in the watcher's cache yet"), None, ""
        node, why = session.select(known, uid)
        if node:
            return changed(known, selected_node_name=node, message=why), pod, node
        return changed(known, phase=PlacementPhase.WAITING_FOR_SCHEDULER, message=why), pod, ""

    # -- finish ----------------------------------------------------------------------------------
    def _finish(self, now: datetime, end: datetime) -> str | None:
        rels = relocations_of(self.run_obj["status"])
        final = [r if done(r) else _timed_out(r, end) for r in rels]
        workload = self._workload()
        if workload is not None and not target.settled(workload):
            workload = target.not_started(workload)
        snap = self.t.snapshot(self.name)
        skip = [n.pod_uid for n in workload.nominations if n.pod_uid] if workload is not None else []
        freed = freed_now(snap, self.freed_planned, self.goal, skip)
        frag: float | None = None
        note = ""
        try:
            request = service_pb2.EvaluateRequest(snapshot=snap, resources=[self.goal])
            frag = round(self.t.sidecar.evaluate(request).resources[0].fragmentation_percent, 1)
        except PLANNER_ERRORS as exc:
            note = f"fragmentation not measured: {planner_error(exc)[1]}"
        end_state = outcome(final, self.freed_planned, freed, workload)
        summary = result(final, self.freed_planned, freed, frag, self.before, note)
        if workload is not None:
            summary.message += f"; {workload.message}"

        def step(cur: Obj) -> Obj | None:
            if phase_of(cur) != Phase.RUNNING or relocations_of(cur.get("status") or {}) != rels:
                return None  # someone changed the journal since: the next pass decides again
            status = status_of(cur)
            apply_changes(status, list(zip(rels, final, strict=True)))
            status["result"] = to_json(summary)
            if workload is not None:
                status["target"] = {**(status.get("target") or {}), **to_json(workload)}
            return status

        phase, reason, message = end_state.phase, end_state.reason, end_state.message
        return phase if self.t.writer.finish(self.run_obj, step, phase, reason, message) is not None else None


def _timed_out(rel: Relocation, end: datetime) -> Relocation:
    """A relocation unfinished at the execution deadline."""
    eviction = EvictionRecord()
    eviction.CopyFrom(rel.eviction)
    if eviction.phase == EvictionPhase.PENDING:
        eviction.phase, eviction.message = EvictionPhase.FAILED, f"not evicted by the deadline; {eviction.message}"
    message = f"execution deadline {rfc3339(end)} passed while {rel.placement.phase}"
    return changed(rel, eviction=eviction, phase=PlacementPhase.TIMED_OUT, message=message)
