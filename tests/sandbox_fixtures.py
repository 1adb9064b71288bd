"""Shared fixtures for the API server emulator tests: a real server per test, the official client on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from sidecar.sandbox.apiserver import ApiServer


@pytest.fixture
def server() -> Iterator[ApiServer]:
    with ApiServer(history=50, bookmark_every=0.2) as s:
        yield s


@pytest.fixture
def kubeconfig(server: ApiServer, tmp_path: Path) -> Path:
    return server.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def k8s(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubeconfig))
    yield api
    api.close()


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
