"""``x-kubernetes-validations`` entries: parsed with their message, reason and fieldPath, and the
causes a failed rule gives, worded as apiextensions-apiserver's CEL validator words them
(pkg/apiserver/schema/cel/validation.go). The expressions themselves are :mod:`sidecar.sandbox.cel`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sidecar.sandbox.cel import MISSING, Rule
from sidecar.sandbox.fielderrors import Cause, cause

_REASONS = {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}


@dataclass
class XRule:
    rule: Rule
    message: str
    reason: str
    field_path: str


def parse_rule(raw: Any, where: str) -> XRule:
    if not isinstance(raw, dict) or not isinstance(raw.get("rule"), str):
        raise ValueError(f"{where}.rule: Required value")
    for key in ("messageExpression", "optionalOldSelf"):
        if key in raw:
            raise ValueError(f"{where}.{key}: Forbidden: not supported by the sandbox (no CEL engine)")
    reason = raw.get("reason", "FieldValueInvalid")
    if reason not in _REASONS:
        raise ValueError(f'{where}.reason: Unsupported value: "{reason}"')
    field_path = raw.get("fieldPath", "")
    if field_path and not re.fullmatch(r"(\.[A-Za-z_][A-Za-z0-9_]*)+", field_path):
        raise ValueError(f"{where}.fieldPath: Invalid value: only .a.b paths are supported")
    try:
        rule = Rule(raw["rule"])
    except ValueError as exc:
        raise ValueError(f"{where}.rule: Invalid value: {raw['rule']!r}: {exc}") from exc
    return XRule(rule, str(raw.get("message", "")), reason, field_path)


def rule_causes(rules: list[XRule], type_: str, value: Any, where: str, old: Any) -> list[Cause]:
    """The causes of the ``rules`` declared on a node of type ``type_`` that fail for ``value``."""
    errs: list[Cause] = []
    for xr in rules:
        if xr.rule.transition and old is MISSING:
            continue  # transition rules run only on update, where an old value exists
        outcome = xr.rule.evaluate(value, old)
        if outcome is None:
            continue
        if outcome:  # an evaluation error: reported on the rule's own node, whatever its fieldPath
            errs.append(cause("FieldValueInvalid", where, f'Invalid value: "{type_}": {_eval_error(xr, outcome)}'))
            continue
        path = where + xr.field_path
        detail = xr.message or f"failed rule: {xr.rule.text.strip()}"
        if xr.reason == "FieldValueForbidden":
            errs.append(cause(xr.reason, path, f"Forbidden: {detail}"))
        elif xr.reason == "FieldValueRequired":
            errs.append(cause(xr.reason, path, f"Required value: {detail}"))
        elif xr.reason == "FieldValueDuplicate":
            errs.append(cause(xr.reason, path, f'Duplicate value: "{type_}"'))
        else:
            errs.append(cause(xr.reason, path, f'Invalid value: "{type_}": {detail}'))
    return errs


def _eval_error(xr: XRule, error: str) -> str:
    """validateExpressions' wording for a rule that could not be evaluated."""
    rule = xr.message.strip() or xr.rule.text.strip()
    if error.startswith("no such overload"):
        why = "call arguments did not match a supported operator, function or macro signature"
        return f"'{error}': {why} for rule: {rule}"
    return f"{error} evaluating rule: {rule}"
