"""Benchmark of the API server emulator loaded with the openb 70% trace snapshot (issue 10's scale goal).

Loads ``openb_snapshot(..., Stop(at_fill=0.7))`` through ``ApiServer.load`` (the ``sandbox serve
--load`` path: CRDs, namespaces, ~1.5k nodes, PodGroups, ~6k pods), then measures over loopback
HTTP: listing all pods (JSON decoded client-side; goal <= 1 s) and the median latency of a watch
event from the write to the watcher's decoded line (goal <= 50 ms). A benchmark, not a timed test.
Skipped with a message when ../shared/traces is absent (set REPACK_TRACES).

Run: ``.venv/bin/python -m bench.sandbox_apiserver [--events N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

from bench.common import machine, save
from bench.shapes import TRACES
from sidecar.sandbox.apiserver import ApiServer
from sidecar.scenarios.traces import Stop, openb_snapshot

LIST_GOAL_S, WATCH_GOAL_S = 1.0, 0.050


def _list_pods(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/v1/pods", timeout=30) as resp:
        n = len(json.loads(resp.read())["items"])
    return time.perf_counter() - t0, n


def _watch_latency(server: ApiServer, namespace: str, events: int) -> list[float]:
    """Create ``events`` pods one by one (5 ms apart) and time each ADDED line a watcher receives."""
    lat: list[float] = []
    sent: dict[str, float] = {}
    ready = threading.Event()
    url = f"{server.url}/api/v1/namespaces/{namespace}/pods?watch=1&resourceVersion={server.store.rv}&timeoutSeconds=60"

    def reader() -> None:
        with urllib.request.urlopen(url, timeout=60) as resp:
            ready.set()
            for line in resp:
                name = json.loads(line)["object"]["metadata"]["name"]
                if name in sent:
                    lat.append(time.perf_counter() - sent[name])
                if len(lat) == events:
                    return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    if not ready.wait(10):
        raise RuntimeError("the watch did not open")
    time.sleep(0.2)
    for i in range(events):
        name = f"bench-watch-{i}"
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "pause"}]},
        }
        sent[name] = time.perf_counter()
        server.create(body, keep_status=False)
        time.sleep(0.005)
    t.join(30)
    return lat


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fill", type=float, default=0.7)
    p.add_argument("--events", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    ns = p.parse_args(argv)
    openb = TRACES / "openb"
    if not (openb / "openb_node_list_all_node.csv").exists():
        print(f"bench.sandbox_apiserver: skipped, the openb trace is not in {openb} (set REPACK_TRACES)")
        return 0
    t0 = time.perf_counter()
    snap, _ = openb_snapshot(openb, Stop(at_fill=ns.fill))
    replay_s = time.perf_counter() - t0
    with ApiServer(history=10000) as server:
        t0 = time.perf_counter()
        created = server.load(snap)
        load_s = time.perf_counter() - t0
        nodes = len(server.store.scan("/nodes")[0])
        times, n = zip(*(_list_pods(server.url) for _ in range(ns.repeats)), strict=True)
        list_s = statistics.median(times)
        namespace = next(iter(sorted({p.namespace for p in snap.tasks} or {"default"})))
        lat = sorted(_watch_latency(server, namespace, ns.events))
    watch_s = statistics.median(lat)
    p95 = lat[int(len(lat) * 0.95)]
    print(f"machine: {machine()}")
    print(f"openb {ns.fill:.0%} snapshot: replay {replay_s:.1f} s; loaded {created} objects "
          f"({nodes} nodes, {n[0]} pods) in {load_s:.2f} s")  # fmt: skip
    print(f"list all {n[0]} pods: median {list_s * 1000:.0f} ms (min {min(times) * 1000:.0f}) "
          f"-> {list_s / LIST_GOAL_S:.2f} of the {LIST_GOAL_S:.0f} s goal")  # fmt: skip
    print(f"watch event latency over {len(lat)} events: median {watch_s * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms "
          f"-> {watch_s / WATCH_GOAL_S:.2f} of the {WATCH_GOAL_S * 1000:.0f} ms goal")  # fmt: skip
    save(
        "sandbox_apiserver",
        {
            "machine": machine(),
            "fill": ns.fill,
            "objects_loaded": created,
            "nodes": nodes,
            "pods": n[0],
            "load_s": load_s,
            "list_all_pods_s": list_s,
            "list_goal_s": LIST_GOAL_S,
            "watch_median_s": watch_s,
            "watch_p95_s": p95,
            "watch_goal_s": WATCH_GOAL_S,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
