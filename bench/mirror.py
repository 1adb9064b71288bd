"""Mirror-core benchmark: feasibility at scale and Filter latency over loopback gRPC.

    python -m bench.mirror [--nodes 10000] [--tasks 100000] [--repeats 5] [--twin-classes 30] [--calls 200]

1. Feasibility of every task against every node (how many nodes each pod could go to) on a
   synth cluster with node selectors, a tainted pool and pod anti-affinity on some services.
   Tasks are grouped into equivalence classes; the kernel checks class x node pairs. Reported:
   end-to-end median (classes + kernel), the kernel alone, the numpy form, and the Cython /
   Python-twin ratio measured on the same sample of classes (the twin is a plain loop: running it
   on all classes would take minutes). Goal: ratio >= 30x.
2. Filter of one pending GPU task over all nodes through a real server on 127.0.0.1, the
   snapshot uploaded once with OpenSession. Goal: p50 <= 5 ms.
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
from sidecar import dispatch, logs
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc
from sidecar.client import client_options
from sidecar.mirror import kernels
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.server.config import ServerConfig
from sidecar.snapshot.decode import decode
from tests.mirror import reference_kernels as reference

RATIO_GOAL = 30.0
FILTER_GOAL_MS = 5.0


def feasibility(state, repeats: int, twin_classes: int, seed: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    tasks = np.arange(state.n_tasks)
    end_to_end, _ = median_seconds(lambda: Mirror(state).feasible_counts(tasks), repeats)
    mirror = Mirror(state)
    classes = mirror.classes(tasks, Simulation(state))
    masks = classes.masks
    result = {"end_to_end_s": end_to_end, "classes": classes.n_classes, "pairs": classes.n_classes * state.n_nodes}
    if kernels.available():
        with dispatch.forced("kernel"):
            result["kernel_s"], _ = median_seconds(lambda: kernels.feasible_counts(masks), repeats)
    result["numpy_s"], _ = median_seconds(lambda: kernels.feasible_counts_vectorised(masks), repeats)
    sample = np.random.default_rng(seed).choice(
        classes.n_classes, size=min(twin_classes, classes.n_classes), replace=False
    )
    sample_masks = masks.select(np.sort(sample))
    result["sample_classes"] = len(sample)
    result["twin_sample_s"], _ = median_seconds(lambda: reference.feasible_counts(sample_masks), 1, warmup=0)
    if kernels.available():
        with dispatch.forced("kernel"):
            result["kernel_sample_s"], _ = median_seconds(lambda: kernels.feasible_counts(sample_masks), repeats * 5)
            np.testing.assert_array_equal(
                kernels.feasible_counts(sample_masks), reference.feasible_counts(sample_masks)
            )
        result["ratio"] = result["twin_sample_s"] / result["kernel_sample_s"]
    return result


def filter_latency(snapshot, uid: str, calls: int) -> list[float]:  # type: ignore[no-untyped-def]
    from sidecar.server.app import start

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    running = asyncio.run_coroutine_threadsafe(start(ServerConfig(port=0, metrics_port=-1)), loop).result(30)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{running.port}", options=client_options())
        stub = service_pb2_grpc.RepackStub(channel)
        sid = stub.OpenSession(service_pb2.OpenSessionRequest(snapshot=snapshot), timeout=60).session_id
        request = service_pb2.FilterRequest(session_id=sid, task_uid=uid)
        for _ in range(5):
            stub.Filter(request, timeout=30)
        times = []
        for _ in range(calls):
            start_t = time.perf_counter()
            stub.Filter(request, timeout=30)
            times.append(time.perf_counter() - start_t)
        channel.close()
        return times
    finally:
        asyncio.run_coroutine_threadsafe(running.server.stop(None), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--twin-classes", type=int, default=30)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    ns = p.parse_args(argv)
    logs.configure("console", "warning")  # no access log per call

    snapshot = build(ns.nodes, ns.tasks, ns.seed)
    state = decode(snapshot)
    anti = sum(1 for t in state.task_profile if state.profiles[t].pod_anti_affinity)
    print(
        f"mirror benchmark: {state.n_nodes} nodes, {state.n_tasks} tasks ({anti} with pod anti-affinity); "
        f"{machine()}; kernels: {'cython' if kernels.available() else 'python'}"
    )
    f = feasibility(state, ns.repeats, ns.twin_classes, ns.seed)
    print(f"  feasibility of all tasks x all nodes: {f['classes']} classes, {f['pairs'] / 1e6:.1f}M class-node pairs")
    print(f"    end to end (classes + masks + kernel), median: {f['end_to_end_s'] * 1e3:.0f} ms")
    if "kernel_s" in f:
        print(f"    kernel alone, median:                         {f['kernel_s'] * 1e3:.1f} ms")
    print(f"    numpy form of the kernel, median:             {f['numpy_s'] * 1e3:.1f} ms")
    if "ratio" in f:
        verdict = "met" if f["ratio"] >= RATIO_GOAL else "MISSED"
        print(
            f"    Cython vs Python twin on {f['sample_classes']} sampled classes: twin {f['twin_sample_s']:.2f} s, "
            f"kernel {f['kernel_sample_s'] * 1e3:.2f} ms -> {f['ratio']:.0f}x (goal >= {RATIO_GOAL:.0f}x: {verdict})"
        )
        print(f"    kernel vs numpy form: {f['numpy_s'] / f['kernel_s']:.1f}x")
    gpu = state.resource("nvidia.com/gpu")
    pending_like = int(np.flatnonzero(state.task_req[:, gpu] > 0)[0])
    times = filter_latency(snapshot, state.task_uid[pending_like], ns.calls)
    p50 = statistics.median(times) * 1e3
    p90 = float(np.percentile(times, 90)) * 1e3
    p99 = float(np.percentile(times, 99)) * 1e3
    verdict = "met" if p50 <= FILTER_GOAL_MS else "MISSED"
    print(
        f"  Filter, one task over {state.n_nodes} nodes, loopback gRPC, {ns.calls} calls: "
        f"p50 {p50:.2f} ms, p90 {p90:.2f} ms, p99 {p99:.2f} ms (goal p50 <= {FILTER_GOAL_MS:.0f} ms: {verdict})"
    )
    save(
        "mirror",
        {
            **f,
            "filter_p50_ms": p50,
            "filter_p90_ms": p90,
            "filter_p99_ms": p99,
            "machine": machine(),
            "nodes": state.n_nodes,
            "tasks": state.n_tasks,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
