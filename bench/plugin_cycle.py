"""What the repack scheduler plugin adds to a Volcano scheduling cycle, at 1k and 10k nodes.

    python -m bench.plugin_cycle [--count 3] [--quick]

Runs the Go benchmarks of go/plugin/repack (bench_test.go) from the test binary
go/controlplane/build.sh builds (``repack-plugin.test``), on Volcano's own scheduler cache
(six running gang pods per node, a pending gang per 100 nodes):

* ``cycle``: framework.OpenSession + CloseSession with the project's conf
  (manifests/plugin/volcano-scheduler.conf, Volcano's default tiers) with and without the repack
  tier, alternated in one run; the publisher sends every session to an in-process stand-in, so its
  work competes for the same cores as a real vc-scheduler's would;
* ``capture``: the plugin's share of the scheduling goroutine (copying the session out);
* ``snapshot``: building the Snapshot on the publisher's goroutine, cold and with the memo of the
  previous cycle (pods unchanged: the steady state).

Reports medians over ``--count`` repetitions and the ratio repack/stock (the baseline measured in
the same run). ``--quick``: 1k nodes only, one repetition (the smoke test).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import machine, save

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "go" / "controlplane" / "build.sh"
PACKAGE = ROOT / "go" / "plugin" / "repack"
_LINE = re.compile(r"^Benchmark(\S+?)-\d+\s+\d+\s+([0-9.]+) ns/op")


def test_binary() -> Path:
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"go/controlplane/build.sh failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    bin_dir = subprocess.run([str(BUILD), "--print-bin"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(bin_dir) / "repack-plugin.test"


def run(binary: Path, count: int, quick: bool) -> dict[str, list[float]]:
    """Seconds per op of every benchmark, one value per repetition."""
    argv = [str(binary), "-test.run", "^$", "-test.bench", "BenchmarkCycle|BenchmarkConvert",
            "-test.benchtime", "5x", "-test.count", str(count), "-test.timeout", "60m"]  # fmt: skip
    if quick:
        argv += ["-test.short", "-test.benchtime", "2x"]
    # run where `go test` would (the package folder): the benchmark reads the project's conf from there
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=PACKAGE, check=False)
    if proc.returncode != 0:
        sys.exit(f"the plugin's benchmarks failed:\n{proc.stdout[-3000:]}")
    times: dict[str, list[float]] = {}
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            times.setdefault(m.group(1), []).append(float(m.group(2)) / 1e9)
    return times


def summarise(times: dict[str, list[float]]) -> dict[str, Any]:
    med = {name: statistics.median(v) for name, v in times.items()}
    sizes = sorted({int(m.group(1)) for name in med if (m := re.search(r"nodes=(\d+)", name))})
    rows = []
    for n in sizes:
        stock, repack = med.get(f"Cycle/nodes={n}/stock"), med.get(f"Cycle/nodes={n}/repack")
        capture = med.get(f"Convert/nodes={n}/capture")
        if stock is None or repack is None or capture is None:
            continue
        rows.append({
            "nodes": n,
            "cycle_stock_ms": stock * 1e3,
            "cycle_repack_ms": repack * 1e3,
            "added_ms": (repack - stock) * 1e3,
            "ratio": repack / stock,
            "capture_ms": capture * 1e3,
            "capture_share": capture / stock,
            "snapshot_cold_ms": med.get(f"Convert/nodes={n}/snapshot", float("nan")) * 1e3,
            "snapshot_memo_ms": med.get(f"Convert/nodes={n}/snapshot-memo", float("nan")) * 1e3,
        })  # fmt: skip
    return {"machine": machine(), "medians_s": med, "sizes": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=3, help="repetitions of each benchmark (median)")
    ap.add_argument("--quick", action="store_true", help="1k nodes, fewer iterations (smoke test)")
    args = ap.parse_args(argv)
    result = summarise(run(test_binary(), args.count, args.quick))
    print(f"repack plugin per scheduling cycle ({result['machine']}; medians of {args.count})")
    print(f"{'nodes':>6} {'stock ms':>9} {'+repack ms':>10} {'ratio':>6} {'capture ms':>10} {'share':>6} "
          f"{'build cold':>10} {'build memo':>10}")  # fmt: skip
    for r in result["sizes"]:
        print(f"{r['nodes']:>6} {r['cycle_stock_ms']:>9.1f} {r['cycle_repack_ms']:>10.1f} {r['ratio']:>6.3f} "
              f"{r['capture_ms']:>10.2f} {r['capture_share']:>6.1%} {r['snapshot_cold_ms']:>10.1f} "
              f"{r['snapshot_memo_ms']:>10.1f}")  # fmt: skip
    print(f"saved {save('plugin_cycle', {**result, 'count': args.count, 'quick': args.quick})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
