"""ttlSecondsAfterFinished: delete a finished RepackRun once its time is up, as the Job TTL controller does.

A run is finished when its phase is Succeeded or Failed. It finished at ``status.completionTime``,
or, for a status without one, at the latest ``lastTransitionTime`` of a Complete or Failed condition
that is True; a finished run with neither is left alone (logged), since its age is unknown. The
delete carries the run's UID as a precondition, so a run deleted and created again under the same
name meanwhile is never removed by a stale decision. Deleting a run never rolls back what it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from sidecar.api.repackrun import TERMINAL, Condition
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import REPACKRUNS, ApiError, Cluster
from sidecar.watcher.kit.requeue import Reconciled, after

DELETED = "Deleted"
#: conditions whose True transition marks the end of a run
_FINAL_CONDITIONS = (Condition.COMPLETE, Condition.FAILED)

log = structlog.get_logger("sidecar.watcher")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (UTC when it carries no offset); None if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def finished_at(run: Obj) -> datetime | None:
    """When the run finished: status.completionTime, else the latest True Complete/Failed transition."""
    status = run.get("status") or {}
    completed = parse_time(status.get("completionTime"))
    if completed is not None:
        return completed
    stamps = [
        parse_time(c.get("lastTransitionTime"))
        for c in status.get("conditions") or []
        if c.get("type") in _FINAL_CONDITIONS and c.get("status") == "True"
    ]
    found = [s for s in stamps if s is not None]
    return max(found) if found else None


def ttl_of(run: Obj) -> int | None:
    """spec.ttlSecondsAfterFinished when set to a non-negative integer (the CRD refuses anything else)."""
    ttl = (run.get("spec") or {}).get("ttlSecondsAfterFinished")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        return None
    return ttl


class TTLReconciler:
    """Deletes finished runs whose ttlSecondsAfterFinished has passed; ``clock`` answers an aware now."""

    def __init__(self, cluster: Cluster, *, clock: Callable[[], datetime]) -> None:
        self._cluster = cluster
        self._clock = clock

    @staticmethod
    def wants(run: Obj) -> bool:
        """A finished run (Succeeded or Failed) that sets ttlSecondsAfterFinished."""
        return (run.get("status") or {}).get("phase") in TERMINAL and ttl_of(run) is not None

    def expires_at(self, run: Obj) -> datetime | None:
        """When the run is due for deletion; None when it is not ours or its finish time is unknown."""
        ttl = ttl_of(run)
        if not self.wants(run) or ttl is None:
            return None
        done = finished_at(run)
        return None if done is None else done + timedelta(seconds=ttl)

    def reconcile(self, run: Obj) -> Reconciled:
        """``"Deleted"`` when the run is due and now deleted (or already gone), else None (requeued for
        its expiry when it is not due yet): when it is not due,
        not ours, its finish time is unknown, or the name now holds another run (the UID precondition
        refused the delete). Other API errors propagate: the caller retries on its next pass."""
        if not self.wants(run):
            return Reconciled()
        meta = run.get("metadata") or {}
        name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
        due = self.expires_at(run)
        if due is None:
            log.warning("repackrun ttl not applied: no completion time", run=name, uid=uid)
            return Reconciled()
        now = self._clock()
        if due > now:
            return Reconciled(None, after(now, [due]))
        try:
            self._cluster.delete(REPACKRUNS, name, uid=uid)
        except ApiError as exc:
            if exc.status == 404:
                log.info("repackrun already gone", run=name, uid=uid)
                return Reconciled(DELETED)
            if exc.status == 409:
                log.info("repackrun replaced under the same name; not deleted", run=name, uid=uid)
                return Reconciled()
            raise
        log.info(
            "repackrun deleted after ttl",
            run=name,
            uid=uid,
            ttl_seconds=ttl_of(run),
            due=due.isoformat(),
            phase=(run.get("status") or {}).get("phase"),
        )
        return Reconciled(DELETED)
