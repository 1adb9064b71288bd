"""A real gRPC sidecar on loopback, run on its own event loop in a background thread.

For callers that are synchronous themselves — the demo, benchmarks and tests — and want the
server exactly as ``serve`` builds it, reached over a real channel.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from sidecar.metricsport import PortServer
from sidecar.server.app import RunningServer, start
from sidecar.server.config import ServerConfig
from sidecar.server.metrics import Probes, start_metrics_server

T = TypeVar("T")


class BackgroundServer:
    """``start(config)`` on a private loop; ``target`` is host:port; ``stop`` (or ``with``) ends it.
    With ``metrics_port`` >= 0 it also serves ``/metrics``, ``/healthz`` and ``/readyz`` (``metrics.port``)."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sidecar-server", daemon=True)
        self.thread.start()
        self.running: RunningServer = self.call(start(config or ServerConfig(port=0, metrics_port=-1)))
        self.target = f"127.0.0.1:{self.running.port}"
        #: /metrics, /healthz and /readyz as ``serve`` runs them, when the config has a metrics port
        self.metrics: PortServer | None = None
        config = self.running.config
        if config.metrics_port >= 0:
            probes = Probes()
            probes.attach(self.loop, self.running.health)
            self.metrics = start_metrics_server(config.metrics_port, config.metrics_host, probes)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        if not self.loop.is_running():
            return
        if self.running.extender is not None:
            self.running.extender.stop()
        self.call(self.running.server.stop(None))
        self.call(self.running.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
