"""Evicting one victim through policy/v1 Eviction, safely repeatable after any crash.

* The victim is read first: gone, replaced (another UID under its name) or already terminating
  ⇒ Evicted without calling — a resumed run never evicts twice. A victim that finished by itself
  (Succeeded/Failed) holds nothing and is not rebuilt ⇒ Evicted, placement Skipped.
* The call carries ``deleteOptions.preconditions.uid`` = the victim's UID, so even a race with the
  workload controller cannot evict the rebuilt pod that reuses the name: the API server answers
  409, which means the victim is gone ⇒ Evicted. 404 ⇒ Evicted ("already gone").
* 429 (PodDisruptionBudget) and 403 (a budget's status the API server will not use) are refusals;
  500/502/503/504 are errors (the Eviction API answers 500 when two budgets guard one pod). Both
  leave the relocation Pending with attempts, lastAttemptTime and the message; it is due again
  after 1 s, doubling up to 30 s. The first attempt at or after the eviction deadline is the last:
  a refusal then ⇒ Blocked, an error ⇒ Failed, and the placement is Skipped. Other codes
  (400, 422, ...) cannot succeed on retry ⇒ Failed at once.
* A pass never sleeps: relocations not yet due are left for a later pass.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sidecar.api.repackrun import EvictionPhase, PlacementPhase
from sidecar.kubeobj import Obj
from sidecar.watcher.execute.journal import EvictionRecord, Relocation, changed, key, stamp
from sidecar.watcher.kit.port import PODS, ApiError, Cluster
from sidecar.watcher.kit.status import Hook, rfc3339

REFUSED = (403, 429)
ERRORS = (500, 502, 503, 504)
FIRST_BACKOFF, MAX_BACKOFF = 1.0, 30.0


def backoff(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt: 1, 2, 4, ... capped at 30."""
    return 0.0 if attempts <= 0 else min(FIRST_BACKOFF * 2 ** (attempts - 1), MAX_BACKOFF)


def retry_at(rel: Relocation) -> datetime | None:
    """When a Pending eviction that failed before is due again (None: not Pending, or never tried)."""
    ev = rel.eviction
    if ev.phase != EvictionPhase.PENDING or ev.attempts == 0 or not ev.HasField("last_attempt_time"):
        return None
    return ev.last_attempt_time.ToDatetime(tzinfo=UTC) + timedelta(seconds=backoff(ev.attempts))


def due(rel: Relocation, now: datetime, deadline: datetime) -> bool:
    """A Pending eviction to attempt in this pass (never tried, backoff over, or the deadline reached)."""
    ev = rel.eviction
    if ev.phase != EvictionPhase.PENDING:
        return False
    again = retry_at(rel)
    return again is None or now >= deadline or now >= again


def read_pod(cluster: Cluster, namespace: str, name: str, hook: Hook) -> Obj | None:
    """The pod as served, or None when there is none by that name."""
    try:
        return cluster.get(PODS, name, namespace)
    finally:
        hook(f"read:pod/{namespace}/{name}")


def gone(rel: Relocation, pod: Obj | None) -> str:
    """Why the victim needs no eviction any more ("" when it still runs as the recorded UID)."""
    if pod is None:
        return "already gone"
    meta = pod["metadata"]
    if meta.get("uid") != rel.victim_pod_uid:
        return f"already gone: the name now belongs to pod {meta.get('uid')}"
    if meta.get("deletionTimestamp"):
        return "already terminating"
    return ""


class Evictor:
    """Attempts due evictions and returns each relocation's next record (the caller journals it)."""

    def __init__(self, cluster: Cluster, hook: Hook) -> None:
        self._cluster, self._hook = cluster, hook

    def attempt(self, rel: Relocation, grace: int | None, now: datetime, deadline: datetime) -> Relocation:
        pod = read_pod(self._cluster, rel.namespace, rel.victim_pod_name, self._hook)
        why = gone(rel, pod)
        if why:
            return _evicted(rel, why)
        finished = str(((pod or {}).get("status") or {}).get("phase") or "")
        if finished in ("Succeeded", "Failed"):  # it holds nothing and no controller rebuilds finished work
            done = _evicted(rel, f"not needed: the pod already finished ({finished})")
            return changed(done, phase=PlacementPhase.SKIPPED, message="finished: no replacement")
        try:
            self._cluster.evict(rel.namespace, rel.victim_pod_name, uid=rel.victim_pod_uid, grace_seconds=grace)
        except ApiError as exc:
            self._hook(f"evict:{key(rel)}")
            return _refused(rel, exc, now, deadline)
        self._hook(f"evict:{key(rel)}")
        return _evicted(rel, "evicted through the Eviction API", attempted=now)


def _record(phase: EvictionPhase, attempts: int, at: datetime | None, message: str) -> EvictionRecord:
    record = EvictionRecord(phase=phase, attempts=attempts, message=message)
    if at is not None:
        record.last_attempt_time.CopyFrom(stamp(at))
    return record


def _evicted(rel: Relocation, message: str, attempted: datetime | None = None) -> Relocation:
    ev = rel.eviction
    record = EvictionRecord(phase=EvictionPhase.EVICTED, attempts=ev.attempts + bool(attempted), message=message)
    if attempted is not None:
        record.last_attempt_time.CopyFrom(stamp(attempted))
    elif ev.HasField("last_attempt_time"):
        record.last_attempt_time.CopyFrom(ev.last_attempt_time)
    return changed(rel, eviction=record, phase=PlacementPhase.WAITING_FOR_REPLACEMENT,
                   message="waiting for the rebuilt pod")  # fmt: skip


def _refused(rel: Relocation, exc: ApiError, now: datetime, deadline: datetime) -> Relocation:
    code = exc.status
    if code == 404:
        return _evicted(rel, "already gone (404)", attempted=now)
    if code == 409:  # preconditions.uid: the name belongs to another pod now
        return _evicted(rel, f"already gone: {exc.message}", attempted=now)
    message = f"HTTP {code}: {exc.message}"
    attempts = rel.eviction.attempts + 1
    if code in REFUSED or code in ERRORS:
        if now < deadline:
            return changed(rel, eviction=_record(EvictionPhase.PENDING, attempts, now, message))
        phase = EvictionPhase.BLOCKED if code in REFUSED else EvictionPhase.FAILED
        message = f"eviction deadline {rfc3339(deadline)} passed; last answer {message}"
    else:
        phase = EvictionPhase.FAILED
    record = _record(phase, attempts, now, message)
    return changed(rel, eviction=record, phase=PlacementPhase.SKIPPED, message=f"not evicted ({phase})")
