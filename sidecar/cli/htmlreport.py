"""``plan --html FILE``: the plan as a picture — one self-contained HTML file, no server, no external assets.

The summary (freed nodes by name), the moves as a table (pod, from, to, cards), then one column
per node that provides the goal resource, in name order: its name, a **before** row (cards in use,
the cards that will move out marked) and an **after** row (cards that stay, the cards that arrive
marked; a freed node's column is green). Before and after share a column, so they cannot drift
apart. Occupancy is what fragmentation counts (tasks that stay on their node, see
``snapshot.holding.holding_tasks``); the moves come from the plan. A few lines of inline script
light a column under the pointer and record layout facts (names shown, rows aligned) on the root
element for the headless-browser test; the page reads the same without it.
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.snapshot.decode import decode
from sidecar.snapshot.holding import holding_tasks
from sidecar.snapshot.units import to_user_units
from sidecar.wording import change, count

#: nodes with at most this many whole cards are drawn card by card, larger ones as a bar
MAX_CELLS = 16

STYLE = """
body{font:14px system-ui,sans-serif;margin:16px;color:#222;max-width:1400px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:18px 0 6px}
.summary td{padding:1px 12px 1px 0;vertical-align:top}
.legend span{display:inline-block;margin-right:14px}
.legend i,.tile i{display:inline-block;width:var(--cell);height:var(--cell);margin:1px;border:1px solid #999;
  vertical-align:middle}
.legend i{width:12px;height:12px}
.nodes{display:grid;grid-template-columns:repeat(auto-fill,minmax(calc(4*(var(--cell) + 4px) + 48px),1fr));gap:6px}
.col{border:1px solid #bbb;border-radius:3px;padding:3px 4px;background:#fff}
.col.freed{border-color:#1a9850;background:#e5f5e0}
.col.lit{outline:2px solid #d73027}
.name{font-size:calc(6px + var(--cell)/2);font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tile{display:flex;align-items:center;gap:4px;line-height:0;min-height:14px}
.tile em{font:10px system-ui,sans-serif;color:#666;width:30px;flex:none;line-height:12px}
.cells{display:flex;flex-wrap:wrap;width:calc(4*(var(--cell) + 4px))}
.stay{background:#737373} .out{background:#f46d43} .in{background:#4575b4} .free{background:#fff}
.bar{display:flex;width:calc(4*(var(--cell) + 4px) - 2px);height:var(--cell);margin:1px 0;border:1px solid #999}
.bar b{display:block;height:100%}
table.moves{border-collapse:collapse;font-size:13px}
table.moves td,table.moves th{padding:2px 10px 2px 0;text-align:left}
"""

SCRIPT = """
(function(){
  var cols=document.querySelectorAll('.col');
  cols.forEach(function(c){
    c.addEventListener('mouseenter',function(){c.classList.add('lit');});
    c.addEventListener('mouseleave',function(){c.classList.remove('lit');});
  });
  // layout facts a headless browser test reads back: names shown, before/after rows in line
  var named=0, aligned=true, rowTop={};
  cols.forEach(function(c){
    var name=c.querySelector('.name'), b=c.querySelector('.before .cells'), a=c.querySelector('.after .cells');
    if(name.offsetWidth>0 && name.textContent===c.dataset.node) named++;
    var rb=b.getBoundingClientRect(), ra=a.getBoundingClientRect(), top=Math.round(c.getBoundingClientRect().top);
    if(Math.abs(rb.left-ra.left)>0.5) aligned=false;
    var key=String(top), off=[Math.round(rb.top-top), Math.round(ra.top-top)].join(',');
    if(key in rowTop && rowTop[key]!==off) aligned=false;
    rowTop[key]=off;
  });
  var root=document.documentElement.dataset;
  root.nodes=String(cols.length); root.named=String(named); root.aligned=String(aligned);
})();
"""

#: freed nodes named in the summary (the rest counted)
NAMED_FREED = 20
#: card cell size (px): large while the nodes fit a screen, smaller for big clusters
BIG_CELL, SMALL_CELL, BIG_UPTO = 18, 10, 60


@dataclass(frozen=True)
class NodeView:
    name: str
    capacity: float
    stay: float  # cards held before and after
    moving_out: float
    moving_in: float
    freed: bool


def node_views(snapshot: pb.Snapshot, status: plan_pb2.RepackStatus, resource: str) -> list[NodeView]:
    """Per providing node, in name order: what it holds before the plan and after it, in cards."""
    state = decode(snapshot)
    if not state.has_resource(resource):
        return []
    g = state.resource(resource)
    holds = holding_tasks(state)
    used = np.zeros(state.n_nodes)
    np.add.at(used, state.task_node[holds], state.task_req[holds, g])
    out_cards: dict[str, float] = defaultdict(float)
    in_cards: dict[str, float] = defaultdict(float)
    for move in status.plan.moves:
        for pod in move.pods:
            out_cards[pod.from_node] += pod.cards
            in_cards[pod.to_node] += pod.cards
    freed = set(status.plan.freed_nodes)
    views = []
    for n in sorted(range(state.n_nodes), key=lambda i: state.node_names[i]):
        capacity = to_user_units(resource, float(state.node_alloc[n, g]))
        if capacity <= 0:
            continue
        name = state.node_names[n]
        before = to_user_units(resource, float(used[n]))
        moving_out = min(out_cards.get(name, 0.0), before)
        views.append(NodeView(name, capacity, before - moving_out, moving_out, in_cards.get(name, 0.0), name in freed))
    return views


def _cells(capacity: float, parts: list[tuple[str, float]]) -> str:
    """Card cells when the node has few whole cards, else a proportional bar."""
    whole = capacity == int(capacity) and all(v == int(v) for _, v in parts)
    if whole and capacity <= MAX_CELLS:
        cells = [f'<i class="{cls}"></i>' for cls, v in parts for _ in range(int(v))]
        cells += ['<i class="free"></i>'] * max(int(capacity) - len(cells), 0)
        return "".join(cells)
    segments = [(cls, v) for cls, v in parts if v > 0]
    free = max(capacity - sum(v for _, v in segments), 0.0)
    bar = "".join(f'<b class="{cls}" style="width:{100 * v / capacity:.1f}%"></b>' for cls, v in segments)
    return f'<span class="bar">{bar}<b class="free" style="width:{100 * free / capacity:.1f}%"></b></span>'


def _tile(view: NodeView, after: bool) -> str:
    """One row of a node's column: its cards before the plan or after it."""
    if after:
        parts = [("stay", view.stay), ("in", view.moving_in)]
        used = view.stay + view.moving_in
        note = f"{used:g}/{view.capacity:g} cards after" + (f", {view.moving_in:g} arrive" if view.moving_in else "")
        note += ", freed by the plan" if view.freed else ""
    else:
        parts = [("stay", view.stay), ("out", view.moving_out)]
        used = view.stay + view.moving_out
        note = f"{used:g}/{view.capacity:g} cards before" + (
            f", {view.moving_out:g} move out" if view.moving_out else ""
        )
    which = "after" if after else "before"
    title = html.escape(f"{view.name}: {note}", quote=True)
    cells = _cells(view.capacity, parts)
    return f'<div class="tile {which}" title="{title}"><em>{which}</em><span class="cells">{cells}</span></div>'


def _column(view: NodeView) -> str:
    """A node: its name, then its before and after rows (one column, so they line up)."""
    name = html.escape(view.name, quote=True)
    cls = "col freed" if view.freed else "col"
    return (
        f'<div class="{cls}" data-node="{name}"><div class="name" title="{name}">{html.escape(view.name)}</div>'
        f"{_tile(view, after=False)}{_tile(view, after=True)}</div>"
    )


def render(snapshot: pb.Snapshot, spec: spec_pb2.RepackSpec, status: plan_pb2.RepackStatus) -> str:
    """The whole HTML document."""
    summary = status.plan.summary
    resource = summary.resource or (spec.goals[0].resource if spec.goals else "")
    views = node_views(snapshot, status, resource)
    moves = [(m, p) for m in status.plan.moves for p in m.pods]
    cond = status.conditions[0] if status.conditions else None
    esc = html.escape
    freed = list(status.plan.freed_nodes)
    named = ", ".join(freed[:NAMED_FREED]) + (
        f" and {len(freed) - NAMED_FREED} more" if len(freed) > NAMED_FREED else ""
    )
    rows = [
        ("Result", f"{cond.reason} — {cond.message}" if cond else status.phase),
        ("Fragmentation", change(summary.frag_before_percent, summary.frag_after_percent)),
        ("Freed nodes", f"{summary.freed_node_count}" + (f": {named}" if freed else "")),
        ("Moved", f"{count(len(moves), 'pod')}, {count(summary.moved_card_count, 'card')}"),
        ("Nodes drawn", f"{len(views)} provide {resource} (of {len(snapshot.nodes)} in the snapshot)"),
        *(("Warning", w) for w in status.warnings),
    ]
    move_rows = "".join(
        f"<tr><td>{esc(m.namespace)}/{esc(p.name)}</td><td>{esc(p.from_node)}</td><td>→ {esc(p.to_node)}</td>"
        f"<td>{esc(count(p.cards, 'card'))}</td></tr>"
        for m, p in moves
    )
    moves_table = (
        '<table class="moves" id="moves"><tr><th>pod</th><th>from</th><th>to</th><th>cards</th></tr>'
        f"{move_rows}</table>"
        if moves
        else "<p>No pod moves.</p>"
    )
    columns = "".join(_column(v) for v in views)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Repack plan: {esc(resource)}</title>
<style>{STYLE}</style></head>
<body style="--cell:{BIG_CELL if len(views) <= BIG_UPTO else SMALL_CELL}px">
<h1>Repack plan for {esc(resource)}</h1>
<table class="summary">{"".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows)}</table>
<h2>{count(len(moves), "pod move")}</h2>
{moves_table}
<h2>Nodes: before and after the plan</h2>
<p class="legend"><span><i class="stay"></i>in use, stays</span><span><i class="out"></i>moves out</span>
<span><i class="in"></i>moves in</span><span><i class="free"></i>free</span>
<span><i class="free" style="border:2px solid #1a9850;background:#e5f5e0"></i>node freed by the plan</span></p>
<div class="nodes" id="nodes">{columns}</div>
<script>{SCRIPT}</script>
</body></html>
"""


def write_report(
    snapshot: pb.Snapshot, spec: spec_pb2.RepackSpec, status: plan_pb2.RepackStatus, path: str | Path
) -> int:
    """Write the file; returns how many nodes it draws."""
    text = render(snapshot, spec, status)
    Path(path).write_text(text, encoding="utf-8")
    return text.count('<div class="col')
