"""Which waiting PodGroups a policy's whenPending trigger looks at, and which it has acted on.

A PodGroup is a candidate while it is Pending or Inqueue (Volcano's phases before its gang
starts), matches the trigger's queues, namespaces and label selector, and has existed for at least
``minPendingSeconds`` (its creation is the one reliable "pending since": Volcano keeps no such
field, and a condition's lastTransitionTime moves with its message). Candidates go to the
sidecar's CheckPending longest-waiting first.

Each run the trigger creates is recorded (``status.triggers``: the PodGroup's UID, the attempt,
the run) after its create, so a deleted run is not created again for the same trigger, and a
PodGroup still waiting after its run ended gets another attempt only ``retrySeconds`` later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sidecar.api.v1alpha1.policy_pb2 import TriggerRecord
from sidecar.kubeobj import Obj
from sidecar.mirror.selectors import label_selector_matches
from sidecar.watcher.execute.journal import from_json
from sidecar.watcher.kit.controller import unfinished
from sidecar.watcher.kit.status import parse_time
from sidecar.watcher.policy.spec import Pending

#: Volcano's PodGroup phases before the gang starts
WAITING_PHASES = ("", "Pending", "Inqueue")


@dataclass(frozen=True)
class WaitingGroup:
    key: str  # namespace/name
    uid: str
    created: datetime
    attempt: int


def records_of(status: Obj) -> list[TriggerRecord]:
    return [from_json(r, TriggerRecord()) for r in status.get("triggers") or []]


def candidates(
    groups: list[Obj], trigger: Pending, records: list[TriggerRecord], runs: dict[str, Obj], now: datetime
) -> list[WaitingGroup]:
    """The PodGroups to check now, longest waiting first, each with the attempt a run would be."""
    last: dict[str, TriggerRecord] = {}
    for r in records:
        if r.pod_group_uid not in last or r.attempt > last[r.pod_group_uid].attempt:
            last[r.pod_group_uid] = r
    out: list[WaitingGroup] = []
    for group in groups:
        meta = group.get("metadata") or {}
        namespace, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", ""))
        if meta.get("deletionTimestamp") or str((group.get("status") or {}).get("phase") or "") not in WAITING_PHASES:
            continue
        if trigger.namespaces and namespace not in trigger.namespaces:
            continue
        if trigger.queues and str((group.get("spec") or {}).get("queue") or "default") not in trigger.queues:
            continue
        if trigger.selector is not None and not label_selector_matches(trigger.selector, meta.get("labels") or {}):
            continue
        created = parse_time(str(meta.get("creationTimestamp") or "")) if meta.get("creationTimestamp") else now
        if now - created < timedelta(seconds=trigger.min_pending_seconds):
            continue
        before = last.get(uid)
        attempt = 1
        if before is not None:
            run = runs.get(before.run)
            if run is not None and unfinished(run):
                continue  # its run is under way
            if now - before.time.ToDatetime(tzinfo=UTC) < timedelta(seconds=trigger.retry_seconds):
                continue  # tried recently (or its run was deleted): not again yet
            attempt = before.attempt + 1
        out.append(WaitingGroup(f"{namespace}/{name}", uid, created, attempt))
    return sorted(out, key=lambda c: (c.created, c.key))
