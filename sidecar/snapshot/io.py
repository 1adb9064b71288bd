"""Snapshot and RepackRun files: protobuf JSON (YAML accepted), or binary protobuf (``.pb``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.errors import InputError

M = TypeVar("M", bound=Message)


def parse_document(text: str, message: M, *, source: str) -> M:
    """Parse JSON or YAML text into ``message`` (proto JSON names or original field names)."""
    try:
        data = yaml.safe_load(text) if not text.lstrip().startswith(("{", "[")) else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise InputError(source, f"not valid JSON/YAML: {exc}") from exc
    return parse_dict(data, message, source=source)


def parse_dict(data: Any, message: M, *, source: str) -> M:
    if not isinstance(data, dict):
        raise InputError(source, f"expected a mapping, got {type(data).__name__}")
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        raise InputError(source, str(exc)) from exc
    return message


def load_snapshot(path: str | Path) -> pb.Snapshot:
    p = Path(path)
    if p.suffix in (".pb", ".bin"):
        try:
            return pb.Snapshot.FromString(p.read_bytes())
        except DecodeError as exc:
            raise InputError(str(p), f"not a binary Snapshot: {exc}") from exc
    return parse_document(p.read_text(), pb.Snapshot(), source=str(p))


def save_snapshot(snap: pb.Snapshot, path: str | Path) -> None:
    p = Path(path)
    if p.suffix in (".pb", ".bin"):
        p.write_bytes(snap.SerializeToString(deterministic=True))
    else:
        p.write_text(json_format.MessageToJson(snap, indent=1) + "\n")


def load_repack_spec(path: str | Path) -> spec_pb2.RepackSpec:
    """A RepackRun manifest (its ``spec``) or a bare spec, as YAML or JSON."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise InputError(str(p), f"not valid YAML: {exc}") from exc
    if isinstance(data, dict) and data.get("kind") == "RepackRun":
        data = data.get("spec") or {}
        source = f"{p}: spec"
    else:
        source = str(p)
    return parse_dict(data, spec_pb2.RepackSpec(), source=source)
