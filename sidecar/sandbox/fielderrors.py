"""Field errors as the API server words them (apimachinery pkg/util/validation/field/errors.go):
``Invalid value: <value>: <detail>``, with the value printed as Go's ``%v``/``%q`` would."""

from __future__ import annotations

import json
from typing import Any

#: a metav1.StatusCause: {"reason": "FieldValueInvalid", "message": ..., "field": "spec.x"}
Cause = dict[str, str]


def type_name(value: Any) -> str:
    """kube-openapi's name for the JSON type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it (strings quoted, numbers as Go's %v)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def cause(reason: str, where: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": where}


def invalid(where: str, value: Any, detail: str) -> Cause:
    return cause("FieldValueInvalid", where, f"Invalid value: {go_value(value)}: {detail}")
