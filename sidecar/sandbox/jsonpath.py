"""The JSONPath subset printer columns use: ``.a.b``, ``.a[0].b``, ``.a[*].b``, ``.a['x.y']`` and
``.a[?(@.type=="Ready")].status`` (client-go util/jsonpath, as the CRD table convertor calls it).

Anything else is refused when the CRD is registered, so a column never silently shows nothing.
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z0-9_-]+)
  | \[(?P<index>\d+)\]
  | \[(?P<star>\*)\]
  | \[(?P<q>['"])(?P<key>[^'"]*)(?P=q)\]
  | \[\?\(@(?P<fpath>(?:\.[A-Za-z0-9_-]+)+)\s*(?P<fop>==|!=)\s*(?P<flit>"[^"]*"|'[^']*'|-?\d+(?:\.\d+)?|true|false)\)\]
  """,
    re.VERBOSE,
)

Step = tuple[str, Any]


def compile_path(text: str) -> list[Step]:
    """Parse a printer-column JSONPath; raises ValueError outside the subset."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    if not body.startswith((".", "[")):
        raise ValueError(f"unsupported JSONPath {text!r} (must start with '.')")
    steps: list[Step] = []
    pos = 0
    while pos < len(body):
        m = _STEP.match(body, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {text!r} at {body[pos:]!r}")
        if m.group("name") is not None:
            steps.append(("key", m.group("name")))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        elif m.group("star") is not None:
            steps.append(("all", None))
        elif m.group("q") is not None:
            steps.append(("key", m.group("key")))
        else:
            lit = m.group("flit")
            value: Any
            if lit[0] in "\"'":
                value = lit[1:-1]
            elif lit in ("true", "false"):
                value = lit == "true"
            else:
                value = float(lit) if "." in lit else int(lit)
            steps.append(("filter", (m.group("fpath")[1:].split("."), m.group("fop"), value)))
        pos = m.end()
    return steps


def find(steps: list[Step], obj: Any) -> list[Any]:
    """Every value the path selects (an empty list when nothing matches)."""
    current = [obj]
    for kind, arg in steps:
        nxt: list[Any] = []
        for value in current:
            keyed = kind == "key" and isinstance(value, dict) and arg in value
            if keyed or (kind == "index" and isinstance(value, list) and arg < len(value)):
                nxt.append(value[arg])
            elif kind == "all" and isinstance(value, list):
                nxt.extend(value)
            elif kind == "all" and isinstance(value, dict):
                nxt.extend(value.values())
            elif kind == "filter" and isinstance(value, list):
                fpath, op, lit = arg
                for item in value:
                    got = _get(item, fpath)
                    if got is not _NONE and (got == lit) == (op == "=="):
                        nxt.append(item)
        current = nxt
    return current


_NONE = object()


def _get(value: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _NONE
        value = value[key]
    return value
