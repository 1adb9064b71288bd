"""Helpers for tests on the real control plane (the ``real_cluster`` fixture is the suite's,
tests/conftest.py): the watcher as a process, jsonpath reads, waiting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from realcluster.launcher import RealCluster
from tests.k8s_fixtures import wait_for

__all__ = ["wait_for"]

ROOT = Path(__file__).resolve().parents[2]


class Watcher:
    """``repack-sidecar watch`` as a process (the shipped entry point), logging to ``log``."""

    def __init__(self, kubeconfig: Path, log: Path, *extra: str, gate_port: int | None = None) -> None:
        """``gate_port``: serve the placement gate's webhook there (``RealCluster.gate_port``, where the
        configuration points), as the shipped manifests run it; None: no webhook (the API server's
        calls then fail open, failurePolicy Ignore)."""
        self.kubeconfig, self.gate_port = kubeconfig, gate_port
        gate = ["--webhook-port", str(gate_port), "--webhook-host", "127.0.0.1", "--webhook-name", "127.0.0.1"]
        self.argv = [sys.executable, "-m", "sidecar", "watch", "--kubeconfig", str(kubeconfig), "--in-process",
                     "--lease-namespace", "volcano-system", "--period", "0.5", "--execute-cooldown", "5",
                     "--eviction-timeout", "60", "--execution-timeout", "240",
                     *(gate if gate_port is not None else []), *extra]  # fmt: skip
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Watcher:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)  # fmt: skip
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def jsonpath(cluster: RealCluster, *args: str, expr: str) -> str:
    return cluster.kubectl("get", *args, "-o", f"jsonpath={expr}").stdout


def items(cluster: RealCluster, *args: str) -> list[dict[str, Any]]:
    return list(json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)["items"])
