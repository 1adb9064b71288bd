"""The sidecar's HTTP port: Prometheus text and the kubelet's probes, answered on their own thread.

* ``/healthz`` (liveness): the gRPC server's event loop runs a no-op within ``LOOP_TIMEOUT``.
  200 also while the server is still starting (a restart would not help then).
* ``/readyz`` (readiness): the gRPC health service answers SERVING for the whole server ("");
  503 before the server started and while it drains (NOT_SERVING after SIGTERM).
* ``/metrics`` (and ``/``): the Prometheus registry.

Nothing here goes through gRPC, so probes never take a slot of ``--max-concurrent-rpcs`` and are
never shed with RESOURCE_EXHAUSTED; requests are not logged (probes come every few seconds).
"""

from __future__ import annotations

import asyncio
from typing import Any

from grpc_health.v1 import health_pb2

from sidecar.metricsport import PortServer, serve_port

#: how long the liveness probe waits for the event loop (the kubelet's default timeout is 1 s)
LOOP_TIMEOUT = 0.5


class Probes:
    """Liveness and readiness of one gRPC server, once ``attach``ed to its loop and health servicer."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._health: Any = None

    def attach(self, loop: asyncio.AbstractEventLoop, health: Any) -> None:
        self._loop, self._health = loop, health

    def _on_loop(self, work: Any) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(LOOP_TIMEOUT)

    def live(self) -> tuple[bool, str]:
        if self._loop is None:
            return True, "starting"
        if self._loop.is_closed() or not self._loop.is_running():
            return False, "the gRPC server's event loop is not running"
        try:
            self._on_loop(asyncio.sleep(0))
        except Exception:
            return False, f"the gRPC server's event loop did not answer within {LOOP_TIMEOUT} s"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        if self._loop is None or self._health is None:
            return False, "starting"
        try:
            answer = self._on_loop(self._health.Check(health_pb2.HealthCheckRequest(service=""), None))
        except Exception as exc:
            return False, f"health service did not answer: {type(exc).__name__}"
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return answer.status == health_pb2.HealthCheckResponse.SERVING, name


def start_probe_server(port: int, host: str, probes: Probes) -> PortServer:
    return serve_port(port, host, {"/healthz": probes.live, "/readyz": probes.ready}, "repack-metrics")
