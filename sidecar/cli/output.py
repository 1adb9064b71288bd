"""How the CLI prints: tables for people, JSON/YAML of the contract's messages for tools."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.message import Message

from sidecar.api.v1alpha1 import service_pb2


def to_dict(message: Message) -> Any:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def table(rows: Sequence[Sequence[str]], header: Sequence[str], *, headers: bool = True) -> str:
    """Columns padded to their widest cell; ``headers=False`` drops the header line (for scripts: --no-headers)."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    body = [list(header), *rows] if headers else list(rows)
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(line.rstrip() for line in lines)


def fragmentation_table(response: service_pb2.EvaluateResponse, *, headers: bool = True) -> str:
    rows = [
        [
            f.resource,
            str(f.providing_nodes),
            str(f.occupied_nodes),
            f"{f.min_occupied_nodes}{'' if f.min_exact else ' (bound)'}",
            f"{f.fragmentation_percent:.1f}%",
            f"{f.allocated:g}/{f.allocatable:g}",
        ]
        for f in response.resources
    ]
    header = ["RESOURCE", "PROVIDING", "OCCUPIED", "MINIMUM", "FRAGMENTATION", "ALLOCATED"]
    if any(f.message for f in response.resources):  # e.g. a resource no node provides
        header.append("MESSAGE")
        rows = [[*row, f.message] for row, f in zip(rows, response.resources, strict=True)]
    return table(rows, header, headers=headers)


def emit(message: Message, fmt: str, table: str | Callable[[], str], *, wrap_status: bool = False) -> None:
    """JSON/YAML print the message (a plan as the RepackRun's ``status:`` block); the table is built only if shown."""
    if fmt == "table":
        print(table() if callable(table) else table)
        return
    data: dict[str, Any] = to_dict(message)
    if wrap_status:
        data = {"status": data}
    if fmt == "json":
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False), end="")


def warn(warnings: Sequence[str]) -> None:
    """The answer's warnings on stderr, one ``Warning:`` line each (kubectl's way), whatever the
    output format: the data on stdout stays parseable."""
    for line in warnings:
        print(f"Warning: {line}", file=sys.stderr)
