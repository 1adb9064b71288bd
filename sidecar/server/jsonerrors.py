"""Where a malformed JSON body went wrong, said as a JSON path (``$.Nodes.n1.Allocatable``), for
the answers of the extender intake: msgspec reports a byte offset, an operator wants the field."""

from __future__ import annotations

import re
from typing import Any

import orjson

from sidecar.errors import InputError

#: beyond this offset a malformed body's error names the byte and the nearest key, not the JSON path:
#: the scan runs at ~5 MiB/s in Python and must fit in a verb's deadline (predicate bodies are ~62 KB)
PATH_SCAN_LIMIT = 1 << 20
_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:')

_MALFORMED = re.compile(r"\(byte (\d+)\)")
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def json_path_at(body: bytes, offset: int) -> str:
    """The JSON path (``$.Nodes.n1.Allocatable``, ``$.nodes[2]``) of the value at byte ``offset``."""
    stack: list[list[Any]] = []  # [key or index, expecting a key (objects only)]
    for m in _TOKEN.finditer(body, 0, offset):
        tok = m.group()
        if tok in (b"{", b"["):
            stack.append(["", True] if tok == b"{" else [0, False])
        elif tok in (b"}", b"]"):
            if stack:
                stack.pop()
        elif tok == b",":
            if stack and isinstance(stack[-1][0], int):
                stack[-1][0] += 1
            elif stack:
                stack[-1][1] = True
        elif tok == b":":
            if stack:
                stack[-1][1] = False
        elif stack and stack[-1][1] is True and isinstance(stack[-1][0], str):
            try:
                stack[-1][0] = orjson.loads(tok)
            except orjson.JSONDecodeError:  # a key that is itself malformed: name it as written
                stack[-1][0] = tok[1:-1].decode(errors="replace")
    path = "$"
    for key, expecting_key in stack:
        if expecting_key:  # between an object's members: the object itself
            break
        path += f"[{key}]" if isinstance(key, int) else f".{key}"
    return path


def named(exc: InputError, body: bytes) -> InputError:
    """A malformed-JSON error (``... (byte N)`` at ``$``) with the JSON path of byte N, and NaN/Infinity
    said so; other errors unchanged."""
    m = _MALFORMED.search(exc.problem)
    if exc.field != "$" or m is None:
        return exc
    offset = int(m.group(1))
    problem = exc.problem
    if body[offset : offset + 9].lstrip(b"-+").startswith((b"NaN", b"Infinity", b"inf", b"nan")):
        problem += "; NaN and Infinity are not JSON numbers"
    if offset > PATH_SCAN_LIMIT:
        keys = _KEY_BEFORE.findall(body, max(0, offset - 4096), offset)
        return InputError("$", problem + (f'; after the key "{keys[-1].decode(errors="replace")}"' if keys else ""))
    return InputError(json_path_at(body, offset), problem)
