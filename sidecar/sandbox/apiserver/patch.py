"""The three PATCH formats: JSON merge patch (RFC 7386), strategic merge patch, JSON patch (RFC 6902).

Strategic merge keys are the ones core kinds declare (pods and nodes, what the watcher and kubectl
send); they are keyed by field name, which is unambiguous for those kinds.
"""

from __future__ import annotations

import copy
from typing import Any

from sidecar.sandbox.apiserver.apierrors import ApiError

#: field name → merge key of its list items ("" merges a primitive list as a set; absent → replace)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "ports": "containerPort",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "finalizers": "",
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Merge like the API server for core kinds: lists with a merge key merge by it, directives honoured."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in value]
        elif key.startswith("$") or value is None:
            if value is None:
                out.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            out[key] = _merge_list(out.get(key) or [], value, MERGE_KEYS[key])
        elif isinstance(value, dict):
            merged = strategic_merge_patch(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    if key == "":  # primitive list with merge strategy: union, order kept
        return [*current, *(v for v in patch if v not in current)]
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise ApiError(422, f"strategic merge patch: list item without merge key {key!r}", reason="Invalid")
        at = next((i for i, c in enumerate(out) if isinstance(c, dict) and c.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
        elif at is None:
            out.append(strategic_merge_patch({}, item))
        else:
            out[at] = strategic_merge_patch(out[at], item)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"json patch: invalid path {path!r}", reason="Invalid")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts[:-1]:
        try:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, f"json patch: path segment {part!r} not found", reason="Invalid") from exc
    return cur


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts)
    try:
        return parent[int(parts[-1])] if isinstance(parent, list) else parent[parts[-1]]
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise ApiError(422, f"json patch: {path} not found", reason="Invalid") from exc


def _remove(doc: Any, path: str) -> Any:
    value = _get(doc, path)
    parts = _pointer(path)
    parent = _parent(doc, parts)
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]
    return value


def _add(doc: Any, path: str, value: Any, *, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if index > len(parent) or (replace and index >= len(parent)):
            raise ApiError(422, f"json patch: index {index} out of range", reason="Invalid")
        if replace:
            parent[index] = copy.deepcopy(value)
        else:
            parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        if replace and last not in parent:
            raise ApiError(422, f"json patch: replace of missing {path}", reason="Invalid")
        parent[last] = copy.deepcopy(value)
    else:
        raise ApiError(422, f"json patch: {path} has no parent object", reason="Invalid")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 on a copy: add, remove, replace, move, copy, test (a failed test is 422, as the server)."""
    if not isinstance(ops, list):
        raise ApiError(400, "json patch: expected a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, op.get("value"))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            doc = _add(doc, path, op.get("value"), replace=True)
        elif kind == "move":
            doc = _add(doc, path, _remove(doc, op["from"]))
        elif kind == "copy":
            doc = _add(doc, path, _get(doc, op["from"]))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise ApiError(422, f"json patch: test failed at {path}", reason="Invalid")
        else:
            raise ApiError(422, f"json patch: unknown op {kind!r}", reason="Invalid")
    return doc
