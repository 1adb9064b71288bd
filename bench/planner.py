"""Planner speed: median Plan time at openb size and over loopback at 10k nodes, and the curve.

    python -m bench.planner [--repeats 5] [--sizes 1000,2000,5000,10000,20000]

* openb-shaped (1,213 nodes from ../shared/traces/openb, skipped with a message when absent):
  median Plan in process and through a loopback gRPC session. Goal <= 100 ms.
* synth 10,000 nodes / 100,000 tasks: median end-to-end Plan over loopback with the snapshot
  inline (send + validate + columns + plan + answer). Goal <= 1 s (one scheduling period).
* the curve: in-process plan time at each size (tasks = 10 x nodes), with nodes freed, so time
  can be read against work done. Every run is the guide's minimal DryRun (no scope, no budget):
  the planner frees every node it can.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time

import grpc
import numpy as np

from bench.common import machine, median_seconds, save
from bench.decode import build
from bench.shapes import openb_available, openb_shaped
from sidecar import logs
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, snapshot_pb2, spec_pb2
from sidecar.client import client_options
from sidecar.mirror.core import Mirror
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.server.config import ServerConfig
from sidecar.snapshot.decode import decode

OPENB_GOAL_MS = 100.0
TENK_GOAL_S = 1.0
PDB_GOAL_RATIO = 1.10


def dryrun() -> spec_pb2.RepackSpec:
    return spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])


class Loopback:
    def __init__(self) -> None:
        from sidecar.server.app import start

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        config = ServerConfig(port=0, metrics_port=-1, max_message_bytes=256 * 2**20)
        self.running = asyncio.run_coroutine_threadsafe(start(config), self.loop).result(30)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.running.port}", options=client_options(256 * 2**20))
        self.stub = service_pb2_grpc.RepackStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        asyncio.run_coroutine_threadsafe(self.running.server.stop(None), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def with_pdbs(snap: snapshot_pb2.Snapshot, count: int, seed: int = 0) -> snapshot_pb2.Snapshot:
    """``snap`` plus ``count`` PodDisruptionBudgets, each selecting one label of a random pod's
    profile in that pod's namespace, with room for any plan (they cost time, never moves)."""
    rng = np.random.default_rng(seed)
    out = snapshot_pb2.Snapshot()
    out.CopyFrom(snap)
    cols = snap.task_columns
    for k in range(count):
        i = int(rng.integers(len(cols.uid)))
        labels = dict(snap.profiles[cols.profile[i]].labels)
        if not labels:
            continue
        key = sorted(labels)[int(rng.integers(len(labels)))]
        out.pdbs.add(
            namespace=snap.namespaces[cols.namespace[i]].name,
            name=f"pdb-{k}",
            disruptions_allowed=1_000_000,
            selector=snapshot_pb2.LabelSelector(match_labels={key: labels[key]}),
        )
    return out


def pdb_cost(snap: snapshot_pb2.Snapshot, count: int, repeats: int) -> dict[str, float]:
    """Median in-process Plan with and without ``count`` PDBs, interleaved (same machine noise)."""
    spec = validate(dryrun())
    plain, budgeted = decode(snap), decode(with_pdbs(snap, count))
    bare: list[float] = []
    pdb: list[float] = []
    for _ in range(repeats):
        for state, out in ((plain, bare), (budgeted, pdb)):
            t0 = time.perf_counter()
            Planner(Mirror(state), spec).plan()
            out.append(time.perf_counter() - t0)
    ratio = statistics.median(pdb) / statistics.median(bare)
    mark = "✔" if ratio <= PDB_GOAL_RATIO else "✘"
    print(
        f"  {count} PodDisruptionBudgets at {plain.n_nodes} nodes: Plan median {statistics.median(bare):.2f} s -> "
        f"{statistics.median(pdb):.2f} s, ratio {ratio:.3f} {mark} (goal <= {PDB_GOAL_RATIO:.2f})"
    )
    return {"bare_s": statistics.median(bare), "pdbs_s": statistics.median(pdb), "ratio": ratio}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    p.add_argument("--tenk-nodes", type=int, default=10_000)
    p.add_argument("--pdbs", type=int, default=1000, help="PodDisruptionBudgets added at --tenk-nodes (0: skip)")
    ns = p.parse_args(argv)
    logs.configure("console", "warning")
    spec = dryrun()
    results: dict[str, object] = {"machine": machine()}
    print(f"planner benchmark ({machine()})")
    server = Loopback()
    try:
        if openb_available():
            snap = openb_shaped()
            state = decode(snap)
            in_proc, _ = median_seconds(lambda: Planner(Mirror(state), validate(spec)).plan(), ns.repeats)
            result = Planner(Mirror(state), validate(spec)).plan()
            sid = server.stub.OpenSession(service_pb2.OpenSessionRequest(snapshot=snap), timeout=60).session_id
            req = service_pb2.PlanRequest(session_id=sid, spec=spec)
            rpc, _ = median_seconds(lambda: server.stub.Plan(req, timeout=60), ns.repeats)
            verdict = "met" if rpc * 1e3 <= OPENB_GOAL_MS else "MISSED"
            print(
                f"  openb-shaped: {state.n_nodes} nodes, {state.n_tasks} GPU pods, fragmentation "
                f"{result.before.percent:.1f}% -> {result.after.percent:.1f}%, {len(result.freed)} nodes freed, "
                f"{len(result.moves)} pods moved"
            )
            print(
                f"    Plan median: in process {in_proc * 1e3:.1f} ms, over loopback (session) {rpc * 1e3:.1f} ms "
                f"(goal <= {OPENB_GOAL_MS:.0f} ms: {verdict})"
            )
            results["openb"] = {"in_process_ms": in_proc * 1e3, "rpc_ms": rpc * 1e3, "freed": len(result.freed)}
        else:
            print("  openb-shaped: skipped, ../shared/traces/openb is not here (set REPACK_TRACES)")
        big = build(ns.tenk_nodes, 10 * ns.tenk_nodes, 1)
        req = service_pb2.PlanRequest(snapshot=big, spec=spec)
        reply = server.stub.Plan(req, timeout=300).status
        e2e, runs = median_seconds(lambda: server.stub.Plan(req, timeout=300), max(3, ns.repeats // 2), warmup=0)
        verdict = "met" if e2e <= TENK_GOAL_S else "MISSED"
        s = reply.plan.summary
        print(
            f"  synth {ns.tenk_nodes} nodes / {10 * ns.tenk_nodes} tasks, Plan with the snapshot inline over "
            f"loopback: median {e2e:.2f} s (goal <= {TENK_GOAL_S:.0f} s: {verdict}); "
            f"{s.frag_before_percent}% -> {s.frag_after_percent}%, {s.freed_node_count} nodes freed"
        )
        results["tenk"] = {"e2e_s": e2e, "runs_s": runs, "freed": s.freed_node_count}
        if ns.pdbs:
            results["pdbs"] = pdb_cost(big, ns.pdbs, max(3, ns.repeats // 2))
    finally:
        server.close()
    curve = []
    print("  curve (in process, synth, tasks = 10 x nodes):")
    print(f"    {'nodes':>7}{'decode ms':>11}{'plan ms':>10}{'freed':>8}{'ms/freed':>10}")
    for n in [int(x) for x in ns.sizes.split(",") if x]:
        snap = build(n, 10 * n, 1)
        data = snap.SerializeToString()
        dec, _ = median_seconds(lambda data=data: decode(snapshot_pb2.Snapshot.FromString(data)), 3)
        state = decode(snap)
        times = []
        freed = 0
        for _ in range(max(1, ns.repeats // 2)):
            t0 = time.perf_counter()
            freed = len(Planner(Mirror(state), validate(spec)).plan().freed)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        curve.append({"nodes": n, "decode_ms": dec * 1e3, "plan_ms": med * 1e3, "freed": freed})
        print(f"    {n:>7}{dec * 1e3:>11.0f}{med * 1e3:>10.0f}{freed:>8}{med * 1e3 / max(freed, 1):>10.2f}")
    results["curve"] = curve
    save("planner", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
