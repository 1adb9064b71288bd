"""Snapshot decode benchmark: bytes -> validated numpy columns, columnar vs row-per-pod layout.

    python -m bench.decode [--nodes 10000] [--tasks 100000] [--repeats 7]

Both layouts describe the same cluster (synth, then to_rows). Each timing is parse + decode,
the work the server does per inline snapshot. Goal (issue: Foundation): columnar <= 150 ms median
at 10,000 nodes / 100,000 tasks.
"""

from __future__ import annotations

import argparse
import sys

from bench.common import machine, median_seconds, save
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.dispatch import kernels_built
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.forms import to_rows

GOAL_MS = 150.0


def build(nodes: int, tasks: int, seed: int) -> pb.Snapshot:
    """A synth cluster with about ``tasks`` pods: GPU gangs at 80% fill plus DaemonSet and CPU pods."""
    base = synth(SynthOptions(nodes=nodes, fill=0.8, seed=seed, cpu_pods_per_node=0.0, daemonsets=2))
    per_node_extra = max(0.0, (tasks - len(base.task_columns.uid)) / nodes)
    return synth(SynthOptions(nodes=nodes, fill=0.8, seed=seed, cpu_pods_per_node=per_node_extra, daemonsets=2))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--seed", type=int, default=1)
    ns = p.parse_args(argv)

    columnar = build(ns.nodes, ns.tasks, ns.seed)
    rows = to_rows(columnar)
    col_bytes = columnar.SerializeToString()
    row_bytes = rows.SerializeToString()
    n_tasks = len(columnar.task_columns.uid)

    col_s, col_all = median_seconds(lambda: decode(pb.Snapshot.FromString(col_bytes)), ns.repeats)
    row_s, row_all = median_seconds(lambda: decode(pb.Snapshot.FromString(row_bytes)), ns.repeats)
    parse_s, _ = median_seconds(lambda: pb.Snapshot.FromString(col_bytes), ns.repeats)

    print(
        f"decode benchmark: {ns.nodes} nodes, {n_tasks} tasks ({machine()}; ledger kernel: "
        f"{'cython' if kernels_built() else 'python'})"
    )
    print(f"  {'layout':<22}{'size MB':>9}{'median ms':>11}{'min ms':>9}")
    print(f"  {'columnar (ours)':<22}{len(col_bytes) / 1e6:>9.1f}{col_s * 1e3:>11.1f}{min(col_all) * 1e3:>9.1f}")
    print(f"  {'row per pod':<22}{len(row_bytes) / 1e6:>9.1f}{row_s * 1e3:>11.1f}{min(row_all) * 1e3:>9.1f}")
    print(f"  columnar parse alone: {parse_s * 1e3:.1f} ms")
    print(f"  ratio row/columnar: {row_s / col_s:.2f}x")
    verdict = "✔" if col_s * 1e3 <= GOAL_MS else "✘"
    print(f"  goal columnar <= {GOAL_MS:.0f} ms: {verdict} ({col_s * 1e3:.1f} ms)")
    save(
        "decode",
        {
            "nodes": ns.nodes,
            "tasks": n_tasks,
            "columnar_ms": col_s * 1e3,
            "rows_ms": row_s * 1e3,
            "ratio": row_s / col_s,
            "columnar_mb": len(col_bytes) / 1e6,
            "rows_mb": len(row_bytes) / 1e6,
            "machine": machine(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
