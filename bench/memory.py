"""Server memory: peak RSS of a real ``repack-sidecar serve`` during 1 and 4 concurrent Plans.

    python -m bench.memory [--nodes 10000] [--tasks 100000] [--concurrency 1,4] [--repeats 1]

Each measurement starts a fresh ``serve`` subprocess (so peaks do not carry over), sends N
concurrent inline Plans of the synth cluster (bench.decode.build, the guide's minimal DryRun) and
samples the server's VmRSS from /proc every 10 ms: idle (before), peak (during) and retained (1 s
after the last answer: what glibc keeps). Once with glibc's default malloc arenas (8 per core) and
once with ``MALLOC_ARENA_MAX=2``, as the image sets it. Prints medians over ``--repeats`` and the
ratios: 4 vs 1 concurrent Plans, and MALLOC_ARENA_MAX=2 vs the default. Compare peaks with
``--memory-budget-mib`` (default 1024) and the container's limit (manifests: 2 GiB).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from bench.common import OUT, machine, save
from bench.decode import build
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, spec_pb2
from sidecar.client import client_options

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
#: the settings compared: None leaves MALLOC_ARENA_MAX unset (glibc's default)
ARENAS: dict[str, str | None] = {"default": None, "2": "2"}


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Server:
    """``serve`` in a subprocess on a free port, its address read back from its JSON log."""

    def __init__(self, arenas: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
        if arenas is not None:
            env["MALLOC_ARENA_MAX"] = arenas
        cmd = [sys.executable, "-m", "sidecar", "--log-format", "json", "serve"]
        cmd += ["--port", "0", "--metrics-port", "-1", "--max-message-mib", "512"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        self.target = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            event = _json(line)
            if event.get("event") == "serving":
                self.target = str(event["address"])
                break
        if not self.target:
            raise RuntimeError(f"serve did not start (exit {self.proc.wait(10)})")
        threading.Thread(target=_drain, args=(self.proc.stderr,), daemon=True).start()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _drain(stream: Any) -> None:
    """Read the server's access log to its end (a full pipe would block the server), keeping nothing."""
    for _ in stream:
        pass


def _json(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Sample:
    idle: float
    peak: float
    retained: float
    seconds: float


def measure(request: service_pb2.PlanRequest, concurrency: int, arenas: str | None) -> Sample:
    server = Server(arenas)
    try:
        channel = grpc.insecure_channel(server.target, options=client_options(512 * MIB))
        stub = service_pb2_grpc.RepackStub(channel)
        grpc.channel_ready_future(channel).result(30)
        time.sleep(0.3)
        idle = rss_mib(server.proc.pid)
        peak = [idle]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mib(server.proc.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        errors: list[str] = []

        def call() -> None:
            try:
                stub.Plan(request, timeout=900)
            except grpc.RpcError as err:
                errors.append(f"{err.code().name}: {err.details()}")

        callers = [threading.Thread(target=call) for _ in range(concurrency)]
        start = time.perf_counter()
        for t in callers:
            t.start()
        for t in callers:
            t.join()
        seconds = time.perf_counter() - start
        time.sleep(1.0)
        done.set()
        sampler.join()
        retained = rss_mib(server.proc.pid)
        channel.close()
        if errors:
            raise RuntimeError(f"{len(errors)} Plans failed: {errors[0]}")
        return Sample(idle, peak[0], retained, seconds)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--concurrency", default="1,4", help="comma-separated numbers of concurrent Plans")
    p.add_argument("--repeats", type=int, default=1, help="fresh servers per cell; medians are printed")
    p.add_argument("--arenas", default="default,2", help="MALLOC_ARENA_MAX settings: default (unset), 2, ...")
    p.add_argument("--out", default=str(OUT / "memory.json"), help='results file ("" to not write one)')
    ns = p.parse_args(argv)
    levels = [int(x) for x in ns.concurrency.split(",") if x]
    arenas = {name: ARENAS.get(name, name) for name in ns.arenas.split(",") if name}
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
    request = service_pb2.PlanRequest(snapshot=build(ns.nodes, ns.tasks, 1), spec=spec)
    print(f"server memory benchmark ({machine()}): {ns.nodes} nodes / {ns.tasks} tasks per Plan, ", end="")
    print(f"request {request.ByteSize() / MIB:.1f} MiB, {ns.repeats} fresh server(s) per cell, medians")
    print(f"  {'MALLOC_ARENA_MAX':>16}{'Plans':>7}{'idle MiB':>10}{'peak MiB':>10}{'retained MiB':>14}{'wall s':>8}")
    table: dict[str, dict[int, Sample]] = {}
    for name, value in arenas.items():
        for level in levels:
            runs = [measure(request, level, value) for _ in range(ns.repeats)]
            fields = ("idle", "peak", "retained", "seconds")
            cell = Sample(*(statistics.median(getattr(run, f) for run in runs) for f in fields))
            table.setdefault(name, {})[level] = cell
            print(
                f"  {name:>16}{level:>7}{cell.idle:>10.0f}{cell.peak:>10.0f}{cell.retained:>14.0f}{cell.seconds:>8.1f}"
            )
    ratios = _ratios(table, levels)
    for line in ratios:
        print(f"  ratio {line}")
    if ns.out:
        data = {
            "machine": machine(),
            "nodes": ns.nodes,
            "tasks": ns.tasks,
            "cells": {n: {str(c): vars(s) for c, s in row.items()} for n, row in table.items()},
        }
        path = save(Path(ns.out).stem, data) if Path(ns.out).parent == OUT else _write(Path(ns.out), data)
        print(f"  wrote {path}")
    return 0


def _ratios(table: dict[str, dict[int, Sample]], levels: list[int]) -> list[str]:
    lines = []
    low, high = min(levels), max(levels)
    for name, row in table.items():
        if low != high:
            lines.append(f"peak {high} vs {low} Plans (MALLOC_ARENA_MAX={name}): {row[high].peak / row[low].peak:.2f}")
    if "default" in table and len(table) > 1:
        for name, row in table.items():
            if name == "default":
                continue
            for level in levels:
                base = table["default"][level]
                lines.append(
                    f"MALLOC_ARENA_MAX={name} vs default, {level} Plans: peak {row[level].peak / base.peak:.2f}, "
                    f"retained {row[level].retained / base.retained:.2f}"
                )
    return lines


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


if __name__ == "__main__":
    raise SystemExit(main())
