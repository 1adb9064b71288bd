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
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog
from grpc_health.v1 import health_pb2
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder

#: how long the liveness probe waits for the event loop (the kubelet's default timeout is 1 s)
LOOP_TIMEOUT = 0.5
Check = Callable[[], tuple[bool, str]]
log = structlog.get_logger("sidecar.server")


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


@dataclass
class ProbeServer:
    httpd: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        check = self.server.checks.get(path)
        if check is not None:
            ok, why = check()
            status, ctype, data = (200 if ok else 503), "text/plain; charset=utf-8", (why + "\n").encode()
        elif path in ("/metrics", "/"):
            encoder, ctype = choose_encoder(self.headers.get("Accept") or "")
            status, data = 200, encoder(REGISTRY)
        else:
            status, ctype, data = 404, "text/plain; charset=utf-8", b"not found: try /metrics, /healthz, /readyz\n"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: probes and scrapes every few seconds would flood the log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    checks: dict[str, Check]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is routine: a debug line, not a traceback on stderr."""
        log.debug("http_request_failed", client=str(client_address), exc_info=True)


def serve_http(port: int, host: str, checks: dict[str, Check], name: str = "repack-metrics") -> ProbeServer:
    """Serve ``checks`` (path → check) and the Prometheus registry on a daemon thread."""
    httpd = _Server((host, port), _Handler)
    httpd.checks = checks
    thread = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    thread.start()
    return ProbeServer(httpd, thread)


def start_probe_server(port: int, host: str, probes: Probes) -> ProbeServer:
    return serve_http(port, host, {"/healthz": probes.live, "/readyz": probes.ready})
