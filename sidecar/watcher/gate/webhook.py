"""``watch --webhook-port``: the placement gate's admission webhook over HTTPS.

``POST /mutate-pods`` takes an AdmissionReview v1 and answers with ``GateIndex.review``'s
(``gates.py`` decides; this module only carries it). ``GET /healthz`` answers 200 for probes.
Every replica serves it, leader or not: the decision reads only the informers' caches.

TLS is handshaken on the connection's own thread (a slow client never holds the accept loop), the
API server's keep-alive connections are kept (HTTP/1.1), and a body is bounded (the API server
sends at most a few MiB per object). The certificate is given as PEM bytes and loaded once.
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from sidecar.kubeobj import Obj

Review = Callable[[Obj], Obj]
PATH = "/mutate-pods"
MAX_BODY = 8 << 20
#: seconds a connection may stay silent (handshake or between requests)
IDLE_SECONDS = 30.0
log = structlog.get_logger("sidecar.watcher")


def tls_context(cert: bytes, key: bytes) -> ssl.SSLContext:
    """A server context (TLS 1.2+, HTTP/1.1 by ALPN) for PEM ``cert`` and ``key``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    load_chain(context, cert, key)
    return context


def load_chain(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Put ``cert`` and ``key`` into ``context``: later handshakes use them (a renewal in place)."""
    with tempfile.TemporaryDirectory(prefix="repack-webhook-") as tmp:  # load_cert_chain reads files only
        paths = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in zip(paths, (cert, key), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        context.load_cert_chain(*paths)


class _ReviewHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ReviewServer

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged one by one (the gate's decisions are)."""

    def _answer(self, code: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/healthz":
            self._answer(200, b"ok\n", "text/plain")
        else:
            self._answer(404, b"not found\n", "text/plain")

    def do_POST(self) -> None:
        if self.path.split("?")[0] != PATH:
            self._answer(404, b"not found\n", "text/plain")
            return
        length = self.headers.get("Content-Length")
        if length is None or not (length.isascii() and length.isdigit()):
            self.close_connection = True
            self._answer(411, b"Content-Length required\n", "text/plain")
            return
        if int(length) > MAX_BODY:
            self.close_connection = True
            self._answer(413, b"request body too large\n", "text/plain")
            return
        try:
            review = json.loads(self.rfile.read(int(length)))
            if not isinstance(review, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            self._answer(400, f"not an AdmissionReview: {exc}\n".encode(), "text/plain")
            return
        self._answer(200, json.dumps(self.server.review(review)).encode())


class _ReviewServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], context: ssl.SSLContext, review: Review) -> None:
        self.context, self.review = context, review
        super().__init__(address, _ReviewHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake, on this connection's thread; a failed handshake is a debug line."""
        request.settimeout(IDLE_SECONDS)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.debug("webhook handshake failed", client=str(client_address), error=str(exc))
            return
        try:
            super().finish_request(tls, client_address)
        except (TimeoutError, ssl.SSLError, ConnectionError) as exc:
            log.debug("webhook connection ended", client=str(client_address), error=str(exc))

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.warning("webhook request failed", client=str(client_address), exc_info=True)


class WebhookServer:
    """The HTTPS server on its own daemon thread; ``port`` is the bound one (0 asks for any).
    ``keep_fresh`` asks for the certificate again every so often and serves what it gets: a
    certificate renewed by another replica, or rotated by cert-manager, is picked up without a restart."""

    def __init__(self, host: str, port: int, cert: bytes, key: bytes, review: Review) -> None:
        self._server = _ReviewServer((host, port), tls_context(cert, key), review)
        self.port = int(self._server.server_address[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._server.serve_forever, name="gate-webhook", daemon=True)
        self._thread.start()

    def reload(self, cert: bytes, key: bytes) -> None:
        load_chain(self._server.context, cert, key)

    def keep_fresh(self, certificate: Callable[[], tuple[bytes, bytes]], every: float) -> None:
        def loop() -> None:
            while not self._stop.wait(every):
                try:
                    self.reload(*certificate())
                except Exception as exc:  # the API away, a file mid-rotation: the current one serves on
                    log.warning("webhook certificate not refreshed; will retry", error=f"{type(exc).__name__}: {exc}")

        threading.Thread(target=loop, name="gate-webhook-tls", daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
