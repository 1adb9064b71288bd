"""``repack-sidecar watch`` flags, kept here so the CLI module stays a thin switchboard."""

from __future__ import annotations

import argparse


def watch_arguments(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig, the planner (a sidecar on HOST:PORT, or the service in process), --once, --period."""
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig file of the cluster to watch")
    pick = parser.add_mutually_exclusive_group(required=True)
    pick.add_argument("--sidecar", metavar="HOST:PORT", help="plan through this sidecar's gRPC API")
    pick.add_argument("--in-process", action="store_true", help="plan in this process (no sidecar)")
    parser.add_argument("--once", action="store_true", help="one reconcile pass, then exit")
    parser.add_argument("--period", type=float, default=2.0, help="seconds between passes")
