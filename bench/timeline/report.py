"""The run's outputs: the console table, PNG plots (matplotlib, when installed) and an HTML page.

The HTML page is self-contained (the plots inlined as data URIs) and sits beside the PNGs and the
JSON, so it can be mailed or attached to the issue as one file.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from bench.timeline.engine import Record
from bench.timeline.workload import Workload

#: (label, path into a variant's summary, unit): the table's rows
ROWS: list[tuple[str, tuple[str, ...], str]] = [
    ("GPU allocation at saturation", ("allocation", "at_saturation"), "%"),
    ("GPU allocation, window mean", ("allocation", "mean"), "%"),
    ("arrived workload, window mean", ("allocation", "mean_arrived_workload"), "%"),
    ("whole-node jobs: wait p50", ("waiting_whole_node", "p50_s"), "min"),
    ("whole-node jobs: wait p95", ("waiting_whole_node", "p95_s"), "min"),
    ("whole-node jobs: arrived / still waiting", ("waiting_whole_node", "jobs", "censored"), "n"),
    ("all jobs: wait p50", ("waiting_all", "p50_s"), "min"),
    ("all jobs: wait p95", ("waiting_all", "p95_s"), "min"),
    ("jobs started (whole-node)", ("disruption", "jobs_started", "whole_node_jobs_started"), "n"),
    ("executed repacks", ("disruption", "executions_with_moves"), "n"),
    ("nodes the executed plans empty", ("disruption", "nodes_freed_by_plans"), "n"),
    ("pods evicted", ("disruption", "pods_evicted"), "n"),
    ("pods evicted / hour", ("disruption", "pods_evicted_per_hour"), "x"),
    ("pods evicted / started job", ("disruption", "pods_evicted_per_started_job"), "x"),
    ("pods evicted / started whole-node job", ("disruption", "pods_evicted_per_started_whole_node_job"), "x"),
    ("PodGroups below minAvailable", ("disruption", "pod_groups_below_min_available"), "n"),
    ("  of them gangs (> 1 pod)", ("disruption", "gangs_below_min_available"), "n"),
    ("below minAvailable / hour", ("disruption", "below_min_available_per_hour"), "x"),
    ("below minAvailable / started job", ("disruption", "below_min_available_per_started_job"), "x"),
]


def _cell(summary: dict[str, Any], path: tuple[str, ...], unit: str) -> str:
    section = summary[path[0]]
    values = [section.get(k) for k in path[1:]]
    if any(v is None for v in values):
        return "-"
    if unit == "%":
        return f"{100 * values[0]:.1f}%"
    if unit == "min":
        return f"{values[0] / 60:.1f}"
    if unit == "x":
        return f"{values[0]:.3f}"
    return " / ".join(str(v) for v in values)


def table(result: dict[str, Any], timing: dict[str, Any]) -> list[list[str]]:
    """Header row, then one row per measure, one column per variant."""
    names = list(result["variants"])
    rows = [["", *names]]
    for label, path, unit in ROWS:
        rows.append(
            [label + (" (min)" if unit == "min" else ""), *(_cell(result["variants"][n], path, unit) for n in names)]
        )
    rows.append(["planner calls", *(str(timing["variants"][n]["calls"]) for n in names)])
    rows.append(
        [
            "planner time median / total (s)",
            *(
                f"{t['median_s']:.3f} / {t['total_s']:.1f}" if t["median_s"] is not None else "-"
                for t in (timing["variants"][n] for n in names)
            ),
        ]
    )
    return rows


def text_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    )


def mark(ok: bool | None) -> str:
    """✔ met, ✘ missed, – not measured (a variant it needs was not run)."""
    return "✔" if ok else "✘" if ok is False else "–"


def plots(workload: Workload, records: dict[str, Record], warmup: float, out: Path) -> list[Path]:
    """allocation over time, allocation vs arrived workload, waiting whole-node jobs over time;
    [] when matplotlib is not installed (``pip install -e '.[bench]'``)."""
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]

    cap = workload.capacity
    paths: list[Path] = []

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k, (name, rec) in enumerate(records.items()):
        hours = [s.time / 3600 for s in rec.samples]
        ax.plot(
            hours, [100 * s.allocated / cap for s in rec.samples], color=f"C{k}", lw=1.2, label=f"{name}: allocated"
        )
        ax.plot(hours, [100 * s.demand / cap for s in rec.samples], color=f"C{k}", lw=0.8, ls=":",
                label=f"{name}: arrived workload")  # fmt: skip
    ax.axvline(warmup / 3600, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("simulated hours (dashed: end of warm-up)")
    ax.set_ylabel("% of the cluster's cards")
    ax.set_title(
        "GPU allocation rate over time, openb, same arrivals for every variant (dotted: cards running or waiting)",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "timeline_allocation.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rec in records.items():
        bins: dict[int, list[float]] = {}
        for s in rec.samples:
            bins.setdefault(int(s.demand / cap / 0.05), []).append(s.allocated / cap)
        xs = sorted(bins)
        ax.plot(
            [100 * (b + 0.5) * 0.05 for b in xs],
            [100 * sum(bins[b]) / len(bins[b]) for b in xs],
            marker=".",
            label=name,
        )
    ax.plot([0, 100], [0, 100], color="grey", lw=0.6, ls="--")
    ax.set_xlabel("arrived workload (% of cluster cards: running + waiting)")
    ax.set_ylabel("GPU allocation rate (%)")
    ax.set_title("GPU allocation rate vs arrived workload (FGD, ATC'23, style)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "timeline_fgd.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, rec in records.items():
        ax.plot([s.time / 3600 for s in rec.samples], [s.waiting_whole_node for s in rec.samples], label=name, lw=1)
    ax.axvline(warmup / 3600, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("simulated hours")
    ax.set_ylabel("whole-node jobs waiting")
    ax.set_title("Whole-node jobs waiting over time", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "timeline_waiting.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    return paths


def page(result: dict[str, Any], timing: dict[str, Any], pngs: list[Path], path: Path) -> None:
    """The HTML page: what was run, the table, the goals, the plots inlined."""
    rows = table(result, timing)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(c)}</td>" if k else f"<th>{html.escape(c)}</th>" for k, c in enumerate(r))
        + "</tr>"
        for r in rows[1:]
    )
    goals = "".join(
        f"<li>{mark(g['ok'])} {html.escape(g['goal'])}: {html.escape(g['measured'])}</li>" for g in result["goals"]
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result["notes"])
    imgs = (
        "".join(
            f'<p><img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"></p>'
            for p in pngs
        )
        or "<p>(no plots: matplotlib is not installed — pip install -e '.[bench]')</p>"
    )
    model = html.escape(", ".join(f"{k}={v}" for k, v in result["model"].items()))
    policy = html.escape(", ".join(f"{k}={v}" for k, v in result["policy"].items()))
    window = "[{}, {}]".format(*result["window_hours"])
    path.write_text(
        f"""<!doctype html>
<html><head><meta charset="utf-8"><title>bench.timeline</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:1em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}th:first-child{{text-align:left}}</style></head>
<body><h1>The benefit over time (bench.timeline)</h1>
<p><code>{html.escape(result["command"])}</code> — {html.escape(timing["machine"])}, {html.escape(timing["date"])},
{timing["seconds"]:.0f} s.</p>
<p>Load: {model}.<br>Policies: {policy}.<br>Measured over jobs arriving in {window} h.</p>
<table><tr>{head}</tr>{body}</table>
<h2>Goals</h2><ul>{goals}</ul>
<h2>Plots</h2>{imgs}
<h2>Modelling notes</h2><ul>{notes}</ul>
</body></html>
"""
    )
