"""The Execute journal's records: one ``Relocation`` per moved pod and the run's ``Result``, typed,
and their camelCase JSON in ``status.relocations[]`` / ``status.result``.

The records are what makes a restart safe: a relocation names its victim by UID (an eviction can
never hit the rebuilt pod that reuses the name), its workload by owner UID (a ModelServing rebuild
under a new PodGroup is still recognised), and records every decision (selected node, replacement
UID) before it is acted on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Self

from sidecar.api.repackrun import PLACEMENT_TERMINAL, EvictionPhase, PlacementPhase
from sidecar.api.v1alpha1 import plan_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj


def _camel(name: str) -> str:
    """victim_pod_uid -> victimPodUID (Kubernetes spells UID in capitals inside a name)."""
    first, *rest = name.split("_")
    return first + "".join("UID" if p == "uid" else p.capitalize() for p in rest)


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


class _Json:
    """dataclass <-> camelCase JSON, nested records included; unknown keys are ignored."""

    def to_json(self) -> Obj:
        out: Obj = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, _Json):
                value = value.to_json()
            elif isinstance(value, list):
                value = list(value)
            elif isinstance(value, float):
                value = _number(value)
            elif f.name.endswith("_time") and not value:
                continue  # an unset timestamp is absent (the CRD types it date-time), as omitempty would
            out[_camel(f.name)] = value
        return out

    @classmethod
    def from_json(cls, doc: Obj | None) -> Self:
        doc = doc or {}
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = _camel(f.name)
            if key not in doc:
                continue
            nested = _NESTED.get((cls.__name__, f.name))
            kwargs[f.name] = nested.from_json(doc[key]) if nested is not None else doc[key]
        return cls(**kwargs)


@dataclass
class Owner(_Json):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""


@dataclass
class Eviction(_Json):
    phase: str = EvictionPhase.PENDING
    attempts: int = 0
    last_attempt_time: str = ""
    message: str = ""


@dataclass
class Placement(_Json):
    phase: str = PlacementPhase.PENDING
    selected_node_name: str = ""
    actual_node_name: str = ""
    replacement_pod_name: str = ""
    replacement_pod_uid: str = ""
    message: str = ""


@dataclass
class Relocation(_Json):
    namespace: str = ""
    victim_pod_name: str = ""
    victim_pod_uid: str = ""
    pod_group_name: str = ""
    owner: Owner = field(default_factory=Owner)
    from_node_name: str = ""
    planned_node_name: str = ""
    cards: float = 0.0
    #: the PodGroup the replacement runs in when the workload renamed it (ModelServing rebuild)
    replacement_pod_group_name: str = ""
    eviction: Eviction = field(default_factory=Eviction)
    placement: Placement = field(default_factory=Placement)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.victim_pod_name}"

    @property
    def done(self) -> bool:
        return self.placement.phase in PLACEMENT_TERMINAL


@dataclass
class Result(_Json):
    frag_after_percent: float | None = None
    freed_node_count: int = 0
    freed_nodes: list[str] = field(default_factory=list)
    moved_card_count: float = 0.0
    evicted_pod_count: int = 0
    metrics_verified: bool = False
    message: str = ""

    def to_json(self) -> Obj:
        out = super().to_json()
        if self.frag_after_percent is None:
            del out["fragAfterPercent"]  # not measured: absent rather than a made-up 0
        return out


_NESTED: dict[tuple[str, str], type[_Json]] = {
    ("Relocation", "owner"): Owner,
    ("Relocation", "eviction"): Eviction,
    ("Relocation", "placement"): Placement,
}


def eviction_outcome(rel: Relocation) -> str:
    """How a finished eviction is counted: evicted, already_gone (nothing to evict), blocked or failed."""
    phase, message = rel.eviction.phase, rel.eviction.message
    if phase == EvictionPhase.EVICTED:
        return "already_gone" if message.startswith(("already", "not needed")) else "evicted"
    if phase == EvictionPhase.BLOCKED:
        return "blocked"
    return "failed" if phase == EvictionPhase.FAILED else phase.lower()


def relocations_of(status: Obj) -> list[Relocation]:
    return [Relocation.from_json(r) for r in status.get("relocations") or []]


def apply_changes(status: Obj, changes: list[tuple[Relocation, Relocation]]) -> int:
    """Replace each (base → new) relocation in ``status`` — only where the stored record is still
    ``base``: a record another writer changed meanwhile is left as it is (the next pass recomputes
    it from the newer journal). Returns how many records were replaced."""
    stored: list[Obj] = status.setdefault("relocations", [])
    index = {(r.get("namespace"), r.get("victimPodName")): i for i, r in enumerate(stored)}
    applied = 0
    for base, new in changes:
        i = index.get((base.namespace, base.victim_pod_name))
        if i is not None and Relocation.from_json(stored[i]) == base:
            stored[i] = {**stored[i], **new.to_json()}  # fields this version does not know are kept
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
        owner = Owner(
            api_version=move.owner.api_version,
            kind=move.owner.kind,
            name=move.owner.name,
            uid=owners.get((move.namespace, move.pod_group_name), ""),
        )
        for pod in move.pods:
            out.append(
                Relocation(
                    namespace=move.namespace,
                    victim_pod_name=pod.name,
                    victim_pod_uid=uids.get((move.namespace, pod.name), ""),
                    pod_group_name=move.pod_group_name,
                    owner=dataclasses.replace(owner),
                    from_node_name=pod.from_node,
                    planned_node_name=pod.to_node,
                    cards=pod.cards,
                )
            )
    return out
