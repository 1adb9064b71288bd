"""Plans replayed through vc-scheduler on the real control plane: the planned-vs-actual figure.

    python -m bench.replay [--rounds 300] [--seed 1]

Builds and starts the real control plane (go/controlplane/build.sh: etcd, kube-apiserver,
kube-controller-manager, KWOK, vc-scheduler, vc-controller-manager), installs the project (CRD,
RBAC, placement gate) and runs the shipped watcher (``repack-sidecar watch``, cooldown 0). Then per
round (tests/realcluster/replay.py): a random pool of 4-8 KWOK nodes, random gang Jobs placed by
vc-scheduler, about half of them deleted again, an Execute RepackRun over the pool; each
relocation's journal gives the planned node, the node the watcher nominated and the node
vc-scheduler bound the rebuilt pod to. Reports, over every relocation of every round: bound
elsewhere than planned, elsewhere than nominated; and the runs' outcomes. Results in
bench/out/replay.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common import machine, save
from realcluster.launcher import RealCluster, ensure_built
from tests.realcluster.fixtures import Watcher
from tests.realcluster.replay import RoundResult, clean, play
from tests.realcluster.scenario import Scenario


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    started = time.monotonic()
    results: list[RoundResult] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp_name:
        tmp = Path(tmp_name)
        cluster = RealCluster(tmp / "cluster", bin_dir=ensure_built()).up()
        watcher = None
        try:
            Scenario(cluster, tmp, "replay-setup").install()
            kubeconfig = cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp / "w.kubeconfig")
            watcher = Watcher(kubeconfig, tmp / "watcher.log", "--execute-cooldown", "0",
                              gate_port=cluster.gate_port).start()  # fmt: skip
            for seed in range(args.seed, args.seed + args.rounds):
                s = Scenario(cluster, tmp, f"replay-{seed}")
                try:
                    r = play(s, seed)
                except Exception as exc:  # a round the cluster could not play (e.g. an API call timed out)
                    errors.append(f"seed {seed}: {type(exc).__name__}: {str(exc)[:200]}")
                    print(f"seed {seed}: not played: {errors[-1]}", flush=True)
                    continue
                finally:
                    try:
                        clean(s)
                    except Exception as exc:
                        print(f"seed {seed}: clean-up failed: {type(exc).__name__}", flush=True)
                results.append(r)
                line = f"seed {seed}: {r.nodes} nodes, {r.jobs_left} jobs, {r.phase} {r.reason}, "
                print(line + f"{r.relocations} moved, {len(r.off_plan)} off plan, {r.seconds:.0f} s", flush=True)
        finally:
            if watcher is not None:
                watcher.stop()
            cluster.down()
    took = time.monotonic() - started
    moved = [r for r in results if r.relocations]
    relocations = sum(r.relocations for r in results)
    bound = sum(r.bound for r in results)
    off_plan = [x for r in results for x in r.off_plan]
    off_nomination = [x for r in results for x in r.off_nomination]
    outcomes = Counter(f"{r.phase}/{r.reason}" for r in results)
    print(f"{len(results)} rounds ({len(moved)} with moves) in {took:.0f} s on {machine()}; {len(errors)} not played")
    print(f"  relocations {relocations}, rebuilt pods bound {bound}")
    print(f"  bound elsewhere than planned: {len(off_plan)}; elsewhere than nominated: {len(off_nomination)}")
    for x in (off_plan + off_nomination)[:10]:
        print(f"    {x}")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    save("replay", {"rounds": len(results), "with_moves": len(moved), "relocations": relocations, "bound": bound,
                    "off_plan": off_plan, "off_nomination": off_nomination, "outcomes": dict(outcomes),
                    "seconds": took, "machine": machine(), "not_played": errors,
                    "results": [dataclasses.asdict(r) for r in results]})  # fmt: skip
    return 0 if not off_plan and not off_nomination and bound == relocations else 1


if __name__ == "__main__":
    sys.exit(main())
