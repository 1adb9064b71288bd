from __future__ import annotations

from collections.abc import Iterator

import hypothesis  # noqa: F401  (imported up front: see below)
import pytest

from sidecar import logs
from sidecar.server.background import BackgroundServer
from sidecar.server.config import MIB, ServerConfig

logs.configure("json", "warning")

# hypothesis' pytest plugin imports the package lazily in its terminal summary. Imported then,
# pytest's assertion rewriter parses it while finalizers of the sandbox tests' HTTP clients may
# run, and CPython 3.11's parser can fail with "AST constructor recursion depth mismatch"
# (seen when only the sandbox tests run). Importing it here keeps that parse at start-up.


#: a real grpc.aio server on loopback, on its own event loop in a background thread
ServerThread = BackgroundServer


@pytest.fixture(scope="session")
def server() -> Iterator[ServerThread]:
    s = ServerThread(ServerConfig(port=0, metrics_port=-1, max_message_bytes=4 * MIB, session_ttl_seconds=60))
    yield s
    s.stop()


@pytest.fixture
def make_server() -> Iterator[object]:
    started: list[ServerThread] = []

    def factory(**overrides: object) -> ServerThread:
        s = ServerThread(ServerConfig(**{"port": 0, "metrics_port": -1, **overrides}))  # type: ignore[arg-type]
        started.append(s)
        return s

    yield factory
    for s in started:
        s.stop()


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """CLI tests reconfigure logging; put the suite's level back afterwards."""
    yield
    logs.configure("json", "warning")
