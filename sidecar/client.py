"""A small synchronous client for the sidecar (CLI, demo, tests)."""

from __future__ import annotations

from types import TracebackType

import grpc

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc

MIB = 1024 * 1024


def client_options(max_message_bytes: int = 64 * MIB) -> list[tuple[str, int]]:
    """Channel options matching the server (gRPC's default 4 MiB is too small for snapshots)."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", 2 * max_message_bytes + MIB),
        ("grpc.keepalive_time_ms", 30_000),
    ]


class RepackClient:
    def __init__(self, target: str, *, timeout: float = 30.0, max_message_bytes: int = 64 * 2**20) -> None:
        self.channel = grpc.insecure_channel(target, options=client_options(max_message_bytes))
        self.stub = service_pb2_grpc.RepackStub(self.channel)  # type: ignore[no-untyped-call]
        self.timeout = timeout

    def evaluate(self, request: service_pb2.EvaluateRequest) -> service_pb2.EvaluateResponse:
        return self.stub.Evaluate(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse:
        return self.stub.Plan(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def open_session(self, request: service_pb2.OpenSessionRequest) -> service_pb2.OpenSessionResponse:
        return self.stub.OpenSession(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def close_session(self, session_id: str) -> service_pb2.CloseSessionResponse:
        request = service_pb2.CloseSessionRequest(session_id=session_id)
        return self.stub.CloseSession(request, timeout=self.timeout)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> RepackClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
