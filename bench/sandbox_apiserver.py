"""Benchmark of the API server emulator: list 6k pods (client-side JSON) and median watch event latency.

Run: ``.venv/bin/python -m bench.sandbox_apiserver`` (a benchmark, not a timed test).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.request
from typing import Any

from sidecar.sandbox.apiserver import ApiServer


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "labels": {"app": f"job-{i // 8}"}},
        "spec": {
            "nodeName": f"node-{i % 1500:04d}",
            "schedulerName": "volcano",
            "containers": [
                {"name": "main", "image": "train:1", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": "Running"},
    }


def main(pods: int = 6000, events: int = 200) -> None:
    with ApiServer(history=10000) as server:
        for i in range(1500):
            server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:04d}"}})
        for i in range(pods):
            server.create(_pod(i))
        url = f"{server.url}/api/v1/pods"
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url) as resp:
                n = len(json.loads(resp.read())["items"])
            times.append(time.perf_counter() - t0)
        print(f"list {n} pods: median {statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f})")

        lat: list[float] = []
        sent: dict[str, float] = {}
        ready = threading.Event()

        def reader() -> None:
            with urllib.request.urlopen(f"{url}?watch=1&resourceVersion={server.store.rv}&timeoutSeconds=60") as resp:
                ready.set()
                for line in resp:
                    name = json.loads(line)["object"]["metadata"]["name"]
                    lat.append(time.perf_counter() - sent[name])
                    if len(lat) == events:
                        return

        t = threading.Thread(target=reader)
        t.start()
        ready.wait(10)
        time.sleep(0.2)
        for i in range(events):
            name = f"w-{i}"
            sent[name] = time.perf_counter()
            server.create({**_pod(i), "metadata": {"name": name, "namespace": "default"}})
            time.sleep(0.005)
        t.join(30)
        print(f"watch event latency over {len(lat)} events: median {statistics.median(lat) * 1000:.2f} ms, "
              f"p95 {sorted(lat)[int(len(lat) * 0.95)] * 1000:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
