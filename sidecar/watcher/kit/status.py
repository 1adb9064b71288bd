"""The RepackRun status as a journal: resourceVersion-checked writes, conditions, Events, timestamps.

Every step of a run is one write through the status subresource carrying the resourceVersion the
step was computed from. A step is a function of the run it is applied to (``Step``), so a 409 can
re-read the run and re-apply *only that step* to the newer status — or drop it when the re-read
run shows another writer got there first (the step returns None). A write never replaces a
status it has not seen. DryRun and Execute share this module.

Every way a run ends is written by ``StatusWriter.finish`` in one shape (``finished``): the phase,
completionTime, ``Complete`` True (Succeeded) or False (Failed), ``Failed`` True when it failed,
and for Execute, which reports progress, ``Progressing`` False — each with the outcome's reason
and message — then one Event.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from sidecar.api.repackrun import Condition, Mode, Phase
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import EVENTS, REPACKRUNS, TRANSIENT, ApiError, Cluster, Resource

#: the run as re-read -> its new status, or None when the step no longer applies
Step = Callable[[Obj], Obj | None]
Clock = Callable[[], datetime]
#: called with a step label after every status write and every API call (tests crash there)
Hook = Callable[[str], None]

COMPONENT = "repack-watcher"
#: where Events about cluster-scoped objects go (as kubectl and the controllers do)
EVENT_NAMESPACE = "default"

log = structlog.get_logger("sidecar.watcher")


def utcnow() -> datetime:
    return datetime.now(UTC)


def rfc3339(when: datetime) -> str:
    """RFC 3339 in UTC with a Z, to the second (metav1.Time's wire form)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def phase_of(run: Obj) -> str:
    return str((run.get("status") or {}).get("phase") or "")


def mode_of(run: Obj) -> str:
    return str((run.get("spec") or {}).get("mode") or "")


def status_of(run: Obj) -> Obj:
    """A deep copy of the run's status, safe to change."""
    return copy.deepcopy(dict(run.get("status") or {}))


def set_condition(status: Obj, kind: str, state: str, reason: str, message: str, now: datetime) -> None:
    """Upsert condition ``kind``; lastTransitionTime moves only when its status changes."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    new = {"type": kind, "status": state, "reason": reason, "message": message}
    for i, old in enumerate(conditions):
        if old.get("type") == kind:
            same = old.get("status") == state and old.get("lastTransitionTime")
            conditions[i] = {**new, "lastTransitionTime": old["lastTransitionTime"] if same else rfc3339(now)}
            return
    conditions.append({**new, "lastTransitionTime": rfc3339(now)})


def condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def finished(status: Obj, *, mode: str, phase: Phase, reason: str, message: str, now: datetime) -> Obj:
    """``status`` as a finished run's: the one terminal shape (module docstring)."""
    status["phase"] = phase
    status["completionTime"] = rfc3339(now)
    if mode == Mode.EXECUTE:
        set_condition(status, Condition.PROGRESSING, "False", reason, message, now)
    set_condition(status, Condition.COMPLETE, "True" if phase == Phase.SUCCEEDED else "False", reason, message, now)
    if phase == Phase.FAILED:
        set_condition(status, Condition.FAILED, "True", reason, message, now)
    return status


class StatusWriter:
    """Writes steps to an object's status (409 → re-read → re-apply, ``retries`` times) and Events:
    a RepackRun's, or with ``resource`` another cluster-scoped kind's (a RepackPolicy's)."""

    def __init__(
        self, cluster: Cluster, *, clock: Clock, hook: Hook, retries: int = 5, resource: Resource = REPACKRUNS
    ) -> None:
        self._cluster = cluster
        self._clock, self._hook, self._retries = clock, hook, retries
        self._resource = resource
        self._word = resource.kind.lower()

    def read(self, name: str) -> Obj | None:
        try:
            return self._cluster.get(self._resource, name)
        finally:
            self._hook(f"read:{self._word}/{name}")

    def write(self, run: Obj, step: Step, label: str) -> Obj | None:
        """Apply ``step`` to ``run`` and PUT the status with the run's resourceVersion. On 409 the
        run is re-read and the step re-applied to it. Returns the written run, or None when the
        step no longer applies (or the run is gone)."""
        name = run["metadata"]["name"]
        for _ in range(self._retries):
            status = step(run)
            if status is None:
                return None
            status["observedGeneration"] = run["metadata"].get("generation", 1)
            for cond in status.get("conditions") or []:
                cond.setdefault("lastTransitionTime", rfc3339(self._clock()))
            try:
                written = self._cluster.replace(self._resource, {**run, "status": status}, status=True)
            except ApiError as exc:
                if exc.status == 404:
                    return None
                if exc.status != 409:
                    raise
                log.info(f"{self._word} conflict, re-reading", run=name, step=label)
            else:
                log.info(f"{self._word} status", run=name, step=label, phase=status.get("phase"))
                self._hook(f"status:{label}")
                return written
            fresh = self.read(name)
            if fresh is None:
                return None
            run = fresh
        raise RuntimeError(f"{self._resource.kind} {name}: status still conflicting after {self._retries} tries")

    def finish(self, run: Obj, step: Step, phase: Phase, reason: str, message: str) -> Obj | None:
        """End the run: ``step``'s status made ``finished`` (the one terminal shape), written, then
        the Event (a warning when it failed). None when the step no longer applies."""
        now = self._clock()

        def final(current: Obj) -> Obj | None:
            status = step(current)
            if status is None:
                return None
            return finished(status, mode=mode_of(current), phase=phase, reason=reason, message=message, now=now)

        written = self.write(run, final, "finished")
        if written is not None:
            self.event(written, reason, message, warning=phase == Phase.FAILED)
        return written

    def event(self, run: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """A Kubernetes Event about the run; best effort, the status already tells it."""
        meta = run["metadata"]
        stamp = rfc3339(self._clock())
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {
                "apiVersion": self._resource.api_version,
                "kind": self._resource.kind,
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self._cluster.create(EVENTS, body)
        except TRANSIENT as exc:
            log.warning(f"{self._word} event not recorded", run=meta["name"], error=str(exc))
        self._hook(f"event:{reason}")
