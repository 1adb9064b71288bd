"""The guide's cluster in a sandbox API server, with a kubeconfig and the official client on it
(fixtures ``api``, ``kubeconfig``, ``k8s`` for the watcher tests, and ``planner``: the service in
process and a real sidecar over gRPC; import them into a test module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from sidecar.client import RepackClient
from sidecar.sandbox.apiserver import ApiServer
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.planner import InProcessPlanner, Planner
from tests.conftest import ServerThread

GUIDE = Path(__file__).resolve().parents[1] / "sidecar" / "data" / "guide-ascend.json"


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer(history=50, bookmark_every=0.2) as s:
        s.load(load_snapshot(GUIDE))
        yield s


@pytest.fixture
def kubeconfig(api: ApiServer, tmp_path: Path) -> Path:
    return api.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def k8s(kubeconfig: Path) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(str(kubeconfig))
    yield c
    c.close()


@pytest.fixture(params=["in-process", "grpc"])
def planner(request: pytest.FixtureRequest, server: ServerThread) -> Iterator[Planner]:
    """The same run planned by the service in process and by a real sidecar on loopback."""
    if request.param == "in-process":
        yield InProcessPlanner()
    else:
        with RepackClient(server.target) as remote:
            yield remote
