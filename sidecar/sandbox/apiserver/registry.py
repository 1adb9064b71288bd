"""Resource types the emulator serves: built-in kinds plus every CRD created through it.

CRD schema work (validation, defaults, printer columns) belongs to ``sidecar.sandbox.crd``: a CRD
it refuses is refused here too (422), so every served CRD is one the emulator serves faithfully.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from sidecar.sandbox.apiserver.apierrors import ApiError, invalid
from sidecar.sandbox.crd import CustomResource

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource. ``status_on_create``: keep (nodes), pending (pods) or clear (the rest)."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_on_create: str = "clear"
    custom: CustomResource | None = field(default=None, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """Storage key: one bucket per group/plural, whatever version is asked."""
        return f"{self.group}/{self.plural}"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


BUILTIN = [
    ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), ("status",), (), "clear"),
    ResourceType("", "v1", "Node", "nodes", "node", False, ("no",), ("status",), (), "keep"),
    ResourceType("", "v1", "Pod", "pods", "pod", True, ("po",), ("status", "eviction", "binding"), ("all",), "pending"),
    ResourceType("", "v1", "Binding", "bindings", "binding", True),  # create-only: POST binds a pod
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        False,
    ),
    ResourceType(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        True,
        ("pdb",),
        ("status",),
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        ("crd", "crds"),
        ("status",),
        (),
        "clear",
    ),
]


def custom_resource(crd: dict[str, Any]) -> CustomResource:
    """``CustomResource(crd)``, its ValueError ("field: problem") answered as 422 with that cause."""
    try:
        return CustomResource(crd)
    except ValueError as exc:
        name = crd.get("metadata", {}).get("name", "")
        field_, _, problem = str(exc).partition(": ")
        cause = {"reason": "FieldValueInvalid", "message": problem or str(exc), "field": field_}
        raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, [cause]) from exc


def _crd_types(crd: dict[str, Any], custom: CustomResource) -> list[ResourceType]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind, plural = names.get("kind"), names.get("plural")
    if not spec.get("group") or not kind or not plural or not spec.get("versions"):
        raise ApiError(422, "CustomResourceDefinition needs spec.group, spec.names.kind/plural and spec.versions")
    out = []
    for v in spec["versions"]:
        if not v.get("served", True):
            continue
        subs = ("status",) if "status" in (v.get("subresources") or {}) else ()
        out.append(
            ResourceType(
                spec["group"],
                v["name"],
                kind,
                plural,
                names.get("singular") or kind.lower(),
                spec.get("scope", "Namespaced") == "Namespaced",
                tuple(names.get("shortNames") or ()),
                subs,
                tuple(names.get("categories") or ()),
                "clear",
                custom,
            )
        )
    return out


class Registry:
    """Thread-safe map of (group, version, plural) → ResourceType; CRDs come and go at runtime."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {(t.group, t.version, t.plural): t for t in BUILTIN}
        self._crd_keys: dict[str, list[tuple[str, str, str]]] = {}

    def lookup(self, group: str, version: str, plural: str) -> ResourceType:
        with self._lock:
            found = self._types.get((group, version, plural))
        if found is None:
            raise ApiError(404, f"the server could not find the requested resource ({plural}.{group}/{version})")
        return found

    def by_kind(self, api_version: str, kind: str) -> ResourceType:
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for t in self._types.values():
                if t.group == group and t.version == version and t.kind == kind:
                    return t
        raise ApiError(404, f'no matches for kind "{kind}" in version "{api_version}"')

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def groups(self) -> dict[str, list[str]]:
        """group → served versions (first is preferred), in registration order."""
        out: dict[str, list[str]] = {}
        for t in self.all():
            if t.version not in out.setdefault(t.group, []):
                out[t.group].append(t.version)
        return out

    def prepare_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Resource types a CRD would serve (422 when the crd module refuses it)."""
        return _crd_types(crd, custom_resource(crd))

    def register(self, crd_name: str, types: list[ResourceType]) -> None:
        with self._lock:
            for key in self._crd_keys.pop(crd_name, []):
                self._types.pop(key, None)
            keys = [(t.group, t.version, t.plural) for t in types]
            self._types.update(zip(keys, types, strict=True))
            self._crd_keys[crd_name] = keys

    def unregister(self, crd_name: str) -> None:
        with self._lock:
            for key in self._crd_keys.pop(crd_name, []):
                self._types.pop(key, None)
