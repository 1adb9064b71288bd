"""One HTTP port per process for Prometheus and the kubelet: ``/metrics`` (and ``/``), plus probe
paths mapped to checks. The sidecar and the watcher each serve one (their checks differ).

It runs on a daemon thread of its own, outside gRPC and the controller, so a probe never waits
behind work and never takes an RPC slot; requests are not logged (probes come every few seconds),
and a client that leaves mid-answer is a debug line, not a traceback on stderr.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder

#: a probe: (healthy?, a one-line reason for the body)
Check = Callable[[], tuple[bool, str]]
log = structlog.get_logger("sidecar.metricsport")


@dataclass
class PortServer:
    httpd: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    checks: dict[str, Check]

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("http_request_failed", client=str(client_address), exc_info=True)


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
        ctype = "text/plain; charset=utf-8"
        if check is not None:
            ok, why = check()
            status, data = (200 if ok else 503), (why + "\n").encode()
        elif path in ("/metrics", "/"):
            encoder, ctype = choose_encoder(self.headers.get("Accept") or "")
            status, data = 200, encoder(REGISTRY)
        else:
            status, data = 404, b"not found: try /metrics, /healthz, /readyz\n"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: probes and scrapes every few seconds would flood the log."""


def bind_error(flag: str, host: str, port: int, cause: OSError | str) -> str:
    """One line for a port that cannot be opened, naming the flag to change."""
    why = (cause.strerror or str(cause)) if isinstance(cause, OSError) else cause
    return f"{flag}: cannot listen on {host}:{port}: {why}"


def serve_port(port: int, host: str, checks: dict[str, Check], name: str, flag: str = "--metrics-port") -> PortServer:
    """Serve ``checks`` (path → check) and the Prometheus registry on a daemon thread (port 0: any).
    A port that cannot be opened is an ``OSError`` whose message names ``flag`` and host:port."""
    try:
        httpd = _Server((host, port), _Handler)
    except OSError as exc:
        raise OSError(bind_error(flag, host, port, exc)) from None
    httpd.checks = checks
    thread = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    thread.start()
    return PortServer(httpd, thread)
