"""Structural OpenAPI schemas as the API server applies them to custom resources.

Three passes, in the API server's order (apiextensions-apiserver pkg/apiserver/schema):
``prune`` drops fields the schema does not know (pruning/algorithm.go) and non-nullable nulls
without a default (defaulting/prunenulls.go); ``default`` fills absent fields top-down, then
recurses into what it filled (defaulting/algorithm.go); ``validate`` reports causes with the
kube-openapi wording the API server wraps in field errors (apiserver/validation/validation.go).

Validation ratchets as Kubernetes >= 1.30 does (CRDValidationRatcheting): on update a subtree equal
to its old value is not re-validated, so an object stored before a schema tightened stays editable.
The ``x-kubernetes-validations`` rules run over the whole object after the schema checks, unless one
of those is a blocking error (wrong type, required, enum, too long, too many: the object lacks the
shape the rules were written for); then a single cause says the rules were not checked
(apiextensions-apiserver pkg/registry/customresource/strategy.go, hasBlockingErr).
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sidecar.sandbox.cel import MISSING, equal
from sidecar.sandbox.celrules import XRule, parse_rule, rule_causes
from sidecar.sandbox.fielderrors import Cause, cause, go_value, invalid, type_name

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_METADATA_KEYS = frozenset({"description", "title", "example", "externalDocs", "x-kubernetes-list-type"})
_METADATA_KEYS |= {"x-kubernetes-list-map-keys", "x-kubernetes-map-type"}
_CHECK_KEYS: tuple[str, ...] = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength")
_CHECK_KEYS += ("maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties", "format")
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
#: schema errors that keep the CEL rules from running, and the cause said instead
_BLOCKING = {"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany"}
_BLOCKING |= {"FieldValueTypeInvalid"}
RULES_NOT_CHECKED = {
    "reason": "FieldValueInvalid",
    "message": 'Invalid value: "null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation",
    "field": "<nil>",
}
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@dataclass
class Schema:
    """One node of a structural schema."""

    type: str = ""
    properties: dict[str, Schema] = field(default_factory=dict)
    additional: Schema | None = None
    additional_any: bool = False
    items: Schema | None = None
    required: tuple[str, ...] = ()
    enum: list[Any] | None = None
    default: Any = MISSING
    nullable: bool = False
    preserve: bool = False
    int_or_string: bool = False
    checks: dict[str, Any] = field(default_factory=dict)
    pattern: re.Pattern[str] | None = None
    rules: list[XRule] = field(default_factory=list)
    has_rules: bool = False  # rules here or below (Kubernetes builds no CEL validator otherwise)
    any_of: list[Schema] = field(default_factory=list)
    all_of: list[Schema] = field(default_factory=list)
    one_of: list[Schema] = field(default_factory=list)
    not_: Schema | None = None


def parse(raw: Any, where: str, *, root: bool = False, value_only: bool = False) -> Schema:
    """Compile a schema; ValueError("where.key: problem") if it is not structural or uses a
    feature this sandbox cannot enforce."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be an object")
    s = Schema()
    for key in raw:
        known = key in _METADATA_KEYS or key in _CHECK_KEYS
        known |= key in ("type", "properties", "additionalProperties", "items", "required", "enum", "default")
        known |= key in ("nullable", "anyOf", "allOf", "oneOf", "not")
        known |= key.startswith("x-kubernetes-") and key != "x-kubernetes-embedded-resource"
        if not known:
            raise ValueError(f"{where}.{key}: Forbidden: not supported in a structural schema (or by the sandbox)")
    s.type = str(raw.get("type", ""))
    s.preserve = raw.get("x-kubernetes-preserve-unknown-fields") is True
    s.int_or_string = raw.get("x-kubernetes-int-or-string") is True
    s.nullable = raw.get("nullable") is True
    if value_only:
        for key in ("default", "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations"):
            if key in raw:
                raise ValueError(f"{where}.{key}: Forbidden: must not be used inside anyOf/allOf/oneOf/not")
    elif s.type and s.type not in _TYPES:
        raise ValueError(f'{where}.type: Unsupported value: "{s.type}"')
    elif s.int_or_string and s.type:
        raise ValueError(f"{where}.type: Forbidden: must be empty with x-kubernetes-int-or-string")
    elif not s.type and not s.int_or_string and not s.preserve:
        raise ValueError(f"{where}.type: Required value: must not be empty for specified object fields")
    if root and s.type != "object":
        raise ValueError(f"{where}.type: Invalid value: must be object at the root")
    if "properties" in raw and "additionalProperties" in raw:
        raise ValueError(
            f"{where}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )
    for name, sub in (raw.get("properties") or {}).items():
        s.properties[name] = parse(sub, f"{where}.properties[{name}]", value_only=value_only)
    extra = raw.get("additionalProperties")
    if isinstance(extra, dict):
        s.additional = parse(extra, f"{where}.additionalProperties", value_only=value_only)
    elif extra is True:
        s.additional_any = True
    elif extra is not None:
        raise ValueError(f"{where}.additionalProperties: Forbidden: must not be false in a structural schema")
    if "items" in raw:
        s.items = parse(raw["items"], f"{where}.items", value_only=value_only)
    elif s.type == "array" and not value_only:
        raise ValueError(f"{where}.items: Required value: must be specified")
    s.required = tuple(raw.get("required") or ())
    s.enum = list(raw["enum"]) if "enum" in raw else None
    s.checks = {k: raw[k] for k in _CHECK_KEYS if k in raw}
    if "pattern" in raw:
        try:
            s.pattern = re.compile(raw["pattern"])
        except re.error as exc:
            raise ValueError(f"{where}.pattern: Invalid value: {exc}") from exc
    for key, target in (("anyOf", s.any_of), ("allOf", s.all_of), ("oneOf", s.one_of)):
        for i, sub in enumerate(raw.get(key) or ()):
            target.append(parse(sub, f"{where}.{key}[{i}]", value_only=not s.int_or_string or value_only))
    if "not" in raw:
        s.not_ = parse(raw["not"], f"{where}.not", value_only=True)
    for i, rule in enumerate(raw.get("x-kubernetes-validations") or ()):
        at = f"{where}.x-kubernetes-validations[{i}]"
        s.rules.append(parse_rule(rule, at))
        _check_field_path(s, s.rules[-1].field_path, at)
    children = [*s.properties.values(), s.additional, s.items]
    s.has_rules = bool(s.rules) or any(c is not None and c.has_rules for c in children)
    if "default" in raw:
        s.default = raw["default"]
        pruned = prune(s, copy.deepcopy(s.default))
        if pruned != s.default:
            raise ValueError(f"{where}.default: Invalid value: must not have unknown fields")
        errs = validate(s, s.default, "<default>")
        if errs:
            raise ValueError(f"{where}.default: {errs[0]['message']}")
    return s


def _check_field_path(s: Schema, field_path: str, where: str) -> None:
    """A rule's fieldPath must name a field the schema declares (ValidateFieldPath)."""
    node: Schema | None = s
    for step in field_path.split(".")[1:]:
        node = node.properties.get(step) if node is not None else None
        if node is None:
            raise ValueError(f"{where}.fieldPath: Invalid value: {field_path!r}: fieldPath must be a valid path")


def _undeclared(s: Schema, key: str) -> bool:
    """Whether ``key`` is a field ``s`` neither declares nor preserves (the pruning rule)."""
    return s.properties.get(key, s.additional) is None and not (s.preserve or s.additional_any)


def unknown_fields(s: Schema | None, value: Any, path: str = "") -> list[str]:
    """Paths of the fields :func:`prune` would drop as unknown (``spec.foo``, ``spec.items[0].bar``)."""
    if s is None:
        return []
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if _undeclared(s, key):
                out.append(where)
            else:
                out += unknown_fields(s.properties.get(key, s.additional), item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += unknown_fields(s.items, item, f"{path}[{i}]")
    return out


def prune(s: Schema | None, value: Any, *, root: bool = False) -> Any:
    """``value`` without unknown fields and non-nullable nulls lacking a default (in place)."""
    if s is None:
        return value
    if isinstance(value, dict):
        for key in list(value):
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = s.properties.get(key, s.additional)
            null = value[key] is None and sub is not None and not sub.nullable and sub.default is MISSING
            if _undeclared(s, key) or null:
                del value[key]
            else:
                prune(sub, value[key])
    elif isinstance(value, list):
        for item in value:
            prune(s.items, item)
    return value


def default(s: Schema | None, value: Any) -> Any:
    """Fill absent (or non-nullable null) fields from their defaults, in place."""
    if s is None:
        return value
    if isinstance(value, dict):
        for key, sub in s.properties.items():
            if sub.default is not MISSING and (key not in value or (value[key] is None and not sub.nullable)):
                value[key] = copy.deepcopy(sub.default)
        for key in value:
            sub_or_none = s.properties.get(key, s.additional)
            extra = s.additional if key not in s.properties else None
            if extra is not None and value[key] is None and not extra.nullable and extra.default is not MISSING:
                value[key] = copy.deepcopy(extra.default)
            default(sub_or_none, value[key])
    elif isinstance(value, list) and s.items is not None:
        for i, item in enumerate(value):
            if item is None and not s.items.nullable and s.items.default is not MISSING:
                value[i] = copy.deepcopy(s.items.default)
            default(s.items, value[i])
    return value


def _type_ok(t: str, value: Any) -> bool:
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return type_name(value) == t


def validate(s: Schema, value: Any, where: str, old: Any = MISSING) -> list[Cause]:
    """Causes for ``value`` at body path ``where`` (old value for transition rules and ratcheting):
    the schema's, then the rules' unless a schema error blocks them."""
    errs = _check(s, value, where, old)
    if not s.has_rules:
        return errs
    if any(e["reason"] in _BLOCKING for e in errs):
        return [*errs, dict(RULES_NOT_CHECKED)]
    return errs + _rule_tree(s, value, where, old)


def _check(s: Schema, value: Any, where: str, old: Any = MISSING) -> list[Cause]:
    """The schema's own causes (no rules)."""
    if old is not MISSING and equal(value, old):
        return []  # ratcheting: an unchanged subtree is not re-validated
    errs: list[Cause] = []
    if value is None:
        if not s.nullable and (s.type or s.int_or_string):
            want = s.type or "integer,string"
            msg = f'{where} in body must be of type {want}: "null"'
            errs.append(cause("FieldValueTypeInvalid", where, f'Invalid value: "null": {msg}'))
        return errs
    want = s.type if s.type else ("integer,string" if s.int_or_string and not s.any_of else "")
    if want and not any(_type_ok(t, value) for t in want.split(",")):
        got = type_name(value)
        msg = f'{where} in body must be of type {want}: "{got}"'
        return [cause("FieldValueTypeInvalid", where, f'Invalid value: "{got}": {msg}')]
    if s.enum is not None and not any(equal(value, e) for e in s.enum):
        allowed = ", ".join(json.dumps(e if isinstance(e, str) else json.dumps(e)) for e in s.enum)
        errs.append(
            cause("FieldValueNotSupported", where, f"Unsupported value: {go_value(value)}: supported values: {allowed}")
        )
    errs += _scalar_checks(s, value, where)
    if isinstance(value, dict):
        errs += _object_checks(s, value, where, old)
    elif isinstance(value, list):
        errs += _array_checks(s, value, where)
    errs += _combinators(s, value, where)
    return errs


def _scalar_checks(s: Schema, value: Any, where: str) -> list[Cause]:
    c = s.checks
    errs: list[Cause] = []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in c:
            excl = c.get("exclusiveMinimum") is True
            if value < c["minimum"] or (excl and value == c["minimum"]):
                rel = "greater than" if excl else "greater than or equal to"
                errs.append(invalid(where, value, f"{where} in body should be {rel} {go_value(float(c['minimum']))}"))
        if "maximum" in c:
            excl = c.get("exclusiveMaximum") is True
            if value > c["maximum"] or (excl and value == c["maximum"]):
                rel = "less than" if excl else "less than or equal to"
                errs.append(invalid(where, value, f"{where} in body should be {rel} {go_value(float(c['maximum']))}"))
        if "multipleOf" in c and not math.isclose(math.remainder(value, c["multipleOf"]), 0, abs_tol=1e-9):
            errs.append(invalid(where, value, f"{where} in body should be a multiple of {go_value(c['multipleOf'])}"))
        bounds = _INT_RANGE.get(str(c.get("format", "")))
        if bounds and not bounds[0] <= value <= bounds[1]:
            errs.append(invalid(where, value, f"{where} in body must be of type {c['format']}: {go_value(value)}"))
    if isinstance(value, str):
        if "minLength" in c and len(value) < c["minLength"]:
            errs.append(invalid(where, value, f"{where} in body should be at least {c['minLength']} chars long"))
        if "maxLength" in c and len(value) > c["maxLength"]:
            unit = "byte" if c["maxLength"] == 1 else "bytes"
            errs.append(cause("FieldValueTooLong", where, f"Too long: may not be more than {c['maxLength']} {unit}"))
        if s.pattern is not None and not s.pattern.search(value):
            errs.append(invalid(where, value, f"{where} in body should match '{s.pattern.pattern}'"))
        if c.get("format") in ("date-time", "datetime") and not _is_date_time(value):
            errs.append(invalid(where, value, f"{where} in body must be of type date-time: {go_value(value)}"))
    return errs


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


def join(where: str, key: str) -> str:
    """kube-openapi's body path: ``spec.maxPerRun.resources.nvidia.com/gpu`` (no quoting)."""
    return f"{where}.{key}" if where else key


def _object_checks(s: Schema, value: dict[str, Any], where: str, old: Any) -> list[Cause]:
    c = s.checks
    errs: list[Cause] = []
    for key in s.required:
        if key not in value:
            errs.append(cause("FieldValueRequired", join(where, key), "Required value"))
    if "minProperties" in c and len(value) < c["minProperties"]:
        msg = f"{where} in body should have at least {c['minProperties']} properties"
        errs.append(invalid(where, len(value), msg))
    if "maxProperties" in c and len(value) > c["maxProperties"]:
        errs.append(cause("FieldValueTooMany", where, too_many(len(value), c["maxProperties"])))
    old_map = old if isinstance(old, dict) else {}
    for key, item in value.items():
        sub = s.properties.get(key, s.additional)
        if sub is not None:
            errs += _check(sub, item, join(where, key), old_map.get(key, MISSING))
    return errs


def too_many(actual: int, most: int) -> str:
    """apimachinery's ``field.TooMany`` wording ("1 item", "2 items"), as kube-apiserver v1.34 words it."""
    return f"Too many: {actual}: must have at most {most} item{'' if most == 1 else 's'}"


def _array_checks(s: Schema, value: list[Any], where: str) -> list[Cause]:
    c = s.checks
    errs: list[Cause] = []
    if "minItems" in c and len(value) < c["minItems"]:
        errs.append(invalid(where, len(value), f"{where} in body should have at least {c['minItems']} items"))
    if "maxItems" in c and len(value) > c["maxItems"]:
        errs.append(cause("FieldValueTooMany", where, too_many(len(value), c["maxItems"])))
    if s.items is not None:
        for i, item in enumerate(value):
            errs += _check(s.items, item, f"{where}[{i}]")
    return errs


def _combinators(s: Schema, value: Any, where: str) -> list[Cause]:
    errs: list[Cause] = []
    for sub in s.all_of:
        errs += _check(sub, value, where)
    if s.any_of and all(_check(sub, value, where) for sub in s.any_of):
        errs.append(invalid(where, value, f"{where} in body must validate at least one schema (anyOf)"))
    if s.one_of and sum(not _check(sub, value, where) for sub in s.one_of) != 1:
        errs.append(invalid(where, value, f"{where} in body must validate one and only one schema (oneOf)"))
    if s.not_ is not None and not _check(s.not_, value, where):
        errs.append(invalid(where, value, f"{where} in body must not validate the schema (not)"))
    return errs


def _rule_tree(s: Schema, value: Any, where: str, old: Any) -> list[Cause]:
    """Every rule's causes, a node's own rules before its children's (cel/validation.go). Old values
    follow object keys only, so transition rules under a list never run; unchanged subtrees ratchet."""
    if not s.has_rules or value is None or (old is not MISSING and equal(value, old)):
        return []
    errs = rule_causes(s.rules, s.type or type_name(value), value, where, old)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, item in value.items():
            sub = s.properties.get(key, s.additional)
            if sub is not None:
                errs += _rule_tree(sub, item, join(where, key), old_map.get(key, MISSING))
    elif isinstance(value, list) and s.items is not None:
        for i, item in enumerate(value):
            errs += _rule_tree(s.items, item, f"{where}[{i}]", MISSING)
    return errs
