"""RFC 6902 JSON patch (add, remove, replace, test) on a copy, as the API server applies
``application/json-patch+json``: a failed ``test`` or a bad path refuses the whole patch."""

from __future__ import annotations

import copy
from typing import Any

from sidecar.kubeobj import Obj


class PatchError(ValueError):
    """The patch cannot apply (the API server answers 422)."""


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise PatchError(f"path {path!r} does not start with /")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, append: bool) -> int:
    if append and token == "-":
        return len(container)
    if not token.isdigit() or int(token) > len(container) - (0 if append else 1):
        raise PatchError(f"index {token!r} out of range")
    return int(token)


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    *head, last = _tokens(path)
    node = doc
    for token in head:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, append=False)]
        else:
            raise PatchError(f"path {path!r} does not exist")
    return node, last


def apply(obj: Obj, ops: list[Obj]) -> Obj:
    """``obj`` patched (a new object; ``obj`` is left as it was)."""
    out = copy.deepcopy(obj)
    for op in ops:
        kind, path = op.get("op"), str(op.get("path", ""))
        parent, last = _parent(out, path)
        if kind == "test":
            value = parent.get(last) if isinstance(parent, dict) else parent[_index(parent, last, append=False)]
            if value != op.get("value"):
                raise PatchError(f"testing value {path} failed")
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                i = _index(parent, last, append=kind == "add")
                if kind == "add":
                    parent.insert(i, copy.deepcopy(op.get("value")))
                else:
                    parent[i] = copy.deepcopy(op.get("value"))
            elif isinstance(parent, dict):
                if kind == "replace" and last not in parent:
                    raise PatchError(f"replace of missing {path}")
                parent[last] = copy.deepcopy(op.get("value"))
            else:
                raise PatchError(f"path {path!r} does not exist")
        elif kind == "remove":
            if isinstance(parent, list):
                del parent[_index(parent, last, append=False)]
            elif isinstance(parent, dict) and last in parent:
                del parent[last]
            else:
                raise PatchError(f"remove of missing {path}")
        else:
            raise PatchError(f"unsupported op {kind!r}")
    return out
