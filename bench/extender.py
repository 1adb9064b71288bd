"""Extender intake benchmark: Volcano onSessionOpen bodies -> a usable session.

    python -m bench.extender [--nodes 1000 5000] [--pods-per-node 4.3] [--repeats 3]

Bodies are Volcano's own: the cluster (a synth snapshot as Kubernetes objects) opens a session in
``volcano-oracle`` (Volcano's scheduler cache and framework, go/plugin/fidelity; the objects padded
with managedFields and node images as a live cluster's are), which writes it
with the extender plugin's own ``json.Marshal`` of its ``OnSessionOpenRequest`` -- every field
Volcano sends, as it spells it. ``--bodies python`` uses sidecar.scenarios.volcano_session's
Volcano-shaped bodies instead (no Go toolchain needed; smaller: fewer of Volcano's fields). For
each size: body size; parse time of
``json.loads``, ``orjson.loads`` and the typed ``msgspec`` decoder the intake uses (which skips
what the planner does not need); the whole decode (body -> Snapshot -> ClusterState); peak RSS
of a fresh process doing that decode; and, at the first size, "usable after arrival": from the
POST's first byte to session ``latest`` published, over real HTTP. Goals (issue 27): usable
<= 0.5 s at 1,000 nodes and <= 1.5 s at 3,000; the decode's added peak RSS <= 2x the body.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.common import machine, median_seconds, save
from bench.fidelity import Oracle, oracle_binary
from sidecar.fake.objects import objects_from_snapshot
from sidecar.mirror.conf import DEFAULT_CONF
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.scenarios.volcano_session import MASTER, pad, session_body
from sidecar.server.extender import ExtenderServer
from sidecar.service import RepackService
from sidecar.snapshot.decode import decode
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.volcano import _SESSION, snapshot_from_session

#: usable after arrival, by node count
GOAL_USABLE_S = {1000: 0.5, 3000: 1.5}
GOAL_RSS_RATIO = 2.0

_RSS_CHILD = """
import sys
from pathlib import Path
def hwm():  # peak RSS of this process image (ru_maxrss would include the forking parent's)
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
    return int(line.split()[1])
import sidecar.snapshot.volcano, sidecar.snapshot.decode
body = Path(sys.argv[1]).read_bytes()
before = hwm()
if sys.argv[2] == "decode":
    from sidecar.snapshot.volcano import snapshot_from_session
    from sidecar.snapshot.decode import decode
    state = decode(snapshot_from_session(body))
elif sys.argv[2] == "json":
    import json
    obj = json.loads(body)
print(before, hwm())
"""


def body_for(nodes: int, pods_per_node: float, seed: int, bodies: str = "go") -> tuple[bytes, int]:
    gpu = synth(SynthOptions(nodes=nodes, fill=0.8, seed=seed, cpu_pods_per_node=0.0))
    extra = max(0.0, pods_per_node - len(gpu.task_columns.uid) / nodes)
    snap = to_rows(synth(SynthOptions(nodes=nodes, fill=0.8, seed=seed, cpu_pods_per_node=extra)))
    objects = objects_from_snapshot(snap)
    if bodies == "python":
        return session_body(snap, objects, MASTER), len(snap.tasks)
    with tempfile.TemporaryDirectory() as tmp, Oracle(oracle_binary()) as oracle:
        path = Path(tmp) / "body.json"
        oracle.session_body(pad(objects), DEFAULT_CONF, path)
        return path.read_bytes(), len(snap.tasks)


def peak_rss_mib(path: Path, mode: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD, str(path), mode], check=True, capture_output=True, text=True
    )
    before, after = (int(x) / 1024 for x in out.stdout.split())
    return after, after - before


def usable_after_arrival(body: bytes, repeats: int) -> list[float]:
    server = ExtenderServer(RepackService(), port=0)
    times = []
    try:
        for _ in range(repeats):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            start = time.monotonic()
            conn.request("POST", "/onSessionOpen", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
            assert server.extender.intake.idle(60)
            times.append(time.monotonic() - start)
            conn.close()
    finally:
        server.stop()
    return times


def measure(nodes: int, pods_per_node: float, seed: int, repeats: int, bodies: str) -> dict[str, Any]:
    body, pods = body_for(nodes, pods_per_node, seed, bodies)
    row: dict[str, Any] = {"nodes": nodes, "pods": pods, "body_mb": len(body) / 1e6}
    row["json_loads_s"], _ = median_seconds(lambda: json.loads(body), repeats)
    row["orjson_loads_s"], _ = median_seconds(lambda: orjson.loads(body), repeats)
    row["msgspec_typed_s"], _ = median_seconds(lambda: _SESSION.decode(body), repeats)
    row["to_snapshot_s"], _ = median_seconds(lambda: snapshot_from_session(body), repeats)
    row["to_state_s"], _ = median_seconds(lambda: decode(snapshot_from_session(body)), repeats)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "body.json"
        path.write_bytes(body)
        row["peak_rss_mib"], row["decode_rss_mib"] = peak_rss_mib(path, "decode")
        row["json_loads_peak_rss_mib"], row["json_loads_rss_mib"] = peak_rss_mib(path, "json")
    row["usable_after_arrival_s"] = statistics.median(usable_after_arrival(body, repeats))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, nargs="+", default=[1000, 3000])
    p.add_argument("--bodies", choices=["go", "python"], default="go", help="Volcano's marshalling or ours")
    p.add_argument("--pods-per-node", type=float, default=4.3, help="the issue's 1k cluster: 4,272 pods")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-save", action="store_true")
    ns = p.parse_args(argv)

    rows = [measure(n, ns.pods_per_node, ns.seed, ns.repeats, ns.bodies) for n in ns.nodes]
    print(f"extender intake benchmark ({machine()}; {ns.bodies} bodies), medians of {ns.repeats}")
    head = ("nodes", "pods", "MB", "json s", "orjson s", "msgspec s", "->snap s", "->state s", "RSS MiB", "+decode")
    print("  " + "".join(f"{h:>10}" for h in head))
    for r in rows:
        vals = (
            r["nodes"], r["pods"], f"{r['body_mb']:.1f}", f"{r['json_loads_s']:.3f}", f"{r['orjson_loads_s']:.3f}",
            f"{r['msgspec_typed_s']:.3f}", f"{r['to_snapshot_s']:.3f}", f"{r['to_state_s']:.3f}",
            f"{r['peak_rss_mib']:.0f}", f"{r['decode_rss_mib']:.0f}",
        )  # fmt: skip
        print("  " + "".join(f"{v:>10}" for v in vals))
        print(f"    json.loads alone: peak RSS {r['json_loads_peak_rss_mib']:.0f} MiB (+{r['json_loads_rss_mib']:.0f})")
    for r in rows:
        goal = GOAL_USABLE_S.get(r["nodes"])
        verdict = f"goal <= {goal} s: {'✔' if r['usable_after_arrival_s'] <= goal else '✘'}" if goal else "no goal"
        print(f"  usable after arrival at {r['nodes']} nodes (HTTP POST -> session 'latest'): "
              f"{r['usable_after_arrival_s']:.3f} s; {verdict}")  # fmt: skip
        ratio = r["decode_rss_mib"] * 2**20 / (r["body_mb"] * 1e6)
        print(f"  decode's added peak RSS at {r['nodes']} nodes: {ratio:.2f}x the body; "
              f"goal <= {GOAL_RSS_RATIO:g}x: {'✔' if ratio <= GOAL_RSS_RATIO else '✘'}")  # fmt: skip
    if not ns.no_save:
        print(f"  saved {save('extender', {'machine': machine(), 'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
