"""What a run measured, as plain numbers: the same arithmetic for every variant.

* **Window**: jobs arriving in [warm-up, end) and samples taken in it; the warm-up lets the
  long-lived pods' population reach its level (lifetimes are capped at ``max_life``; the warm-up is
  that cap by default, at most half the span), so an empty cluster's first hours flatter no one.
* **GPU allocation rate**: cards bound / cards in the cluster, sampled every minute; its mean
  over the window, and **at saturation**: the mean over the window's samples where the arrived
  workload is at least the cluster's capacity.
* **Arrived workload** (FGD, ATC'23, reads it as arrived cards over capacity with nothing
  leaving): here the cards of the jobs that have arrived and not finished, running or waiting.
  The curve "allocation rate vs arrived workload" averages the samples (warm-up included: it is
  the ramp) in bins of ``BIN`` of capacity.
* **Waiting time**: start - arrival. A job still waiting at the end counts with end - arrival, a
  lower bound (``censored`` says how many): leaving it out would reward starving it.
  Percentiles are nearest-rank (the value at rank ceil(p n)).
* **Disruption**: pods evicted and PodGroups an eviction put below minAvailable (of which gangs:
  PodGroups of more than one pod), over the executions in the window, per simulated hour and per
  job started in the window (all jobs, and whole-node jobs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.timeline.engine import Record
from bench.timeline.workload import Workload

#: the arrived-workload bin width of the FGD-style curve (share of capacity)
BIN = 0.05


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (``p`` in [0, 100]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(math.ceil(p / 100.0 * len(ordered)), 1)
    return ordered[rank - 1]


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def waits(workload: Workload, record: Record, start: float, *, whole_node: bool | None) -> dict[str, Any]:
    """Waiting times of the jobs arriving in the window (``whole_node`` None: every job)."""
    values: list[float] = []
    censored = 0
    for job, run in zip(workload.jobs, record.runs, strict=True):
        if not start <= job.arrival < record.end or (whole_node is not None and job.whole_node != whole_node):
            continue
        if run.start >= 0:
            values.append(run.start - job.arrival)
        else:
            values.append(record.end - job.arrival)
            censored += 1
    return {
        "jobs": len(values),
        "censored": censored,
        "p50_s": _r(percentile(values, 50), 1),
        "p95_s": _r(percentile(values, 95), 1),
        "mean_s": _r(sum(values) / len(values), 1) if values else None,
    }


def allocation(workload: Workload, record: Record, start: float) -> dict[str, Any]:
    cap = workload.capacity
    window = [s for s in record.samples if s.time >= start]
    saturated = [s for s in window if s.demand >= cap]
    bins: dict[int, list[float]] = {}
    for s in record.samples:
        bins.setdefault(int(s.demand / cap / BIN), []).append(s.allocated / cap)
    return {
        "mean": _r(sum(s.allocated for s in window) / cap / len(window)) if window else None,
        "at_saturation": _r(sum(s.allocated for s in saturated) / cap / len(saturated)) if saturated else None,
        "saturated_share_of_window": _r(len(saturated) / len(window)) if window else None,
        "mean_arrived_workload": _r(sum(s.demand for s in window) / cap / len(window)) if window else None,
        "vs_arrived_workload": [
            {"arrived": _r((b + 0.5) * BIN, 3), "allocation": _r(sum(v) / len(v)), "samples": len(v)}
            for b, v in sorted(bins.items())
        ],
    }


def disruption(workload: Workload, record: Record, start: float) -> dict[str, Any]:
    hours = (record.end - start) / 3600.0
    started = [
        j
        for j, run in zip(workload.jobs, record.runs, strict=True)
        if run.start >= 0 and start <= run.start < record.end
    ]
    whole = sum(1 for j in started if j.whole_node)
    ex = [e for e in record.executions if e.time >= start]
    evicted = sum(e.evicted for e in ex)
    below = sum(e.below_min for e in ex)
    gangs = sum(e.gangs_below_min for e in ex)

    def per(x: float, n: float) -> float | None:
        return _r(x / n) if n else None

    return {
        "executions": len(ex),
        "executions_with_moves": sum(1 for e in ex if e.evicted),
        "targets_started_at_once": sum(1 for e in ex if e.target_started),
        "nodes_freed_by_plans": sum(e.planned_freed for e in ex),
        "pods_evicted": evicted,
        "rebuilt_on_planned_node": sum(e.on_target for e in ex),
        "rebuilt_elsewhere": sum(e.elsewhere for e in ex),
        "rebuilt_left_waiting": sum(e.waiting for e in ex),
        "pod_groups_below_min_available": below,
        "gangs_below_min_available": gangs,
        "jobs_started": len(started),
        "whole_node_jobs_started": whole,
        "pods_evicted_per_hour": per(evicted, hours),
        "pods_evicted_per_started_job": per(evicted, len(started)),
        "pods_evicted_per_started_whole_node_job": per(evicted, whole),
        "below_min_available_per_hour": per(below, hours),
        "below_min_available_per_started_job": per(below, len(started)),
    }


def summarize(workload: Workload, record: Record, start: float) -> dict[str, Any]:
    """Every deterministic number of one variant's run (wall times stay out: see report.timing)."""
    return {
        "allocation": allocation(workload, record, start),
        "waiting_whole_node": waits(workload, record, start, whole_node=True),
        "waiting_all": waits(workload, record, start, whole_node=None),
        "disruption": disruption(workload, record, start),
        "plans": dict(sorted(record.verdicts.items())),
    }


def timing(record: Record) -> dict[str, Any]:
    """Planner (or drain) wall time per call: median and total (not deterministic: own file)."""
    calls = record.planner_calls
    return {
        "calls": len(calls),
        "median_s": _r(percentile(calls, 50), 4) if calls else None,
        "total_s": _r(sum(calls), 3),
    }
