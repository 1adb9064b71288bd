"""The command: build the arrivals once, play each variant on them, write JSON, plots and a page."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import machine, out_dir
from bench.shapes import TRACES
from bench.timeline import metrics, report
from bench.timeline.engine import Engine, Record
from bench.timeline.variants import SCHEDULE_BUDGET, variants
from bench.timeline.workload import LoadModel, Workload, build
from sidecar.watcher.execute.progress import ExecuteOptions
from sidecar.watcher.policy.reconciler import PolicyOptions
from sidecar.watcher.policy.spec import DEFAULT_RETRY_SECONDS

NAMES = ("none", "schedule", "pending", "drain")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.timeline",
        description="Repack's benefit over time: openb's arrivals and departures replayed through "
        "Volcano's allocate with no repack, a scheduled repack, the whenPending trigger with the "
        "targeted planner, and the trigger with a first-fit-decreasing drain (docs/benchmarks.md).",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hours", type=float, default=None, help="simulated span (default 8; --quick 1.5)")
    ap.add_argument("--quick", action="store_true", help="a small run for a smoke test: 1/8 of the nodes, 1.5 h")
    ap.add_argument("--out", type=Path, default=None, help="folder for the JSON, PNGs and HTML (default bench/out)")
    ap.add_argument("--rho", type=float, default=1.0, help="offered GPU load, share of the cluster's cards")
    ap.add_argument("--gang-share", type=float, default=0.2, help="share of the load in injected whole-node gangs")
    ap.add_argument("--max-life", type=float, default=None, help="lifetime cap, hours (default: p95 of the trace)")
    ap.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="hours left out of the metrics (default: the cap, at most half the span)",
    )
    ap.add_argument("--schedule-minutes", type=float, default=60.0, help="period of the scheduled run")
    ap.add_argument("--min-pending", type=float, default=300.0, help="whenPending minPendingSeconds")
    ap.add_argument(
        "--check", type=float, default=PolicyOptions().resync, help="seconds between whenPending checks (the watcher's)"
    )
    ap.add_argument(
        "--retry",
        type=float,
        default=float(DEFAULT_RETRY_SECONDS),
        help="whenPending retrySeconds: a job's next run no sooner after its last (the policy's default)",
    )
    ap.add_argument("--restart-delay", type=float, default=60.0, help="seconds an eviction costs the job")
    ap.add_argument(
        "--cooldown",
        type=float,
        default=ExecuteOptions().cooldown,
        help="seconds after an Execute run that evicted pods before the next is admitted (the watcher's default)",
    )
    ap.add_argument("--variants", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (variants in parallel)")
    ap.add_argument("--pods-file", default="openb_pod_list_default.csv")
    return ap


def _model(args: argparse.Namespace) -> LoadModel:
    hours = args.hours if args.hours is not None else (1.5 if args.quick else 8.0)
    max_life = args.max_life * 3600 if args.max_life is not None else (0.5 * 3600 if args.quick else None)
    return LoadModel(
        rho=args.rho,
        gang_share=args.gang_share,
        max_life=max_life,
        hours=hours,
        seed=args.seed,
        node_stride=8 if args.quick else 1,
    )


def _play(args: argparse.Namespace, name: str) -> tuple[str, Record]:
    """One variant on a freshly built (identical) workload: a worker process's whole job."""
    workload = build(TRACES / "openb", _model(args), args.pods_file)
    policy = next(
        p for p in variants(args.schedule_minutes, args.min_pending, args.check, args.retry) if p.name == name
    )
    engine = Engine(workload, policy, restart_delay=args.restart_delay, cooldown=args.cooldown)
    return name, engine.run(workload.model.hours * 3600)


def _command(argv: list[str]) -> str:
    """The command line without the options that change where results go or how fast, not what
    they are (--out, --workers): the JSON stays byte-identical for the same arguments."""
    kept: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--out", "--workers"):
            skip = True
        elif not a.startswith(("--out=", "--workers=")):
            kept.append(a)
    return shlex.join(["python", "-m", "bench.timeline", *kept])


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's three goals, measured (None: a variant they need was not run)."""
    v = result["variants"]
    out: list[dict[str, Any]] = []

    def add(goal: str, ok: bool | None, measured: str) -> None:
        out.append({"goal": goal, "ok": ok, "measured": measured})

    if "none" in v and "pending" in v:
        a, b = v["pending"]["waiting_whole_node"]["p95_s"], v["none"]["waiting_whole_node"]["p95_s"]
        ok = None if a is None or b is None else a <= 0.5 * b
        add("pending trigger: p95 wait of whole-node jobs at most half of no repack's", ok, f"{a} s vs {b} s")
        a, b = v["pending"]["allocation"]["at_saturation"], v["none"]["allocation"]["at_saturation"]
        ok = None if a is None or b is None else a >= b + 0.10
        add("pending trigger: GPU allocation at saturation at least 10 points above no repack", ok, f"{a} vs {b}")
    if "drain" in v and "pending" in v:
        a = v["pending"]["disruption"]["pods_evicted_per_started_job"]
        b = v["drain"]["disruption"]["pods_evicted_per_started_job"]
        wa = v["pending"]["disruption"]["pods_evicted_per_started_whole_node_job"]
        wb = v["drain"]["disruption"]["pods_evicted_per_started_whole_node_job"]
        pa, pb = v["pending"]["waiting_whole_node"]["p95_s"], v["drain"]["waiting_whole_node"]["p95_s"]
        ok = None if a is None or b is None else a < b
        add(
            "pending trigger beats the drain on the same trigger with fewer evicted pods per started job",
            ok,
            f"{a} vs {b} (per started whole-node job {wa} vs {wb}; whole-node p95 wait {pa} s vs {pb} s)",
        )
    return out


NOTES = [
    "arrivals: openb's jobs in creation order, cycled, as a seeded Poisson stream offering rho of the cards "
    "(the trace's own clock holds 1.2x the cluster's cards in one pass and keeps it nearly empty)",
    "lifetimes: recorded (deletion - creation), capped at max_life; injected gangs draw theirs from the trace's "
    "8-card pods",
    "every GPU pod is its own PodGroup (minMember 1), as Volcano's PodGroup controller makes for plain pods; "
    "8-card pods grouped as traces.py groups them, and the injected 2-4-pod gangs, are the whole-node jobs",
    "one scheduling rule: sidecar.mirror.allocate.allocate_job, the default scheduler conf, jobs in arrival "
    "order; enqueue/overcommit, queues, preemption and pod start-up are not modelled",
    "an evicted pod is rebuilt at once, nominated to its planned node, and bound by allocate (there if it still "
    "fits); every job an eviction touches finishes restart_delay seconds later",
    "runs are Execute runs: one at a time, none within cooldown_s of one that evicted pods, instantaneous",
    "pending: a RepackPolicy whenPending over the whole-node jobs (the product's check, sidecar.repack.pending, "
    "every check_s while no run is under way; the run plans at admission); drain: the same trigger, ffd_drain "
    "over the nodes the job could use, cut where allocate starts it",
    "waits of jobs still waiting at the end count as end - arrival (lower bounds, 'still waiting')",
    "planner wall times are in timeline_timing.json (not deterministic), the rest of this file is",
]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    names = [n for n in args.variants.split(",") if n]
    unknown = set(names) - set(NAMES)
    if unknown:
        print(f"unknown variants: {', '.join(sorted(unknown))} (choose from {', '.join(NAMES)})", file=sys.stderr)
        return 2
    if not (TRACES / "openb" / args.pods_file).exists():
        print(f"bench.timeline: skipped, {TRACES / 'openb' / args.pods_file} is not here (set REPACK_TRACES)")
        return 0
    started = time.perf_counter()
    model = _model(args)
    workload: Workload = build(TRACES / "openb", model, args.pods_file)
    max_life = float(workload.facts["max_life_s"])
    warmup = args.warmup * 3600 if args.warmup is not None else min(max_life, model.hours * 3600 / 2)
    print(
        f"openb: {int(workload.facts['nodes'])} nodes, {workload.capacity:.0f} cards; {len(workload.jobs)} jobs over "
        f"{model.hours:g} h (warm-up {warmup / 3600:.2f} h); variants {', '.join(names)}",
        flush=True,
    )
    records: dict[str, Record] = {}
    if args.workers > 1 and len(names) > 1:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for name, rec in pool.map(_play, [args] * len(names), names):
                records[name] = rec
                print(f"  {name}: done at {time.perf_counter() - started:.0f} s", flush=True)
    else:
        for name in names:
            records[name] = _play(args, name)[1]
            print(f"  {name}: done at {time.perf_counter() - started:.0f} s", flush=True)
    result: dict[str, Any] = {
        "benchmark": "timeline",
        "command": _command(argv if argv is not None else sys.argv[1:]),
        "trace": f"openb/{args.pods_file}",
        "model": {
            "rho": model.rho,
            "gang_share": model.gang_share,
            "max_life_s": max_life,
            "gang_sizes": list(model.gang_sizes),
            "hours": model.hours,
            "seed": model.seed,
            "node_stride": model.node_stride,
        },
        "policy": {
            "schedule_minutes": args.schedule_minutes,
            "schedule_max_pod_groups": SCHEDULE_BUDGET,
            "min_pending_s": args.min_pending,
            "check_s": args.check,
            "retry_s": args.retry,
            "max_plans_per_check": PolicyOptions().max_plans,
            "restart_delay_s": args.restart_delay,
            "cooldown_s": args.cooldown,
        },
        "workload": workload.facts,
        "window_hours": [round(warmup / 3600, 3), model.hours],
        "variants": {n: metrics.summarize(workload, records[n], warmup) for n in names},
        "samples": {
            n: [[s.time, round(s.allocated, 1), round(s.demand, 1), s.waiting_whole_node] for s in records[n].samples]
            for n in names
        },
    }
    result["goals"] = goals(result)
    result["notes"] = NOTES
    seconds = time.perf_counter() - started
    timing = {
        "machine": machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "workers": args.workers,
        "seconds": round(seconds, 1),
        "variants": {n: metrics.timing(records[n]) for n in names},
    }
    out = args.out or out_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "timeline.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "timeline_timing.json").write_text(json.dumps(timing, indent=2) + "\n")
    pngs = report.plots(workload, records, warmup, out)
    report.page(result, timing, pngs, out / "timeline.html")
    print(report.text_table(report.table(result, timing)))
    for g in result["goals"]:
        print(f"{report.mark(g['ok'])} {g['goal']}: {g['measured']}")
    print(f"{seconds:.0f} s on {machine()}; {out / 'timeline.json'}, {out / 'timeline.html'}"
          + ("" if pngs else " (no PNGs: matplotlib is not installed)"))  # fmt: skip
    return 0
