"""Server-side field validation: the ``fieldValidation`` query parameter (Strict, Warn, Ignore).

A field the kind does not declare is refused under ``Strict`` (kubectl's default: HTTP 400
``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: unknown field
"spec.foo"``), answered with a ``Warning`` header under ``Warn`` (the API server's default when the
parameter is absent), and dropped silently under ``Ignore`` — as kube-apiserver does (its strict
JSON decoder for built-in kinds, pruning with the structural schema for custom resources). The
fields are known from the CRD's schema (``sidecar.sandbox.schema.unknown_fields``) or, for
built-in kinds, from the official client's models (``kubernetes.client.models``: every field of
every type the API server serves, with its JSON name).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kubernetes.client import models

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.registry import ResourceType

MODES = ("Strict", "Warn", "Ignore")
# the client's type notation: List[X] and Dict[str, X] (older releases: list[X], dict(str, X))
_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")
_SCALARS = frozenset({"str", "int", "float", "bool", "datetime", "date", "object", "bytes"})


def mode_of(query: dict[str, str]) -> str:
    """The request's mode: the parameter (case-sensitive, as the API server reads it), Warn when absent."""
    mode = query.get("fieldValidation", "Warn")
    if mode not in MODES:
        raise ApiError(400, f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got "{mode}"')
    return mode


def check(rt: ResourceType, obj: Obj, mode: str, warnings: list[str]) -> Obj:
    """``obj`` without undeclared fields; under Strict they are a 400, under Warn each is a warning."""
    found = unknown(rt, obj)
    if not found:
        return obj
    said = ", ".join(f'unknown field "{f}"' for f in found)
    if mode == "Strict":
        version = rt.api_version.split("/")[-1]
        raise ApiError(
            400, f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: strict decoding error: {said}'
        )
    if mode == "Warn":
        warnings.extend(f'unknown field "{f}"' for f in found)
    return drop(obj, found)


def unknown(rt: ResourceType, obj: Obj) -> list[str]:
    """Paths of the fields ``obj`` sets that its kind does not declare (``spec.containers[0].foo``)."""
    out = _walk_model("V1ObjectMeta", obj.get("metadata"), "metadata") if isinstance(obj.get("metadata"), dict) else []
    if rt.custom is not None:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        return out + rt.custom.unknown_fields(body)
    model = _model_name(rt)
    if model is None:
        return out
    body = {k: v for k, v in obj.items() if k != "metadata"}
    return out + _walk_model(model, body, "")


def drop(obj: Obj, paths: list[str]) -> Obj:
    """``obj`` with the fields at ``paths`` removed (in place)."""
    for path in paths:
        steps = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        node: Any = obj
        for step in steps[:-1]:
            node = node[int(step[1:-1])] if step.startswith("[") else node.get(step)
            if node is None:
                break
        else:
            if isinstance(node, dict):
                node.pop(steps[-1], None)
    return obj


@cache
def _model_name(rt: ResourceType) -> str | None:
    group_version = rt.api_version.split("/")
    version = group_version[-1].capitalize()
    candidates = [f"{version}{rt.kind}"]
    if len(group_version) == 1:
        candidates.insert(0, f"CoreV1{rt.kind}")
    else:
        group = group_version[0].split(".")[0].capitalize()
        candidates.insert(0, f"{group}{version}{rt.kind}")
    return next((c for c in candidates if hasattr(models, c)), None)


@cache
def _fields(model: str) -> dict[str, str]:
    """JSON name -> type of a client model's fields."""
    cls = getattr(models, model)
    return {cls.attribute_map[attr]: kind for attr, kind in cls.openapi_types.items()}


def _walk_model(kind: str, value: Any, path: str) -> list[str]:
    if value is None or kind in _SCALARS:
        return []
    if m := _LIST.match(kind):
        if not isinstance(value, list):
            return []
        return [f for i, item in enumerate(value) for f in _walk_model(m.group(1), item, f"{path}[{i}]")]
    if m := _DICT.match(kind):
        if not isinstance(value, dict):
            return []
        inner = m.group(1) or m.group(2)
        return [f for k, item in value.items() for f in _walk_model(inner, item, f"{path}.{k}")]
    if not hasattr(models, kind) or not isinstance(value, dict):
        return []
    fields = _fields(kind)
    out: list[str] = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            out.append(where)
        else:
            out += _walk_model(fields[key], item, where)
    return out
