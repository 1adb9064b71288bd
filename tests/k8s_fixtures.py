"""Helpers for tests against the API server emulator (the fixtures ``api``, ``kubeconfig`` and ``k8s`` are
the suite's, tests/conftest.py): objects to create, ``sandbox serve`` as a process, waiting, kubectl."""

from __future__ import annotations

import contextlib
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar


def pod(
    name: str, *, namespace: str = "default", node: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


NODE_INFO = {
    k: "" for k in ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                    "machineID", "operatingSystem", "osImage", "systemUUID")
} | {"kubeletVersion": "v1.32.0"}  # fmt: skip


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": NODE_INFO},
    }


@contextlib.contextmanager
def serving(*args: str) -> Iterator[str]:
    """`python -m sidecar sandbox serve ARGS` as a person would run it: yields its first line
    ("serving URL ...", read with a timeout, so a server that never starts fails the test instead of hanging);
    on leaving, SIGTERM must make it exit 0."""
    cmd = [sys.executable, "-m", "sidecar", "sandbox", "serve", *args]
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    try:
        try:
            first = lines.get(timeout=30)
        except queue.Empty:
            raise AssertionError("sandbox serve printed nothing within 30 s") from None
        assert first.startswith("serving http://127.0.0.1:"), first
        yield first
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
            raise
    assert code == 0, proc.stderr.read() if proc.stderr else ""


T = TypeVar("T")


def wait_for(what: Callable[[], T | None], timeout: float = 10.0, *, why: str = "") -> T:
    """Poll ``what`` until it returns something truthy (controllers act asynchronously), bounded;
    ``why`` names the condition in the failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout}s" + (f": {why}" if why else ""))


def kubectl_out(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    """``kubectl --kubeconfig KUBECONFIG ARGS`` as a person types it; its stdout, failing the test
    with kubectl's stderr when it exits non-zero."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
