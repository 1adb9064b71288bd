"""The watcher's fixtures: ``cluster``, the fake cluster port holding the guide's example; ``sidecar``,
the service in process and a real sidecar over gRPC (every test using it runs with both)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sidecar.client import RepackClient
from sidecar.fake.cluster import FakeCluster
from sidecar.watcher.sidecarport import InProcessSidecar, Sidecar
from tests.conftest import ServerThread
from tests.execute_fixtures import guide_objects


@pytest.fixture
def cluster() -> FakeCluster:
    fake = FakeCluster(history=50, bookmark_every=0.2)
    fake.load(guide_objects())
    return fake


@pytest.fixture(params=["in-process", "grpc"])
def sidecar(request: pytest.FixtureRequest, server: ServerThread) -> Iterator[Sidecar]:
    """The same run planned by the service in process and by a real sidecar on loopback."""
    if request.param == "in-process":
        yield InProcessSidecar()
    else:
        with RepackClient(server.target) as remote:
            yield remote
