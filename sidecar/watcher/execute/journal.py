"""The Execute journal: ``status.relocations[]`` and ``status.result`` as the contract's messages
(``Relocation``, ``ExecutionResult`` in proto/volcano/repack/v1alpha1/plan.proto — the one shape,
which the CRD is checked against), read from and written to the run's camelCase JSON.

The records are what makes a restart safe: a relocation names its victim by UID (an eviction can
never hit the rebuilt pod that reuses the name), its workload by owner UID (a ModelServing rebuild
under a new PodGroup is still recognised), and records every decision (selected node, replacement
UID) before it is acted on. Messages compare by value, so "the record the journal still holds"
is an equality.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from sidecar.api.repackrun import PLACEMENT_TERMINAL, EvictionPhase, PlacementPhase
from sidecar.api.v1alpha1 import plan_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1.plan_pb2 import EvictionRecord, ExecutionResult, PlacementRecord, Relocation, WorkloadOwner
from sidecar.kubeobj import Obj

__all__ = ["EvictionRecord", "ExecutionResult", "PlacementRecord", "Relocation", "WorkloadOwner"]
M = TypeVar("M", bound=Message)


def to_json(message: Message) -> Obj:
    """The record as the status holds it: camelCase, every scalar written (an empty node name is
    ``""``), unset timestamps and an unmeasured fragmentation absent."""
    out: Obj = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    return out


def from_json(doc: Obj | None, message: M) -> M:
    """``message`` filled from a stored record; fields a newer watcher wrote are ignored."""
    json_format.ParseDict(doc or {}, message, ignore_unknown_fields=True)
    return message


def key(rel: Relocation) -> str:
    """namespace/name of the victim (and of its replacement, which keeps the name)."""
    return f"{rel.namespace}/{rel.victim_pod_name}"


def done(rel: Relocation) -> bool:
    return rel.placement.phase in PLACEMENT_TERMINAL


def stamp(when: datetime) -> Any:
    """A Timestamp at ``when``, to the second (metav1.Time's precision)."""
    from google.protobuf.timestamp_pb2 import Timestamp

    out = Timestamp()
    out.FromSeconds(int(when.timestamp()))
    return out


def changed(rel: Relocation, *, eviction: EvictionRecord | None = None, **placement: Any) -> Relocation:
    """A copy of ``rel`` with a new eviction record and/or placement fields (``phase=...``)."""
    out = Relocation()
    out.CopyFrom(rel)
    if eviction is not None:
        out.eviction.CopyFrom(eviction)
    for name, value in placement.items():
        setattr(out.placement, name, value)
    return out


def eviction_outcome(rel: Relocation) -> str:
    """How a finished eviction is counted: evicted, already_gone (nothing to evict), blocked or failed."""
    phase, message = rel.eviction.phase, rel.eviction.message
    if phase == EvictionPhase.EVICTED:
        return "already_gone" if message.startswith(("already", "not needed")) else "evicted"
    if phase == EvictionPhase.BLOCKED:
        return "blocked"
    return "failed" if phase == EvictionPhase.FAILED else phase.lower()


def relocations_of(status: Obj) -> list[Relocation]:
    return [from_json(r, Relocation()) for r in status.get("relocations") or []]


def apply_changes(status: Obj, changes: list[tuple[Relocation, Relocation]]) -> int:
    """Replace each (base → new) relocation in ``status`` — only where the stored record is still
    ``base``: a record another writer changed meanwhile is left as it is (the next pass recomputes
    it from the newer journal). Returns how many records were replaced."""
    stored: list[Obj] = status.setdefault("relocations", [])
    index = {(r.get("namespace"), r.get("victimPodName")): i for i, r in enumerate(stored)}
    applied = 0
    for base, new in changes:
        i = index.get((base.namespace, base.victim_pod_name))
        if i is not None and from_json(stored[i], Relocation()) == base:
            stored[i] = {**stored[i], **to_json(new)}  # fields this version does not know are kept
            applied += 1
    return applied


def relocations_from_plan(plan: plan_pb2.Plan, snapshot: pb.Snapshot) -> list[Relocation]:
    """One Pending relocation per pod move, with the victim's UID and the owner's UID read from
    the snapshot the plan was made on (the plan names pods and owners, not their UIDs)."""
    uids = {(t.namespace, t.name): t.uid for t in snapshot.tasks}
    owners = {
        (g.namespace, g.name): next((r.uid for r in g.owner_references if r.controller), "")
        for g in snapshot.pod_groups
    }
    out: list[Relocation] = []
    for move in plan.moves:
        owner = WorkloadOwner(api_version=move.owner.api_version, kind=move.owner.kind, name=move.owner.name,
                              uid=owners.get((move.namespace, move.pod_group_name), ""))  # fmt: skip
        for pod in move.pods:
            out.append(
                Relocation(
                    namespace=move.namespace,
                    victim_pod_name=pod.name,
                    victim_pod_uid=uids.get((move.namespace, pod.name), ""),
                    pod_group_name=move.pod_group_name,
                    owner=owner,
                    from_node_name=pod.from_node,
                    planned_node_name=pod.to_node,
                    cards=pod.cards,
                    eviction=EvictionRecord(phase=EvictionPhase.PENDING),
                    placement=PlacementRecord(phase=PlacementPhase.PENDING),
                )
            )
    return out
