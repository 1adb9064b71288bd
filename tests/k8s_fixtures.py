"""Helpers for tests that handle Kubernetes objects (on the fake cluster or the real control plane):
objects to create, waiting (bounded), kubectl."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
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
