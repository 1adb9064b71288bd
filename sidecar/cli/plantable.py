"""The plan as a person reads it: a summary, the moves grouped by the node they empty, and why the
other nodes were not emptied (counted by reason from ``plan.candidates``).

At cluster scale (hundreds of freed nodes) the default view stays a screen or two: lists are cut
with "… and N more"; ``-o wide`` prints every move and every node's reason.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass

from sidecar.api.v1alpha1 import plan_pb2
from sidecar.cli.output import table
from sidecar.wording import change, count

#: what the default (not wide) view shows before cutting a list
FREED_SHOWN = 8
LINE_WIDTH = 110
SOURCES_SHOWN = 10
MESSAGE_WIDTH = 90


@dataclass(frozen=True)
class Row:
    source: str
    pod: str
    target: str
    cards: float
    pod_group: str
    owner: str


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _listed(names: list[str], shown: int | None) -> str:
    if shown is None or len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f" … and {len(names) - shown} more"


def summary(status: plan_pb2.RepackStatus, *, wide: bool) -> list[str]:
    cond = status.conditions[0] if status.conditions else None
    plan = status.plan
    s = plan.summary
    cost = s.cost
    before, after = s.before, s.after
    pod_groups = {(m.namespace, m.pod_group_name) for m in plan.moves}
    pods = sum(len(m.pods) for m in plan.moves)
    lines = [f"Result: {cond.reason} — {cond.message}" if cond else f"Result: {status.phase}"]
    frag = f"Fragmentation: {s.resource or '-'} {change(s.frag_before_percent, s.frag_after_percent)}"
    if before.providing_nodes:
        frag += (
            f" (occupied nodes {before.occupied_nodes} -> {after.occupied_nodes or before.occupied_nodes},"
            f" minimum {before.min_occupied_nodes}{'' if before.min_exact else ' or more'},"
            f" {before.providing_nodes} nodes provide it)"
        )
    lines.append(frag)
    freed = list(plan.freed_nodes)
    lines.append(f"Freed nodes: {s.freed_node_count}")
    if freed:
        listed = _listed(freed, None if wide else FREED_SHOWN)
        listed += " (-o wide lists all)" if not wide and len(freed) > FREED_SHOWN else ""
        lines += textwrap.wrap(listed, LINE_WIDTH, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    lines.append(
        f"Moves: {count(pods, 'pod')}, {count(s.moved_card_count, 'card')}; {count(len(pod_groups), 'PodGroup')}"
        f" disturbed ({cost.pod_groups_below_min_available} below MinAvailable,"
        f" {count(cost.affected_workloads, 'workload')} affected)"
    )
    scope = s.resolved_scope
    lines.append(f"Scope: {count(scope.pod_group_count, 'PodGroup')}, {count(scope.node_count, 'node')}")
    return lines


def _rows(plan: plan_pb2.Plan) -> dict[str, list[Row]]:
    """Pod moves grouped by source node, nodes in ``freed_nodes`` order (the order the plan chose them)."""
    by_source: dict[str, list[Row]] = {node: [] for node in plan.freed_nodes}
    for m in plan.moves:
        owner = f"{m.owner.kind}/{m.owner.name}" if m.owner.kind else "-"
        for p in m.pods:
            row = Row(p.from_node, p.name, p.to_node, p.cards, f"{m.namespace}/{m.pod_group_name}", owner)
            by_source.setdefault(p.from_node, []).append(row)
    return {node: rows for node, rows in by_source.items() if rows}


def moves_table(plan: plan_pb2.Plan, *, wide: bool, headers: bool) -> list[str]:
    by_source = _rows(plan)
    if not by_source:
        return []
    sources = list(by_source)
    shown = sources if wide else sources[:SOURCES_SHOWN]
    rows: list[list[str]] = []
    for source in shown:
        for k, r in enumerate(by_source[source]):
            rows.append([source if k == 0 else "", r.pod, r.target, f"{r.cards:g}", r.pod_group, r.owner])
    out = ["", f"Moves by source node ({len(sources)} nodes emptied):"]
    out.append(table(rows, ["FROM", "POD", "TO", "CARDS", "PODGROUP", "OWNER"], headers=headers))
    hidden = sources[len(shown) :]
    if hidden:
        pods = sum(len(by_source[s]) for s in hidden)
        out.append(f"… and {len(hidden)} more source nodes ({pods} pods; -o wide lists every move)")
    return out


def reasons_table(plan: plan_pb2.Plan, *, wide: bool, headers: bool) -> list[str]:
    """Why each node that was not emptied stayed: counted by reason, one example each (every node with -o wide)."""
    kept = [c for c in plan.candidates if not c.selected and c.reason != "Emptied"]
    if not kept:
        return []
    out = ["", f"Nodes not emptied ({len(kept)}), by reason:"]
    if wide:
        rows = [[c.node, c.reason, c.message] for c in sorted(kept, key=lambda c: (c.reason, c.node))]
        out.append(table(rows, ["NODE", "REASON", "MESSAGE"], headers=headers))
        return out
    counts = Counter(c.reason for c in kept)
    first: dict[str, plan_pb2.CandidateExplanation] = {}
    for c in kept:
        first.setdefault(c.reason, c)
    rows = [
        [reason, str(n), _cut(f"{first[reason].node}: {first[reason].message}", MESSAGE_WIDTH)]
        for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    out.append(table(rows, ["REASON", "NODES", "EXAMPLE"], headers=headers))
    return out


def target_table(plan: plan_pb2.Plan, *, headers: bool) -> list[str]:
    """A targeted run's answer (spec.for): the verdict, then where each waiting pod would land, or
    the first one that still does not fit and why."""
    t = plan.target
    if not t.pod_group:
        return []
    out = ["", f"Target {t.pod_group}: {t.verdict} (minAvailable {t.min_available}, {t.ready} started, "
                f"{t.waiting} waiting)"]  # fmt: skip
    if t.placements:
        rows = [[p.pod_name, p.node, "yes" if p.pipelined else ""] for p in t.placements]
        out.append(table(rows, ["POD", "LANDS ON", "PIPELINED"], headers=headers))
    if t.stuck_pod_name:
        out += textwrap.wrap(f"{t.stuck_pod_name} does not fit: {t.message}", LINE_WIDTH, subsequent_indent="  ")
    return out


def plan_table(status: plan_pb2.RepackStatus, *, wide: bool = False, headers: bool = True) -> str:
    lines = summary(status, wide=wide)
    lines += target_table(status.plan, headers=headers)
    lines += moves_table(status.plan, wide=wide, headers=headers)
    lines += reasons_table(status.plan, wide=wide, headers=headers)
    return "\n".join(lines)
