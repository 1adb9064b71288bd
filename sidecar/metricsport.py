"""One HTTP port per process for Prometheus and the kubelet: ``/metrics`` (and ``/``), plus probe
paths mapped to checks. The sidecar and the watcher each serve one (their checks differ).

It runs on daemon threads of its own, outside gRPC and the controller, so a probe never waits
behind work and never takes an RPC slot; requests are not logged (probes come every few seconds),
and a client that leaves mid-answer is a debug line, not a traceback on stderr.

The port usually listens on every address (Prometheus scrapes from outside the pod), so it is
bounded: ``HANDLERS`` threads answer, at most ``MAX_CONNECTIONS`` connections are open (served or
waiting); one more is closed at once. A connection idle for ``IDLE_SECONDS`` is closed, and a
keep-alive connection is closed after its answer while others wait, so idle clients cannot hold
the port. Nothing here waits at exit: the threads are daemons.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ParamSpec, TypeVar

import structlog
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder

#: a probe: (healthy?, a one-line reason for the body)
Check = Callable[[], tuple[bool, str]]
log = structlog.get_logger("sidecar.metricsport")
#: threads answering requests; connections open at once (answered or waiting); idle timeout (s)
HANDLERS = 8
MAX_CONNECTIONS = 16
IDLE_SECONDS = 2.0

P = ParamSpec("P")
T = TypeVar("T")


class DaemonPool(Executor):
    """A fixed pool of daemon threads: nobody joins them at exit, so a process's exit is bounded by
    its own shutdown logic (the gRPC grace, a socket timeout), never by the slowest work item."""

    def __init__(self, workers: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the pool is shut down")
            self._queue.put((future, lambda: fn(*args, **kwargs)))
        return future

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            self._do(*item)
            del item  # an idle thread keeps no finished request (or its answer) alive

    @staticmethod
    def _do(future: Future[Any], work: Callable[[], Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = work()
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                if cancel_futures:
                    while True:
                        try:
                            item = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if item is not None:
                            item[0].cancel()
                for _ in self._threads:
                    self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


@dataclass
class PortServer:
    httpd: HTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
        if isinstance(self.httpd, _MetricsServer):
            self.httpd.pool.shutdown(wait=False, cancel_futures=True)


class _MetricsServer(HTTPServer):
    """Accepts on one thread, answers on ``HANDLERS`` pool threads, refuses past ``MAX_CONNECTIONS``."""

    checks: dict[str, Check]
    #: the kernel's accept queue: connections past the cap are accepted and closed, not left to retry SYNs
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], name: str) -> None:
        super().__init__(address, _MetricsHandler)
        self.pool = DaemonPool(HANDLERS, name)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.open = 0  # connections admitted and not yet closed (guarded by _count)
        self._count = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            log.debug("http_connection_refused", client=str(client_address), open=MAX_CONNECTIONS)
            self.shutdown_request(request)
            return
        with self._count:
            self.open += 1
        try:
            self.pool.submit(self._serve, request, client_address)
        except RuntimeError:  # closing
            self._release(request)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: Any) -> None:
        self.shutdown_request(request)
        with self._count:
            self.open -= 1
        self.slots.release()

    def waiting(self) -> bool:
        """More connections admitted than threads to answer them: keep-alive should yield."""
        return self.open > HANDLERS

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("http_request_failed", client=str(client_address), exc_info=True)


class _MetricsHandler(BaseHTTPRequestHandler):
    server: _MetricsServer
    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS  # socket timeout: an idle (or slow) client is disconnected

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
        if self.server.waiting():
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
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
    """Serve ``checks`` (path → check) and the Prometheus registry on daemon threads (port 0: any).
    A port that cannot be opened is an ``OSError`` whose message names ``flag`` and host:port."""
    try:
        httpd = _MetricsServer((host, port), name)
    except OSError as exc:
        raise OSError(bind_error(flag, host, port, exc)) from None
    httpd.checks = checks
    thread = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    thread.start()
    return PortServer(httpd, thread)


__all__ = ["Check", "DaemonPool", "PortServer", "bind_error", "serve_port"]
