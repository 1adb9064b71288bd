"""What one reconcile reached, and when its run needs it again (controller-runtime's ``Result``).

Deadlines a run waits for without any event — a cooldown's end, a TTL, the execution and eviction
deadlines, an eviction's retry, the planner's backoff — come back as ``requeue_after`` and the
controller queues the run for exactly then (``WorkQueue.add_after``); events (the run's own, a
pod its journal names, another Execute run finishing) queue it at once, and a slow safety resync
covers what neither saw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Reconciled:
    #: the phase the run reached (None: not this reconciler's, or another writer moved it)
    phase: str | None = None
    #: seconds until the run needs this reconciler again without an event (None: only on events)
    requeue_after: float | None = None


def after(now: datetime, moments: Iterable[datetime | None]) -> float | None:
    """Seconds from ``now`` to the earliest of ``moments`` (0 when one has passed; None when none)."""
    due = [m for m in moments if m is not None]
    return None if not due else max(0.0, (min(due) - now).total_seconds())


def soonest(delays: Iterable[float | None]) -> float | None:
    """The shortest of ``delays`` (None when every one is None)."""
    given = [d for d in delays if d is not None]
    return min(given) if given else None
