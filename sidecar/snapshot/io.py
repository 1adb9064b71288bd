"""Snapshot and RepackRun files: protobuf JSON (YAML accepted), or binary protobuf (``.pb``).

Files are written by people, so this edge is forgiving where the wire is strict: a snapshot file
may be a bare Snapshot or a request body ``{"snapshot": ...}`` (what the README and grpcurl use),
a run file a RepackRun, a bare spec or ``{"spec": ...}``; resource values may be Kubernetes
quantity strings (``"8"``, ``"500m"``, ``"2Gi"``), converted here to Volcano units, while plain
numbers are Volcano units already. Anything else is an InputError naming the file and field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.snapshot.kube import volcano_units

M = TypeVar("M", bound=Message)

SNAPSHOT_SHAPE = (
    'a Snapshot ({"nodes": [...], "tasks": [...], ...}) or a request body {"snapshot": {"nodes": [...], ...}}'
)
RUN_SHAPE = "a RepackRun (kind: RepackRun, spec: ...), {spec: ...}, or a bare spec (mode: ..., goals: [...])"
#: keys of a Kubernetes object around a spec
_OBJECT_KEYS = {"apiVersion", "kind", "metadata", "spec", "status"}


def _request_keys() -> frozenset[str]:
    """Field names (proto and JSON spelling) of the request messages that carry a snapshot."""
    keys: set[str] = set()
    for message in service_pb2.DESCRIPTOR.message_types_by_name.values():
        if "snapshot" in message.fields_by_name:
            keys |= {f.name for f in message.fields} | {f.json_name for f in message.fields}
    return frozenset(keys)


REQUEST_KEYS = _request_keys()


def read_data(text: str, *, source: str) -> Any:
    """JSON or YAML text as Python data (JSON when it starts like JSON, so errors quote JSON's parser)."""
    try:
        return yaml.safe_load(text) if not text.lstrip().startswith(("{", "[")) else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise InputError(source, f"not valid JSON/YAML: {exc}") from exc


def parse_document(text: str, message: M, *, source: str) -> M:
    """Parse JSON or YAML text into ``message`` (proto JSON names or original field names)."""
    return parse_dict(read_data(text, source=source), message, source=source)


def parse_dict(data: Any, message: M, *, source: str, shape: str = "") -> M:
    if not isinstance(data, dict):
        expected = shape or "a mapping"
        raise InputError(source, f"expected {expected}, got {type(data).__name__}")
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        hint = f" (expected {shape})" if shape else ""
        raise InputError(source, f"{exc}{hint}") from exc
    return message


def _get(data: dict[str, Any], proto_name: str, json_name: str) -> Any:
    return data.get(json_name, data.get(proto_name))


def _short(text: str, limit: int = 40) -> str:
    """User text quoted in an error, cut: errors travel in gRPC trailers and terminals."""
    return text if len(text) <= limit else text[:limit] + "…"


def _convert_map(values: Any, path: str) -> None:
    """Quantity strings in a resource map → Volcano units, in place; numbers are left alone."""
    if not isinstance(values, dict):
        return
    for resource, value in values.items():
        values[resource] = _convert_value(str(resource), value, f'{path}["{_short(str(resource), 80)}"]')


def _convert_value(resource: str, value: Any, path: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return volcano_units(resource, value)
    except (ValueError, OverflowError) as exc:
        raise InputError(
            path,
            f'invalid quantity "{_short(value)}": use a Kubernetes quantity string ("8", "500m", "2Gi", "1.5") '
            "or a number in Volcano units",
        ) from exc


def convert_quantities(snapshot: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every resource map of a Snapshot in dict form: quantity strings become Volcano units.

    Covers ``nodes[].allocatable``, ``tasks[].requests``, ``tasks[].nonzeroRequests`` and the
    columnar ``taskColumns.requests[].values`` (each column names its resource).
    """
    for i, node in enumerate(snapshot.get("nodes") or []):
        if isinstance(node, dict):
            _convert_map(node.get("allocatable"), f"{prefix}nodes[{i}].allocatable")
    for i, task in enumerate(snapshot.get("tasks") or []):
        if not isinstance(task, dict):
            continue
        _convert_map(task.get("requests"), f"{prefix}tasks[{i}].requests")
        for key in ("nonzeroRequests", "nonzero_requests"):
            nonzero = task.get(key)
            if isinstance(nonzero, dict):
                for resource in ("cpu", "memory"):
                    if resource in nonzero:
                        path = f"{prefix}tasks[{i}].{key}.{resource}"
                        nonzero[resource] = _convert_value(resource, nonzero[resource], path)
    columns = _get(snapshot, "task_columns", "taskColumns")
    if isinstance(columns, dict):
        for k, column in enumerate(columns.get("requests") or []):
            if not isinstance(column, dict) or not isinstance(column.get("values"), list):
                continue
            resource = str(column.get("resource", ""))
            path = f"{prefix}taskColumns.requests[{k}].values"
            column["values"] = [_convert_value(resource, v, f"{path}[{j}]") for j, v in enumerate(column["values"])]
    return snapshot


def snapshot_from_data(data: Any, *, source: str) -> pb.Snapshot:
    """A Snapshot from parsed file data: a bare Snapshot or a request body ``{"snapshot": ...}``."""
    if not isinstance(data, dict):
        raise InputError(source, f"expected {SNAPSHOT_SHAPE}, got {type(data).__name__}")
    prefix = ""
    if "snapshot" in data:
        extra = sorted(str(k) for k in data if k not in REQUEST_KEYS)
        if extra:
            keys = ", ".join(extra)
            raise InputError(source, f'unknown key(s) {keys} beside "snapshot" (expected {SNAPSHOT_SHAPE})')
        data = data["snapshot"]
        prefix = "snapshot."
        if not isinstance(data, dict):
            raise InputError(f"{source}: snapshot", f"expected a Snapshot mapping, got {type(data).__name__}")
    try:
        convert_quantities(data)
    except InputError as exc:
        raise InputError(f"{source}: {prefix}{exc.field}", exc.problem) from exc
    return parse_dict(data, pb.Snapshot(), source=source, shape=SNAPSHOT_SHAPE)


def load_snapshot(path: str | Path) -> pb.Snapshot:
    p = Path(path)
    if p.suffix in (".pb", ".bin"):
        try:
            return pb.Snapshot.FromString(p.read_bytes())
        except DecodeError as exc:
            raise InputError(str(p), f"not a binary Snapshot: {exc}") from exc
    return snapshot_from_data(read_data(p.read_text(), source=str(p)), source=str(p))


def snapshot_json(snap: pb.Snapshot) -> str:
    """The JSON form, byte-identical for equal snapshots (map keys sorted: protobuf maps have no order)."""
    return json_format.MessageToJson(snap, indent=1, sort_keys=True) + "\n"


def save_snapshot(snap: pb.Snapshot, path: str | Path) -> None:
    p = Path(path)
    if p.suffix in (".pb", ".bin"):
        p.write_bytes(snap.SerializeToString(deterministic=True))
    else:
        p.write_text(snapshot_json(snap))


def spec_from_data(data: Any, *, source: str) -> spec_pb2.RepackSpec:
    """A RepackSpec from a RepackRun, ``{spec: ...}`` (kind optional) or a bare spec."""
    if not isinstance(data, dict):
        raise InputError(source, f"expected {RUN_SHAPE}, got {type(data).__name__}")
    kind = data.get("kind")
    if kind is not None and kind != "RepackRun":
        raise InputError(f"{source}: kind", f'expected "RepackRun", got {str(kind)[:60]!r} ({RUN_SHAPE})')
    if "spec" in data or kind is not None:
        extra = sorted(str(k) for k in data if k not in _OBJECT_KEYS)
        if extra:
            raise InputError(source, f"unknown key(s) {', '.join(extra)} beside spec (expected {RUN_SHAPE})")
        return parse_dict(data.get("spec") or {}, spec_pb2.RepackSpec(), source=f"{source}: spec", shape=RUN_SHAPE)
    return parse_dict(data, spec_pb2.RepackSpec(), source=source, shape=RUN_SHAPE)


def load_repack_spec(path: str | Path) -> spec_pb2.RepackSpec:
    """A RepackRun manifest (its ``spec``), ``{spec: ...}`` or a bare spec, as YAML or JSON."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise InputError(str(p), f"not valid YAML: {exc}") from exc
    return spec_from_data(data, source=str(p))
