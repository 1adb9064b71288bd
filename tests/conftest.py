from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import hypothesis  # noqa: F401  (imported up front: see below)
import pytest

from sidecar import logs
from sidecar.server.app import RunningServer, start
from sidecar.server.config import MIB, ServerConfig

logs.configure("json", "warning")

# hypothesis' pytest plugin imports the package lazily in its terminal summary. Imported then,
# pytest's assertion rewriter parses it while finalizers of the sandbox tests' HTTP clients may
# run, and CPython 3.11's parser can fail with "AST constructor recursion depth mismatch"
# (seen when only the sandbox tests run). Importing it here keeps that parse at start-up.


class ServerThread:
    """A real grpc.aio server on loopback, run on its own event loop in a background thread."""

    def __init__(self, config: ServerConfig) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.running: RunningServer = self.call(start(config))
        self.target = f"127.0.0.1:{self.running.port}"

    def call(self, coro):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self.call(self.running.server.stop(None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


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
