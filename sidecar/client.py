"""A small synchronous client for the sidecar (CLI, demo, tests, the watcher through the CLI).

Every call carries its own deadline (``timeout``). A call that fails with UNAVAILABLE (the
sidecar restarting, a connection refused) is retried by gRPC itself under a service-config
retryPolicy, with exponential backoff, inside that same deadline; nothing else is retried, since
the other codes (INVALID_ARGUMENT, DEADLINE_EXCEEDED, ...) would answer the same again.
"""

from __future__ import annotations

import json
import math
from types import TracebackType

import grpc

from sidecar.api.sessions import AGE_METADATA, LATEST
from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc

MIB = 1024 * 1024
SERVICE = "volcano.repack.v1alpha1.Repack"


def client_options(max_message_bytes: int = 64 * MIB) -> list[tuple[str, int]]:
    """Channel options matching the server (gRPC's default 4 MiB is too small for snapshots)."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", 2 * max_message_bytes + MIB),
        ("grpc.keepalive_time_ms", 30_000),
    ]


def retry_policy(attempts: int = 4, initial_backoff: float = 0.2, max_backoff: float = 2.0) -> str:
    """The service config: every Repack method retried on UNAVAILABLE, ``attempts`` tries in all
    (gRPC waits a random time up to ``initial_backoff`` × 2^n, capped at ``max_backoff``)."""
    policy = {
        "maxAttempts": attempts,
        "initialBackoff": f"{initial_backoff}s",
        "maxBackoff": f"{max_backoff}s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    return json.dumps({"methodConfig": [{"name": [{"service": SERVICE}], "retryPolicy": policy}]})


class RepackClient:
    def __init__(
        self,
        target: str,
        *,
        timeout: float = 30.0,
        max_message_bytes: int = 64 * 2**20,
        attempts: int = 4,
    ) -> None:
        options: list[tuple[str, int | str]] = [*client_options(max_message_bytes)]
        if attempts > 1:
            options += [("grpc.enable_retries", 1), ("grpc.service_config", retry_policy(attempts))]
        self.channel = grpc.insecure_channel(target, options=options)
        self.stub = service_pb2_grpc.RepackStub(self.channel)  # type: ignore[no-untyped-call]
        self.timeout = timeout

    def evaluate(self, request: service_pb2.EvaluateRequest) -> service_pb2.EvaluateResponse:
        return self.stub.Evaluate(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse:
        return self.stub.Plan(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def plan_latest(self, request: service_pb2.PlanRequest) -> tuple[service_pb2.PlanResponse, float]:
        """Plan on the sidecar's session ``latest``; the answer and the age its trailer reports."""
        on_latest = service_pb2.PlanRequest(session_id=LATEST, spec=request.spec)
        response, call = self.stub.Plan.with_call(on_latest, timeout=self.timeout)
        trailers = dict(call.trailing_metadata() or ())
        try:
            age = float(trailers.get(AGE_METADATA, "inf"))
        except ValueError:
            age = math.inf
        return response, age

    def filter(self, request: service_pb2.FilterRequest) -> service_pb2.FilterResponse:
        return self.stub.Filter(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def prioritize(self, request: service_pb2.PrioritizeRequest) -> service_pb2.PrioritizeResponse:
        return self.stub.Prioritize(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def open_session(self, request: service_pb2.OpenSessionRequest) -> service_pb2.OpenSessionResponse:
        return self.stub.OpenSession(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def close_session(self, session_id: str) -> service_pb2.CloseSessionResponse:
        request = service_pb2.CloseSessionRequest(session_id=session_id)
        return self.stub.CloseSession(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def pipeline(self, request: service_pb2.PipelineRequest) -> service_pb2.PipelineResponse:
        return self.stub.Pipeline(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def check_pending(self, request: service_pb2.CheckPendingRequest) -> service_pb2.CheckPendingResponse:
        return self.stub.CheckPending(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def supplement(self, request: service_pb2.SupplementRequest) -> service_pb2.SupplementResponse:
        return self.stub.Supplement(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> RepackClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
