"""The RepackRun's shape has one source: the contract (proto/volcano/repack/v1alpha1: ``RepackSpec``,
``RepackStatus`` with the Execute journal's ``Relocation`` and ``ExecutionResult``). The CRD
(manifests/crd/repack.volcano.sh_repackruns.yaml) adds what only a schema says — bounds, patterns,
CEL rules, descriptions for ``kubectl explain`` — and must declare exactly the contract's fields:
every field of every message at the same JSON path, with the type the proto's JSON mapping gives it
(string, integer, number, boolean, object, array, a map's values, an enum's names, a Timestamp as a
date-time string), and nothing else. The run's vocabulary (sidecar/api/repackrun.py) is the CRD's
enums. Any drift fails here, naming the path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from sidecar.api.repackrun import (
    EvictionPhase,
    Mode,
    NominationPhase,
    Phase,
    PlacementPhase,
    TargetPhase,
    TargetVerdict,
)
from sidecar.api.v1alpha1 import plan_pb2, spec_pb2

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "manifests" / "crd" / "repack.volcano.sh_repackruns.yaml"
INTEGERS = {
    FieldDescriptor.TYPE_INT32: "int32", FieldDescriptor.TYPE_SINT32: "int32", FieldDescriptor.TYPE_UINT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64", FieldDescriptor.TYPE_SINT64: "int64", FieldDescriptor.TYPE_UINT64: "int64",
}  # fmt: skip
NUMBERS = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)
TIMESTAMP = "google.protobuf.Timestamp"


def _schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def _value(schema: dict[str, Any], field: FieldDescriptor, path: str) -> list[str]:
    """One value of ``field`` (an element of a repeated field, a map's value) against ``schema``."""
    kind = schema.get("type")
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.full_name == TIMESTAMP:
            ok = kind == "string" and schema.get("format") == "date-time"
            return [] if ok else [f"{path}: a Timestamp, so a date-time string; the CRD says {kind}"]
        if kind != "object":
            return [f"{path}: a message ({field.message_type.name}); the CRD says {kind}"]
        return _message(schema, field.message_type, path)
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = [v.name for v in field.enum_type.values if v.number != 0]
        ok = kind == "string" and schema.get("enum") == names
        return [] if ok else [f"{path}: the enum {names}; the CRD says {kind} {schema.get('enum')}"]
    if field.type in INTEGERS:
        fmt = schema.get("format")
        if kind != "integer" or fmt not in (None, INTEGERS[field.type]):
            return [f"{path}: an {INTEGERS[field.type]}; the CRD says {kind} ({fmt})"]
        return []
    want = {FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BOOL: "boolean"}.get(field.type)
    want = "number" if field.type in NUMBERS else want
    return [] if kind == want else [f"{path}: a {want}; the CRD says {kind}"]


def _field(schema: dict[str, Any], field: FieldDescriptor, path: str) -> list[str]:
    kind = schema.get("type")
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        if kind != "object" or "additionalProperties" not in schema:
            return [f"{path}: a map; the CRD says {kind} without additionalProperties"]
        return _value(schema["additionalProperties"], field.message_type.fields_by_name["value"], f"{path}[*]")
    if field.is_repeated:
        if kind != "array":
            return [f"{path}: repeated; the CRD says {kind}"]
        return _value(schema["items"], field, f"{path}[]")
    return _value(schema, field, path)


def _message(schema: dict[str, Any], message: Descriptor, path: str) -> list[str]:
    """Every field of ``message`` declared at its JSON name, and no property the message lacks."""
    props: dict[str, Any] = schema.get("properties") or {}
    fields = {f.json_name: f for f in message.fields}
    problems = [f"{path}.{n}: {message.full_name} has it, the CRD does not" for n in sorted(set(fields) - set(props))]
    problems += [f"{path}.{n}: the CRD has it, {message.full_name} does not" for n in sorted(set(props) - set(fields))]
    for name in sorted(set(fields) & set(props)):
        problems += _field(props[name], fields[name], f"{path}.{name}")
    return problems


def test_the_spec_is_the_contracts_repack_spec() -> None:
    assert _message(_schema()["properties"]["spec"], spec_pb2.RepackSpec.DESCRIPTOR, "spec") == []


def test_the_status_is_the_contracts_repack_status() -> None:
    assert _message(_schema()["properties"]["status"], plan_pb2.RepackStatus.DESCRIPTOR, "status") == []


def test_the_object_holds_spec_and_status_only() -> None:
    assert set(_schema()["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("spec.mode", Mode),
        ("status.phase", Phase),
        ("status.relocations[].eviction.phase", EvictionPhase),
        ("status.relocations[].placement.phase", PlacementPhase),
        ("status.plan.target.verdict", TargetVerdict),
        ("status.target.phase", TargetPhase),
        ("status.target.nominations[].phase", NominationPhase),
    ],
)
def test_the_runs_vocabulary_is_the_crds_enums(path: str, words: Any) -> None:
    node: dict[str, Any] = _schema()
    for part in path.split("."):
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node["items"]
    assert node["enum"] == [w.value for w in words]


def test_the_checker_sees_drift() -> None:
    """It would pass vacuously if it read nothing: a field missing, an extra one, a wrong type fail."""
    schema = _schema()["properties"]["status"]
    relocation = schema["properties"]["relocations"]["items"]
    props = relocation["properties"]
    missing = {**relocation, "properties": {k: v for k, v in props.items() if k != "cards"}}
    assert _message(missing, plan_pb2.Relocation.DESCRIPTOR, "r") == [
        "r.cards: volcano.repack.v1alpha1.Relocation has it, the CRD does not"
    ]
    extra = {**relocation, "properties": {**props, "note": {"type": "string"}}}
    assert _message(extra, plan_pb2.Relocation.DESCRIPTOR, "r")[0].startswith("r.note: the CRD has it")
    wrong = {**relocation, "properties": {**props, "cards": {"type": "integer"}}}
    assert _message(wrong, plan_pb2.Relocation.DESCRIPTOR, "r") == ["r.cards: a number; the CRD says integer"]
