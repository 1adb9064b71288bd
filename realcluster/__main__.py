"""``python -m realcluster up|down|modelserving``: the real control plane by hand.

* ``up`` builds what is missing (``go/controlplane/build.sh``), starts the components on loopback,
  writes the admin kubeconfig and returns, leaving them running; ``--kubeconfig`` copies it.
* ``down`` stops what the last ``up`` in that folder started (by PID).
* ``modelserving`` runs the ModelServing controller double in the foreground (Ctrl-C stops it),
  for the guide's Step 2 (its CRD: ``kubectl apply -f realcluster/modelserving-crd.yaml``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from realcluster.launcher import ROOT, RealCluster, ensure_built, stop_by_state
from realcluster.modelserving import ModelServingDouble

DEFAULT_DIR = ROOT / ".controlplane" / "cluster"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realcluster", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="build if needed, start the cluster, write the kubeconfig, return")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="working folder (logs, certificates, etcd data)")
    up.add_argument("--kubeconfig", type=Path, help="also copy the admin kubeconfig here")
    down = sub.add_parser("down", help="stop the processes a previous `up` started")
    down.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ms = sub.add_parser("modelserving", help="run the ModelServing controller double until Ctrl-C")
    ms.add_argument("--kubeconfig", type=Path, default=DEFAULT_DIR / "kubeconfig")
    args = parser.parse_args(argv)
    if args.cmd == "down":
        print("stopped:", " ".join(stop_by_state(args.dir)) or "nothing (already stopped)")
        return 0
    if args.cmd == "modelserving":
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        double = ModelServingDouble(args.kubeconfig).start()
        print(f"ModelServing controller double on {args.kubeconfig} (Ctrl-C stops it)", flush=True)
        stop.wait()
        double.stop()
        return 0
    ensure_built()
    if (args.dir / "state.json").exists():
        stop_by_state(args.dir)
    shutil.rmtree(args.dir, ignore_errors=True)
    cluster = RealCluster(args.dir)
    cluster.up()
    for comp in cluster.components.values():  # left running detached: `down` finds them by PID
        comp.proc = None
    if args.kubeconfig:
        shutil.copy(cluster.kubeconfig, args.kubeconfig)
    print(f"cluster up: {cluster.server}\nkubeconfig: {args.kubeconfig or cluster.kubeconfig}\n"
          f"logs: {args.dir / 'logs'}\nstop: python -m realcluster down --dir {args.dir}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
