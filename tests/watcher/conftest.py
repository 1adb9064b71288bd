"""The watcher's fixtures: ``api`` holds the guide's cluster; ``planner`` is the service in process
and a real sidecar over gRPC (every test using it runs with both)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sidecar.client import RepackClient
from sidecar.sandbox.apiserver import ApiServer
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.planner import InProcessPlanner, Planner
from tests.conftest import ServerThread
from tests.execute_fixtures import GUIDE


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer(history=50, bookmark_every=0.2) as s:
        s.load(load_snapshot(GUIDE))
        yield s


@pytest.fixture(params=["in-process", "grpc"])
def planner(request: pytest.FixtureRequest, server: ServerThread) -> Iterator[Planner]:
    """The same run planned by the service in process and by a real sidecar on loopback."""
    if request.param == "in-process":
        yield InProcessPlanner()
    else:
        with RepackClient(server.target) as remote:
            yield remote
