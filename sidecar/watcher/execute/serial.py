"""Serial admission of Execute runs: which one may start: one at a time in the cluster, oldest first, after a cooldown.

The guide: "Execute runs serially within the cluster and enters a cooldown period after each
execution to prevent multiple rounds from affecting each other"; a held run stays Pending with
``Waiting`` True, reason AnotherRunActive or ExecuteCooldownActive. The decision is a pure
function of the runs, so it is the same whichever watcher (or restart) makes it:

1. another Execute run is Running → AnotherRunActive (message names it);
2. an older Execute run (creationTimestamp, then name) is still Pending → AnotherRunActive;
3. the latest finished Execute run that evicted at least one pod finished less than ``cooldown``
   seconds ago → ExecuteCooldownActive (message gives the time it ends). A run that evicted
   nothing (no moves, InvalidSpec, PlannerUnavailable, every eviction refused) starts no cooldown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sidecar.api.repackrun import TERMINAL, EvictionPhase, Mode, Phase, Reason
from sidecar.kubeobj import Obj
from sidecar.watcher.execute.journal import relocations_of
from sidecar.watcher.kit.status import mode_of, parse_time, phase_of, rfc3339

ANOTHER_RUN_ACTIVE, COOLDOWN_ACTIVE = Reason.ANOTHER_RUN_ACTIVE, Reason.COOLDOWN_ACTIVE


@dataclass(frozen=True)
class Hold:
    """Why a run stays Pending: the Waiting condition's reason and message."""

    reason: str
    message: str
    #: when the hold ends by itself (a cooldown); None when another run's progress ends it
    until: datetime | None = None


def _name(run: Obj) -> str:
    return str(run["metadata"]["name"])


def _queue_key(run: Obj) -> tuple[str, str]:
    return (str(run["metadata"].get("creationTimestamp") or ""), _name(run))


def evicted_any(run: Obj) -> bool:
    return any(r.eviction.phase == EvictionPhase.EVICTED for r in relocations_of(run.get("status") or {}))


def hold(run: Obj, runs: list[Obj], now: datetime, cooldown: float) -> Hold | None:
    """None when ``run`` may start now, else why it waits (rules in the module docstring)."""
    others = [r for r in runs if mode_of(r) == Mode.EXECUTE and _name(r) != _name(run)]
    running = sorted(_name(r) for r in others if phase_of(r) == Phase.RUNNING)
    if running:
        return Hold(ANOTHER_RUN_ACTIVE, f"RepackRun {running[0]} is executing; Execute runs one at a time")
    ahead = sorted(
        _queue_key(r) for r in others if phase_of(r) in ("", Phase.PENDING) and _queue_key(r) < _queue_key(run)
    )
    if ahead:
        return Hold(ANOTHER_RUN_ACTIVE, f"RepackRun {ahead[0][1]} was created earlier and executes first")
    finished = [
        (parse_time(str(r["status"]["completionTime"])), _name(r))
        for r in others
        if phase_of(r) in TERMINAL and (r.get("status") or {}).get("completionTime") and evicted_any(r)
    ]
    if finished:
        last, name = max(finished)
        ends = last + timedelta(seconds=cooldown)
        if now < ends:
            return Hold(COOLDOWN_ACTIVE, f"cooldown after RepackRun {name} ends at {rfc3339(ends)}", ends)
    return None
