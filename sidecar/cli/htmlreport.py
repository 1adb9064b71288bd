"""``plan --html FILE``: the plan as a picture — one self-contained HTML file, no server, no external assets.

Two grids of the nodes that provide the goal resource, in the same order: **before** (cards in use,
the cards that will move out marked) and **after** (cards that stay, the cards that arrive marked,
freed nodes outlined). Occupancy is what fragmentation counts (tasks that stay on their node, see
``repack.fragmentation.holding_mask``); the moves come from the plan. At 1,500 nodes a node is a
small tile of card cells, so the whole cluster fits a screen or two; hovering a tile names it and
lights the same node in the other grid (a few lines of inline script, optional for reading).
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.repack.fragmentation import holding_mask
from sidecar.snapshot.decode import decode
from sidecar.snapshot.units import to_user_units
from sidecar.wording import count

#: nodes with at most this many whole cards are drawn card by card, larger ones as a bar
MAX_CELLS = 16

STYLE = """
body{font:14px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:18px 0 6px}
.summary td{padding:1px 12px 1px 0}
.legend span{display:inline-block;margin-right:14px}
.legend i,.node i{display:inline-block;width:7px;height:7px;margin:1px;border:1px solid #999;vertical-align:middle}
.grid{display:flex;flex-wrap:wrap;gap:3px;align-items:flex-start}
.node{border:1px solid #bbb;padding:1px;line-height:0;background:#fff}
.node.freed{border:2px solid #1a9850;background:#e5f5e0}
.node.lit{outline:2px solid #d73027}
.stay{background:#737373} .out{background:#f46d43} .in{background:#4575b4} .free{background:#fff}
.bar{display:flex;width:42px;height:9px;margin:1px 0}
.bar b{display:block;height:100%}
details{margin-top:16px} pre{font-size:12px}
"""

SCRIPT = """
(function(){
  var tiles=document.querySelectorAll('.node');
  function light(name,on){document.querySelectorAll('.node[data-node="'+CSS.escape(name)+'"]')
    .forEach(function(t){t.classList.toggle('lit',on);});}
  tiles.forEach(function(t){
    t.addEventListener('mouseenter',function(){light(t.dataset.node,true);});
    t.addEventListener('mouseleave',function(){light(t.dataset.node,false);});
  });
  document.documentElement.dataset.tiles=String(tiles.length);
})();
"""


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
    holds = holding_mask(state) & (state.task_node >= 0)
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
    name = html.escape(view.name, quote=True)
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
    cls = "node freed" if after and view.freed else "node"
    title = html.escape(f"{view.name}: {note}", quote=True)
    cols = int(min(view.capacity, 4)) if view.capacity <= MAX_CELLS else 4
    style = f' style="width:{11 * max(cols, 1)}px"'
    return f'<div class="{cls}" data-node="{name}" title="{title}"{style}>{_cells(view.capacity, parts)}</div>'


def render(snapshot: pb.Snapshot, spec: spec_pb2.RepackSpec, status: plan_pb2.RepackStatus) -> str:
    """The whole HTML document."""
    summary = status.plan.summary
    resource = summary.resource or (spec.goals[0].resource if spec.goals else "")
    views = node_views(snapshot, status, resource)
    moves = [(m, p) for m in status.plan.moves for p in m.pods]
    cond = status.conditions[0] if status.conditions else None
    esc = html.escape
    rows = [
        ("Result", f"{cond.reason} — {cond.message}" if cond else status.phase),
        ("Fragmentation", f"{summary.frag_before_percent:g}% → {summary.frag_after_percent:g}%"),
        ("Freed nodes", str(summary.freed_node_count)),
        ("Moved", f"{len(moves)} pods, {summary.moved_card_count:g} cards"),
        ("Nodes drawn", f"{len(views)} provide {resource} (of {len(snapshot.nodes)} in the snapshot)"),
    ]
    move_lines = "\n".join(
        esc(f"{m.namespace}/{p.name}: {p.from_node} → {p.to_node} ({count(p.cards, 'card')})") for m, p in moves
    )
    before = "".join(_tile(v, after=False) for v in views)
    after = "".join(_tile(v, after=True) for v in views)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Repack plan: {esc(resource)}</title>
<style>{STYLE}</style></head>
<body>
<h1>Repack plan for {esc(resource)}</h1>
<table class="summary">{"".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows)}</table>
<p class="legend"><span><i class="stay"></i>in use, stays</span><span><i class="out"></i>moves out</span>
<span><i class="in"></i>moves in</span><span><i class="free"></i>free</span>
<span><i class="free" style="border:2px solid #1a9850;background:#e5f5e0"></i>node freed</span></p>
<h2>Before</h2>
<div class="grid" id="before">{before}</div>
<h2>After</h2>
<div class="grid" id="after">{after}</div>
<details><summary>{len(moves)} pod moves</summary><pre>{move_lines}</pre></details>
<script>{SCRIPT}</script>
</body></html>
"""


def write_report(
    snapshot: pb.Snapshot, spec: spec_pb2.RepackSpec, status: plan_pb2.RepackStatus, path: str | Path
) -> int:
    """Write the file; returns how many nodes it draws."""
    text = render(snapshot, spec, status)
    Path(path).write_text(text, encoding="utf-8")
    return text.count('<div class="node') // 2
