"""A CustomResourceDefinition the sandbox serves: names, schema passes and the Table view.

``CustomResource(crd)`` checks the CRD as the API server's CRD validation would for what the sandbox
enforces (apiextensions-apiserver pkg/apis/apiextensions/validation), so a CRD the sandbox accepts is
one it can serve faithfully: non-structural schemas, rules outside the CEL subset of
:mod:`sidecar.sandbox.cel` and printer-column paths outside :mod:`sidecar.sandbox.jsonpath` are
refused with ``ValueError("field: problem")`` instead of being ignored.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

from sidecar.sandbox import jsonpath, schema
from sidecar.sandbox.cel import MISSING
from sidecar.sandbox.fielderrors import go_value

#: Table column descriptions the API server uses for NAME and the default AGE column
#: (apimachinery pkg/apis/meta/v1 ObjectMeta swagger docs).
_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_COLUMN_TYPES = frozenset({"integer", "number", "string", "boolean", "date"})


class CustomResource:
    """One served version of a CRD (the storage version if it is served, else the first served)."""

    def __init__(self, crd: dict[str, Any]) -> None:
        if crd.get("apiVersion") != "apiextensions.k8s.io/v1" or crd.get("kind") != "CustomResourceDefinition":
            raise ValueError("apiVersion: Unsupported value: need apiextensions.k8s.io/v1 CustomResourceDefinition")
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        self.group: str = str(spec.get("group") or "")
        self.kind: str = str(names.get("kind") or "")
        self.plural: str = str(names.get("plural") or "")
        if not self.group or "." not in self.group:
            raise ValueError("spec.group: Invalid value: should be a domain with at least one dot")
        if not self.plural or self.plural != self.plural.lower():
            raise ValueError("spec.names.plural: Required value: a lowercase plural name")
        if not self.kind:
            raise ValueError("spec.names.kind: Required value")
        name = (crd.get("metadata") or {}).get("name")
        if name != f"{self.plural}.{self.group}":
            raise ValueError(f'metadata.name: Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        self.singular: str = str(names.get("singular") or self.kind.lower())
        self.short_names: list[str] = list(names.get("shortNames") or [])
        self.list_kind: str = str(names.get("listKind") or f"{self.kind}List")
        self.categories: list[str] = list(names.get("categories") or [])
        scope = spec.get("scope")
        if scope not in ("Namespaced", "Cluster"):
            raise ValueError(f'spec.scope: Unsupported value: "{scope}": supported values: "Cluster", "Namespaced"')
        self.namespaced: bool = scope == "Namespaced"
        versions = list(spec.get("versions") or [])
        if sum(1 for v in versions if v.get("storage")) != 1:
            raise ValueError("spec.versions: Invalid value: must have exactly one version marked as storage version")
        served = [(i, v) for i, v in enumerate(versions) if v.get("served")]
        if not served:
            raise ValueError("spec.versions: Invalid value: must have at least one version marked as served")
        i, ver = next(((i, v) for i, v in served if v.get("storage")), served[0])
        where = f"spec.versions[{i}]"
        self.version: str = str(ver.get("name") or "")
        if not self.version:
            raise ValueError(f"{where}.name: Required value")
        self.has_status: bool = "status" in (ver.get("subresources") or {})
        raw = ((ver.get("schema") or {}).get("openAPIV3Schema")) or spec.get("validation", {}).get("openAPIV3Schema")
        if raw is None:
            raise ValueError(f"{where}.schema.openAPIV3Schema: Required value: schemas are required")
        self._schema = schema.parse(raw, f"{where}.schema.openAPIV3Schema", root=True)
        #: the schema as declared, for the OpenAPI v3 document (``kubectl explain``)
        self.openapi_schema: dict[str, Any] = copy.deepcopy(raw)
        self._columns = self._parse_columns(ver.get("additionalPrinterColumns"), where)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @staticmethod
    def _parse_columns(raw: Any, where: str) -> list[tuple[dict[str, Any], list[jsonpath.Step]]]:
        if not raw:  # the API server's default when a version declares no columns
            raw = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": _AGE_DOC}]
        out = []
        for i, col in enumerate(raw):
            at = f"{where}.additionalPrinterColumns[{i}]"
            if not col.get("name"):
                raise ValueError(f"{at}.name: Required value")
            if col.get("type") not in _COLUMN_TYPES:
                raise ValueError(f'{at}.type: Unsupported value: "{col.get("type")}"')
            try:
                steps = jsonpath.compile_path(str(col.get("jsonPath", "")))
            except ValueError as exc:
                raise ValueError(f"{at}.jsonPath: Invalid value: {exc}") from exc
            definition = {
                "name": col["name"],
                "type": col["type"],
                "format": col.get("format", ""),
                "description": col.get("description", ""),
                "priority": int(col.get("priority", 0)),
            }
            out.append((definition, steps))
        return out

    def unknown_fields(self, body: dict[str, Any]) -> list[str]:
        """Fields of ``body`` (an object without apiVersion, kind, metadata) the schema does not declare."""
        return schema.unknown_fields(self._schema, body)

    def prune(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A copy without the fields the schema does not know (where not preserved)."""
        return dict(schema.prune(self._schema, copy.deepcopy(obj), root=True))

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A pruned copy with schema defaults applied to absent fields, as the API server stores it."""
        return dict(schema.default(self._schema, self.prune(obj)))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, str]]:
        """Causes (reason, message, field) for a create (``old`` None) or an update; [] if valid.

        Call it on ``default(obj)``, as the API server validates what it would store. Only the
        schema is checked: metadata and the kind/apiVersion match are the server's to check.
        """
        return schema.validate(self._schema, obj, "", MISSING if old is None else old)

    def table(self, objs: list[dict[str, Any]], now: datetime | None = None) -> dict[str, Any]:
        """A meta.k8s.io/v1 Table as the CRD table convertor builds it (tableconvertor.go)."""
        now = now or datetime.now(timezone.utc)
        columns = [
            {"name": "Name", "type": "string", "format": "name", "description": _NAME_DOC, "priority": 0},
            *(definition for definition, _ in self._columns),
        ]
        rows = []
        for obj in objs:
            meta = obj.get("metadata") or {}
            cells: list[Any] = [meta.get("name", "")]
            for definition, steps in self._columns:
                found = jsonpath.find(steps, obj)
                cells.append(None if not found else _cell(definition["type"], found[0], now))
            partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
            rows.append({"cells": cells, "object": partial})
        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {},
            "columnDefinitions": columns,
            "rows": rows,
        }


def _cell(kind: str, value: Any, now: datetime) -> Any:
    """cellForJSONValue: a typed cell, None when the value does not fit the column's type."""
    if value is None:
        return None
    if kind == "string":  # printed through jsonpath: scalars as text, the rest as JSON
        return value if isinstance(value, str) else go_value(value)
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            then = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "<invalid>"
        return human_duration((now - then).total_seconds())
    return None


def human_duration(seconds: float) -> str:
    """apimachinery pkg/util/duration.HumanDuration, as kubectl's AGE column shows it."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"
