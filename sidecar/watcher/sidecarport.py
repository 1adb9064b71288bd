"""The sidecar port: what the watcher asks of the sidecar (plans, checks, sessions), whichever way
the sidecar is reached.

``sidecar.client.RepackClient`` satisfies ``Sidecar`` over gRPC; ``InProcessSidecar`` calls the
service in this process with the deadline a gRPC call would carry. The watcher may not import the
client (layers), so the CLI injects it. Errors a call raises are the transport's: classify them
with ``planner_error``.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import grpc

from sidecar.api import richerrors
from sidecar.api.repackrun import Reason
from sidecar.api.sessions import LATEST
from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import InputError
from sidecar.service import Deadline, DeadlineExceeded, NotFound, RepackService

#: what a planner call may raise: bad input, transport failures, the service's deadline, a lost session
PLANNER_ERRORS: tuple[type[Exception], ...] = (InputError, grpc.RpcError, DeadlineExceeded, NotFound)


class Sidecar(Protocol):
    """Plan, Evaluate, Filter, Prioritize, sessions (open, close, Pipeline), Supplement and CheckPending on contract
    messages (``RepackService``'s signatures without the deadline: each implementation brings its own)."""

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse: ...

    def plan_latest(self, request: service_pb2.PlanRequest) -> tuple[service_pb2.PlanResponse, float]:
        """Plan on the session ``latest`` (``request``'s source is replaced); the answer and that
        session's age in seconds (``math.inf`` when unknown). No ``latest``: NotFound / NOT_FOUND."""
        ...

    def evaluate(self, request: service_pb2.EvaluateRequest) -> service_pb2.EvaluateResponse: ...

    def filter(self, request: service_pb2.FilterRequest) -> service_pb2.FilterResponse: ...

    def prioritize(self, request: service_pb2.PrioritizeRequest) -> service_pb2.PrioritizeResponse: ...

    def open_session(self, request: service_pb2.OpenSessionRequest) -> service_pb2.OpenSessionResponse: ...

    def close_session(self, session_id: str) -> service_pb2.CloseSessionResponse: ...

    def pipeline(self, request: service_pb2.PipelineRequest) -> service_pb2.PipelineResponse: ...

    def supplement(self, request: service_pb2.SupplementRequest) -> service_pb2.SupplementResponse: ...

    def check_pending(self, request: service_pb2.CheckPendingRequest) -> service_pb2.CheckPendingResponse: ...


class InProcessSidecar:
    """The service in this process (no sidecar), each call bounded by ``timeout`` seconds."""

    def __init__(self, service: RepackService | None = None, *, timeout: float = 30.0) -> None:
        self._service = service or RepackService()
        self._timeout = timeout

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse:
        return self._service.plan(request, Deadline(self._timeout))

    def plan_latest(self, request: service_pb2.PlanRequest) -> tuple[service_pb2.PlanResponse, float]:
        # the age read before planning: a session re-published meanwhile is younger, never older
        session = self._service.session(LATEST)
        age = time.time() - session.opened_at if session is not None else math.inf
        on_latest = service_pb2.PlanRequest(session_id=LATEST, spec=request.spec)
        return self._service.plan(on_latest, Deadline(self._timeout)), max(0.0, age)

    def evaluate(self, request: service_pb2.EvaluateRequest) -> service_pb2.EvaluateResponse:
        return self._service.evaluate(request, Deadline(self._timeout))

    def filter(self, request: service_pb2.FilterRequest) -> service_pb2.FilterResponse:
        return self._service.filter(request, Deadline(self._timeout))

    def prioritize(self, request: service_pb2.PrioritizeRequest) -> service_pb2.PrioritizeResponse:
        return self._service.prioritize(request, Deadline(self._timeout))

    def open_session(self, request: service_pb2.OpenSessionRequest) -> service_pb2.OpenSessionResponse:
        return self._service.open_session(request, Deadline(self._timeout))

    def close_session(self, session_id: str) -> service_pb2.CloseSessionResponse:
        request = service_pb2.CloseSessionRequest(session_id=session_id)
        return self._service.close_session(request, Deadline(self._timeout))

    def pipeline(self, request: service_pb2.PipelineRequest) -> service_pb2.PipelineResponse:
        return self._service.pipeline(request, Deadline(self._timeout))

    def supplement(self, request: service_pb2.SupplementRequest) -> service_pb2.SupplementResponse:
        return self._service.supplement(request, Deadline(self._timeout))

    def check_pending(self, request: service_pb2.CheckPendingRequest) -> service_pb2.CheckPendingResponse:
        return self._service.check_pending(request, Deadline(self._timeout))


def from_rpc(exc: grpc.RpcError) -> InputError | None:
    """The sidecar answers an InputError as INVALID_ARGUMENT naming the field in a
    google.rpc.BadRequest (sidecar/api/richerrors.py); the error again, or None for other codes.
    An INVALID_ARGUMENT without one (not from the sidecar's service: a proxy, a gRPC library)
    is charged to the request as a whole."""
    if not isinstance(exc, grpc.Call) or exc.code() != grpc.StatusCode.INVALID_ARGUMENT:
        return None
    violation = richerrors.field_violation(exc)
    if violation is None:
        return InputError("request", exc.details() or "INVALID_ARGUMENT")
    return InputError(*violation)


def planner_error(exc: Exception) -> tuple[str, str]:
    """(reason, message) for a failed planner call: ``InvalidSpec`` for bad input (the spec or the
    snapshot), ``PlannerUnavailable`` for everything else (down, slow, session lost)."""
    if isinstance(exc, InputError):
        return Reason.INVALID_SPEC, str(exc)
    if isinstance(exc, grpc.RpcError):
        bad = from_rpc(exc)
        if bad is not None:
            return Reason.INVALID_SPEC, str(bad)
        if isinstance(exc, grpc.Call):
            return Reason.PLANNER_UNAVAILABLE, f"the sidecar did not answer: {exc.code().name}: {exc.details()}"
        return Reason.PLANNER_UNAVAILABLE, f"the sidecar did not answer: {exc}"
    if isinstance(exc, DeadlineExceeded):
        return Reason.PLANNER_UNAVAILABLE, f"planning timed out: {exc}"
    return Reason.PLANNER_UNAVAILABLE, f"{type(exc).__name__}: {exc}"
