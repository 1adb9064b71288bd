"""Label and field selectors as the API server parses them (``?labelSelector=``, ``?fieldSelector=``).

Each selector compiles once per request into a predicate over an object dict, so a list of 6k pods
pays the parse once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sidecar.sandbox.apiserver.apierrors import ApiError

Predicate = Callable[[dict[str, Any]], bool]

_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses (``a in (x,y),b`` is two requirements)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Callable[[dict[str, str]], bool]:
    if m := _SET.match(text):
        key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _CMP.match(text):
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS.match(text):
        negate, key = m.group(1) == "!", m.group(2)
        return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
    raise ApiError(400, f"unable to parse requirement: {text.strip()!r}")


def label_selector(text: str | None) -> Predicate:
    """``app=a,tier!=db,env in (x,y),!legacy,gpu`` → predicate on ``metadata.labels``."""
    if not text:
        return lambda obj: True
    reqs = [_requirement(p) for p in _split(text)]

    def match(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r(labels) for r in reqs)

    return match


def field_value(obj: dict[str, Any], path: str) -> str:
    """A dotted field as the string the server compares (missing → ``""``)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_selector(text: str | None) -> Predicate:
    """``spec.nodeName=n1,status.phase!=Failed`` → predicate (any dotted path; = == != only, as the server)."""
    if not text:
        return lambda obj: True
    reqs: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, f"invalid field selector: {part!r}")
        reqs.append((m.group(1), m.group(2) == "!=", m.group(3)))

    def match(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) != negate for path, negate, value in reqs)

    return match
