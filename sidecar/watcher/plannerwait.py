"""A sidecar outage is waited out, not final (issue 25 item 5).

A restart of the sidecar takes seconds; a run that failed ``PlannerUnavailable`` on the first
refused call would never be retried. So a run whose planner call fails that way waits, with the
condition ``Waiting`` True ``PlannerUnavailable`` (its lastTransitionTime: when the wait began, which
survives a watcher restart), and is retried with a doubling delay (1 s to 15 s) until ``seconds``
have passed; only then does it fail as before. Bad input (``InvalidSpec``) fails at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sidecar.api.repackrun import Condition, Reason
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.status import condition, parse_time, set_condition

UNAVAILABLE = Reason.PLANNER_UNAVAILABLE


@dataclass
class PlannerWait:
    #: how long a run waits for the planner before it fails (0: fail at the first refusal)
    seconds: float = 60.0
    first_delay: float = 1.0
    max_delay: float = 15.0
    _next: dict[str, tuple[datetime, float]] = field(default_factory=dict)  # run uid -> (next try, delay)

    @staticmethod
    def since(run: Obj) -> datetime | None:
        """When the run began waiting for the planner (None: it is not waiting for it)."""
        waiting = condition(run.get("status") or {}, Condition.WAITING) or {}
        if waiting.get("status") != "True" or waiting.get("reason") != UNAVAILABLE:
            return None
        stamp = waiting.get("lastTransitionTime")
        return parse_time(str(stamp)) if stamp else None

    def due(self, run: Obj, now: datetime) -> bool:
        """Whether a run waiting for the planner may call it again now (its backoff is over)."""
        entry = self._next.get(_uid(run))
        return entry is None or now >= entry[0]

    def next_try(self, run: Obj) -> datetime | None:
        """When a run waiting for the planner may call it again (None: not backing off)."""
        entry = self._next.get(_uid(run))
        return None if entry is None else entry[0]

    def retry(self, run: Obj, now: datetime) -> datetime | None:
        """After a refusal: the deadline the run waits until, or None when the wait is over (fail)."""
        began = self.since(run) or now
        until = began + timedelta(seconds=self.seconds)
        if now >= until:
            self._next.pop(_uid(run), None)
            return None
        delay = min(self.max_delay, self._next.get(_uid(run), (now, self.first_delay / 2))[1] * 2)
        self._next[_uid(run)] = (now + timedelta(seconds=delay), delay)
        return until

    def answered(self, run: Obj) -> None:
        self._next.pop(_uid(run), None)


def mark_waiting(status: Obj, message: str, now: datetime) -> bool:
    """Set Waiting True PlannerUnavailable ``message`` on ``status``; False when it says so already.
    The condition's lastTransitionTime is when the wait began: kept while it lasts, ``now`` when it
    begins (also after another Waiting reason, e.g. a hold, whose time says nothing about it)."""
    waiting = condition(status, Condition.WAITING) or {}
    if (waiting.get("status"), waiting.get("reason"), waiting.get("message")) == ("True", UNAVAILABLE, message):
        return False
    if waiting and waiting.get("reason") != UNAVAILABLE:
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != Condition.WAITING]
    set_condition(status, Condition.WAITING, "True", UNAVAILABLE, message, now)
    return True


def _uid(run: Obj) -> str:
    meta = run.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name"))
