"""HTTP front door for Volcano's ``extender`` plugin (pkg/scheduler/plugins/extender).

A stock scheduler configured with ``extender.urlPrefix: http://127.0.0.1:<port>`` POSTs JSON to
``<urlPrefix>/<verb>``. ``onSessionOpen`` is answered 200 at once; its body goes to ONE decoder
thread that keeps only the newest pending body (older ones are dropped and counted), decodes it
(``sidecar.snapshot.volcano``) and publishes it as the service session ``latest``. ``predicate``
and ``prioritize`` answer from the mirror on that session when it is fresh and holds the task
and nodes, otherwise from the request's own task and nodes; each within the verb's timeout.
Status codes are Volcano's (pkg/scheduler/api/types.go): 0 Success, 1 Error, 2 Unschedulable,
3 UnschedulableAndUnresolvable. Bad input (invalid JSON, ``NaN``/``Infinity`` included) answers
HTTP 400 naming the JSON path, a missed deadline 503: with ``extender.ignorable: true`` Volcano then
ignores the extender for that call. Every answer carries ``X-Repack-Session-Age`` (seconds since
``latest`` was published; absent while there is none) and predicate/prioritize answers
``X-Repack-Source`` (``latest`` or ``request``: which objects the answer was computed on); the
JSON bodies keep Volcano's shape, plus a ``warnings`` list (which Volcano's client does not read)
when the snapshot answered on has dangling references (``sidecar.snapshot.decode``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import structlog

from sidecar.api.sessions import LATEST
from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import InputError
from sidecar.server import metrics
from sidecar.server.httpbody import BadRequest, read_body
from sidecar.server.jsonerrors import named
from sidecar.service import Deadline, DeadlineExceeded, RepackService
from sidecar.snapshot.volcano import check_names, decode_check, snapshot_from_session

log = structlog.get_logger("sidecar.extender")

SESSION = LATEST  # the session every onSessionOpen replaces
#: Volcano's status codes (pkg/scheduler/api/types.go): what ``predicate`` answers in ``code``
SUCCESS, ERROR, UNSCHEDULABLE, UNRESOLVABLE = 0, 1, 2, 3
#: the contract's FailureCode → Volcano's code (the contract numbers them from 1, Volcano from 2)
VOLCANO_CODE = {
    service_pb2.UNSCHEDULABLE: UNSCHEDULABLE,
    service_pb2.UNSCHEDULABLE_AND_UNRESOLVABLE: UNRESOLVABLE,
}
#: the other verbs Volcano's extender plugin can be configured with (argument.go), answered in their
#: types with the vote that changes nothing — the sidecar has no opinion on them: (the key the body
#: must carry, the answer). preemptable/reclaimable/jobEnqueueable: Abstain (0); queueOverused: not
#: overused; jobReady: no objection (Volcano ANDs the plugins' votes); allocateFunc/deallocateFunc:
#: no error — ``latest`` is not changed, so a later predicate of the same cycle does not see the
#: allocation; Volcano's own predicates (which do) run beside this one, so a pass here refuses nothing.
NEUTRAL: dict[str, tuple[str, dict[str, Any]]] = {
    "preemptable": ("evictor", {"status": 0, "victims": None}),
    "reclaimable": ("evictor", {"status": 0, "victims": None}),
    "jobEnqueueable": ("job", {"status": 0}),
    "queueOverused": ("queue", {"overused": False}),
    "jobReady": ("job", {"status": True}),
    "allocateFunc": ("task", {"errorMessage": ""}),
    "deallocateFunc": ("task", {"errorMessage": ""}),
}
VERBS = frozenset({"onSessionOpen", "onSessionClose", "predicate", "prioritize", *NEUTRAL})
#: bytes per second ``decode_check`` is assumed to reach before it has been measured in this process
#: (2 cores, a 1,000-node prioritize body); the measured rate replaces it (moving average)
DECODE_RATE = 50e6
AGE_HEADER, SOURCE_HEADER = "X-Repack-Session-Age", "X-Repack-Source"


@dataclass
class IntakeStats:
    received: int = 0
    dropped: int = 0  # superseded by a newer body before decoding started
    published: int = 0
    failed: int = 0
    last_error: str = ""
    #: seconds from the newest published body's arrival to its session being usable
    last_usable_seconds: float = 0.0
    last_decode_seconds: float = 0.0
    #: the newest published session's warnings (dangling references, ClusterState.warnings)
    last_warnings: list[str] = field(default_factory=list)
    verb_seconds: dict[str, float] = field(default_factory=dict)


class SessionIntake:
    """The single decoder thread with a one-slot mailbox: newest body wins."""

    def __init__(self, service: RepackService, name: str = SESSION, ttl: float = 0.0) -> None:
        self.service, self.name, self.ttl = service, name, ttl
        self.stats = IntakeStats()
        self._cond = threading.Condition()
        self._pending: tuple[bytes, float] | None = None
        self._busy = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="extender-decoder", daemon=True)
        self._thread.start()

    def submit(self, body: bytes, arrived: float | None = None) -> None:
        with self._cond:
            self.stats.received += 1
            if self._pending is not None:
                self.stats.dropped += 1
                metrics.EXTENDER_SESSIONS.labels(result="dropped").inc()
            self._pending = (body, time.monotonic() if arrived is None else arrived)
            self._cond.notify()

    def idle(self, timeout: float) -> bool:
        """Wait until nothing is pending or being decoded (tests, benchmarks)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stopped)
                if self._stopped:
                    return
                assert self._pending is not None
                (body, arrived), self._pending = self._pending, None
                self._busy = True
            try:
                start = time.monotonic()
                try:
                    snap = snapshot_from_session(body)
                except InputError as exc:
                    raise named(exc, body) from None
                del body
                session = self.service.publish(self.name, snap, Deadline.none(), self.ttl)
                done = time.monotonic()
                self.stats.published += 1
                self.stats.last_decode_seconds = done - start
                self.stats.last_usable_seconds = done - arrived
                metrics.EXTENDER_SESSIONS.labels(result="published").inc()
                metrics.EXTENDER_DECODE_SECONDS.observe(done - start)
                warnings, self.stats.last_warnings = self.stats.last_warnings, list(session.state.warnings)
                log.info(
                    "session_published",
                    session=self.name,
                    nodes=session.state.n_nodes,
                    tasks=session.state.n_tasks,
                    usable_seconds=round(done - arrived, 3),
                    dropped=self.stats.dropped,
                )
                if self.stats.last_warnings != warnings:  # each session repeats them: said when they change
                    for warning in self.stats.last_warnings:
                        log.warning("session_warning", session=self.name, warning=warning)
            except Exception as exc:  # a bad body must not kill the decoder
                self.stats.failed += 1
                self.stats.last_error = str(exc)
                metrics.EXTENDER_SESSIONS.labels(result="failed").inc()
                log.warning("session_rejected", error=str(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


Answer = tuple[int, dict[str, Any], dict[str, str]]


class Extender:
    """The verbs, transport-free apart from bytes in and (status, JSON, headers) out."""

    def __init__(self, service: RepackService, timeout: float = 1.0, max_age: float = 30.0) -> None:
        self.service, self.timeout, self.max_age = service, timeout, max_age
        self.decode_rate = DECODE_RATE
        self.intake = SessionIntake(service)

    def session_age(self) -> float | None:
        """Seconds since ``latest`` was published, or None while there is none."""
        return self.service.session_age(self.intake.name)

    def fresh_session(self) -> str | None:
        session = self.service.session(self.intake.name)
        if session is None or time.time() - session.opened_at > self.max_age:
            return None
        return session.id

    def handle(self, verb: str, body: bytes, arrived: float | None = None) -> Answer:
        """The answer to one call; ``arrived`` (monotonic) is when its headers came in: the verb's
        timeout counts from there, reading the body included."""
        start = time.monotonic() if arrived is None else arrived
        headers: dict[str, str] = {}
        code = 500
        try:
            deadline = Deadline(self.timeout - (time.monotonic() - start))
            deadline.check("reading the request body")
            code, payload = self._verb(verb, body, headers, deadline)
            return code, payload, headers
        except InputError as exc:
            exc = named(exc, body)
            code = 400
            return code, {"status": str(exc), "code": ERROR, "errorMessage": str(exc)}, headers
        except DeadlineExceeded as exc:
            code = 503
            return code, {"status": str(exc), "code": ERROR, "errorMessage": str(exc)}, headers
        except Exception as exc:  # a bug must still answer: Volcano reads a dropped connection as a fit error
            log.exception("extender verb failed", verb=verb)
            code = 500
            why = f"internal error: {type(exc).__name__}: {exc}"
            return code, {"status": why, "code": ERROR, "errorMessage": why}, headers
        finally:
            age = self.session_age()
            if age is not None:
                headers[AGE_HEADER] = f"{age:.3f}"
            elapsed = time.monotonic() - start
            label = verb if verb in VERBS else "unknown"
            self.intake.stats.verb_seconds[label] = elapsed
            metrics.EXTENDER_REQUESTS.labels(verb=label, code=str(code)).inc()
            metrics.EXTENDER_SECONDS.labels(verb=label).observe(elapsed)

    def _verb(self, verb: str, body: bytes, headers: dict[str, str], deadline: Deadline) -> tuple[int, dict[str, Any]]:
        if verb == "onSessionOpen":
            self.intake.submit(body, time.monotonic())
            return 200, {}
        if verb == "onSessionClose":
            return 200, {}
        if verb == "predicate":
            return 200, self.predicate(body, deadline, headers)
        if verb == "prioritize":
            return 200, self.prioritize(body, deadline, headers)
        if verb in NEUTRAL:
            key, answer = NEUTRAL[verb]
            try:
                doc = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise InputError("$", f"not JSON: {exc}") from None
            if not isinstance(doc, dict):
                raise InputError("$", "must be a JSON object")
            if not isinstance(doc.get(key), dict):
                raise InputError(f"$.{key}", "missing" if doc.get(key) is None else "must be an object")
            return 200, dict(answer)
        return 404, {"status": f"unknown verb {verb!r}", "code": ERROR}

    def _check(self, body: bytes, deadline: Deadline, score: bool, headers: dict[str, str]) -> tuple[Any, list[str]]:
        """Filter/Prioritize through the service: the session when it knows the task and nodes."""
        try:
            uid, names = check_names(body)  # the task checked as the request path checks it
        except InputError:
            uid, names = "", []  # answered by the request path below, with the error it finds first
        sid = self.fresh_session()
        if sid is not None and uid:
            try:
                if score:
                    req: Any = service_pb2.PrioritizeRequest(session_id=sid, task_uid=uid, nodes=names)
                    resp: Any = self.service.prioritize(req, deadline)
                else:
                    freq = service_pb2.FilterRequest(session_id=sid, task_uid=uid, nodes=names)
                    resp = self.service.filter(freq, deadline)
                headers[SOURCE_HEADER] = "latest"
                return resp, names
            except InputError:
                pass  # the session does not hold this task or node: read the request instead
        self._can_decode(len(body), deadline)
        started = time.monotonic()
        snap, uid, names = decode_check(body)
        self._decoded(len(body), time.monotonic() - started)
        deadline.check("decoding the request")
        headers[SOURCE_HEADER] = "request"
        if score:
            preq = service_pb2.PrioritizeRequest(snapshot=snap, task_uid=uid, nodes=names)
            return self.service.prioritize(preq, deadline), names
        return self.service.filter(service_pb2.FilterRequest(snapshot=snap, task_uid=uid, nodes=names), deadline), names

    def _can_decode(self, size: int, deadline: Deadline) -> None:
        """A body that cannot be decoded in the time left is refused at once (503), not after the
        caller gave up: Volcano's client waits ``extender.httpTimeout`` (1 s by default)."""
        left = deadline.remaining()
        if left is not None and size / self.decode_rate > left:
            raise DeadlineExceeded(
                f"a {size / 1e6:.1f} MB body takes ~{size / self.decode_rate:.2f} s to decode "
                f"(at {self.decode_rate / 1e6:.0f} MB/s); {left:.2f} s of the deadline left"
            )

    def _decoded(self, size: int, seconds: float) -> None:
        if size >= 1 << 16 and seconds > 0:  # small bodies say more about overhead than about rate
            self.decode_rate = 0.7 * self.decode_rate + 0.3 * (size / seconds)

    def predicate(self, body: bytes, deadline: Deadline, headers: dict[str, str] | None = None) -> dict[str, Any]:
        resp, names = self._check(body, deadline, False, {} if headers is None else headers)
        if not names:
            raise InputError("$.node", "missing")
        answer: dict[str, Any] = {"status": resp.message or "node(s) didn't fit", "code": UNSCHEDULABLE}
        if names[0] in resp.feasible_nodes:
            answer = {"status": "", "code": SUCCESS}
        for failure in resp.failures:
            if names[0] in failure.nodes:
                answer = {"status": ", ".join(failure.reasons), "code": VOLCANO_CODE.get(failure.code, UNSCHEDULABLE)}
                break
        return _with_warnings(answer, resp.warnings)

    def prioritize(self, body: bytes, deadline: Deadline, headers: dict[str, str] | None = None) -> dict[str, Any]:
        resp, names = self._check(body, deadline, True, {} if headers is None else headers)
        scores = {n: 0.0 for n in names}
        scores.update({s.node: s.score for s in resp.scores})
        return _with_warnings({"nodeScore": scores, "errorMessage": ""}, resp.warnings)

    def stop(self) -> None:
        self.intake.stop()


def _with_warnings(answer: dict[str, Any], warnings: Sequence[str]) -> dict[str, Any]:
    """A ``warnings`` key when there are any: Volcano's extender client ignores keys it does not
    know, an operator reading the answer sees why a node or a task was counted on none."""
    if warnings:
        answer["warnings"] = list(warnings)
    return answer


class _IntakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # Go's client keeps connections alive
    #: seconds a connection may stay silent (a body shorter than announced ends here)
    timeout = 30.0
    server: _IntakeServer

    def do_POST(self) -> None:
        arrived = time.monotonic()
        try:
            body = read_body(self.headers, self.rfile, self.server.max_body)
        except BadRequest as exc:
            self.close_connection = True  # what follows on this connection cannot be framed
            self._answer(exc.status, {"status": str(exc), "code": ERROR}, {"Connection": "close"})
            return
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        self._answer(*self.server.extender.handle(verb, body, arrived))

    def _answer(self, code: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        out = orjson.dumps(payload)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("extender_http", request=format % args)


class _IntakeServer(ThreadingHTTPServer):
    daemon_threads = True
    extender: Extender
    max_body: int

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is routine: a debug line, not a traceback on stderr."""
        log.debug("http_request_failed", client=str(client_address), exc_info=True)


class ExtenderServer:
    """The HTTP server on its own thread; ``port`` is the bound port."""

    def __init__(
        self,
        service: RepackService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        timeout: float = 1.0,
        max_age: float = 30.0,
        max_body: int = 1 << 30,
    ) -> None:
        self.extender = Extender(service, timeout, max_age)
        self.httpd = _IntakeServer((host, port), _IntakeHandler)
        self.httpd.extender, self.httpd.max_body = self.extender, max_body
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="extender-http", daemon=True)
        self.thread.start()
        log.info("extender", address=f"{host}:{self.port}", session=SESSION)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.extender.stop()
