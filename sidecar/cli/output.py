"""How the CLI prints: tables for people, JSON/YAML of the contract's messages for tools."""

from __future__ import annotations

import json
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.message import Message

from sidecar.api.v1alpha1 import plan_pb2, service_pb2


def to_dict(message: Message) -> Any:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def fragmentation_table(response: service_pb2.EvaluateResponse) -> str:
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
    return table(rows, ["RESOURCE", "PROVIDING", "OCCUPIED", "MINIMUM", "FRAGMENTATION", "ALLOCATED"])


def emit(message: Message, fmt: str, table: str, *, wrap_status: bool = False) -> None:
    """JSON/YAML print the message; a plan prints as the RepackRun's ``status:`` block."""
    data: dict[str, Any] = to_dict(message)
    if wrap_status:
        data = {"status": data}
    if fmt == "json":
        print(json.dumps(data, indent=2))
    elif fmt == "yaml":
        print(yaml.safe_dump(data, sort_keys=False), end="")
    else:
        print(table)


def plan_table(status: plan_pb2.RepackStatus) -> str:
    cond = status.conditions[0]
    summary = status.plan.summary
    lines = [
        f"Result: {cond.reason} — {cond.message}",
        f"Fragmentation of {summary.resource}: {summary.frag_before_percent:g}% -> {summary.frag_after_percent:g}%; "
        f"freed nodes {summary.freed_node_count}; moved cards {summary.moved_card_count:g}; "
        f"scope: {summary.resolved_scope.pod_group_count} PodGroups, {summary.resolved_scope.node_count} nodes",
    ]
    if status.plan.moves:
        rows = [
            [
                f"{m.owner.kind}/{m.owner.name}",
                f"{m.namespace}/{m.pod_group_name}",
                p.name,
                p.from_node,
                p.to_node,
                f"{p.cards:g}",
            ]
            for m in status.plan.moves
            for p in m.pods
        ]
        lines += ["", table(rows, ["OWNER", "PODGROUP", "POD", "FROM", "TO", "CARDS"])]
        lines += ["", "Freed nodes: " + ", ".join(status.plan.freed_nodes)]
    return "\n".join(lines)
