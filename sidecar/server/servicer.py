"""The Repack service: resolves the snapshot (inline or cached session) and calls the core.

Handlers are registered by hand rather than through the generated ``add_RepackServicer_to_server``
so that request bytes pass through our own deserializer: an oversize or undecodable request
becomes INVALID_ARGUMENT with a sentence, instead of gRPC's generic RESOURCE_EXHAUSTED/INTERNAL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
import structlog
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp

from sidecar.api.v1alpha1 import plan_pb2, service_pb2
from sidecar.repack.fragmentation import fragmentation, goal_resources
from sidecar.server import metrics
from sidecar.server.config import ServerConfig
from sidecar.server.sessions import SessionCache
from sidecar.snapshot.decode import Limits, decode
from sidecar.snapshot.errors import SnapshotError
from sidecar.snapshot.state import ClusterState

SERVICE_NAME = "volcano.repack.v1alpha1.Repack"
log = structlog.get_logger("sidecar.server")


@dataclass(frozen=True)
class Rejected:
    """A request that never became a message; the handler turns it into INVALID_ARGUMENT."""

    reason: str


class DeadlineExceeded(Exception):
    pass


class Deadline:
    """The caller's deadline, checked between the steps of long work running off the event loop."""

    def __init__(self, remaining: float | None) -> None:
        self._at = None if remaining is None else time.monotonic() + remaining

    def check(self, step: str) -> None:
        if self._at is not None and time.monotonic() > self._at:
            raise DeadlineExceeded(f"deadline exceeded after {step}")


class HasSource(Protocol):
    def WhichOneof(self, name: str) -> str | None: ...


class RepackService:
    def __init__(self, config: ServerConfig, sessions: SessionCache) -> None:
        self._config = config
        self._sessions = sessions
        self._limits = Limits(max_nodes=config.max_nodes, max_tasks=config.max_tasks)

    # -- snapshot resolution -------------------------------------------------------------

    def _decode(self, snapshot: Any, deadline: Deadline) -> ClusterState:
        deadline.check("receiving the snapshot")
        start = time.perf_counter()
        state = decode(snapshot, self._limits)
        metrics.DECODE_SECONDS.observe(time.perf_counter() - start)
        metrics.SNAPSHOT_NODES.set(state.n_nodes)
        metrics.SNAPSHOT_TASKS.set(state.n_tasks)
        deadline.check("decoding the snapshot")
        return state

    def _state(self, request: Any, deadline: Deadline) -> ClusterState:
        source = request.WhichOneof("source")
        if source == "snapshot":
            return self._decode(request.snapshot, deadline)
        if source == "session_id":
            session = self._sessions.get(request.session_id)
            if session is None:
                raise _NotFound(f'session_id: no open session "{request.session_id}" (expired or closed)')
            return session.state
        raise SnapshotError("source", "set either snapshot or session_id")

    # -- RPCs (run in worker threads) ----------------------------------------------------

    def evaluate(self, request: service_pb2.EvaluateRequest, deadline: Deadline) -> service_pb2.EvaluateResponse:
        state = self._state(request, deadline)
        names = list(request.resources)
        for i, name in enumerate(names):
            if not name:
                raise SnapshotError(f"resources[{i}]", "empty resource name")
            if name not in goal_resources(state):
                raise SnapshotError(f"resources[{i}]", f'no node provides scalar resource "{name}"')
        out = service_pb2.EvaluateResponse()
        for name in names or goal_resources(state):
            f = fragmentation(state, name)
            out.resources.append(
                plan_pb2.Fragmentation(
                    resource=f.resource,
                    providing_nodes=f.providing_nodes,
                    occupied_nodes=f.occupied_nodes,
                    min_occupied_nodes=f.min_occupied_nodes,
                    fragmentation_percent=f.percent,
                    min_exact=f.min_exact,
                    min_method=f.min_method,
                    allocated=f.allocated,
                    allocatable=f.allocatable,
                )
            )
            deadline.check(f"evaluating {name}")
        return out

    def open_session(
        self, request: service_pb2.OpenSessionRequest, deadline: Deadline
    ) -> service_pb2.OpenSessionResponse:
        if not request.HasField("snapshot"):
            raise SnapshotError("snapshot", "missing")
        if request.ttl_seconds < 0:
            raise SnapshotError("ttl_seconds", f"negative value {request.ttl_seconds}")
        state = self._decode(request.snapshot, deadline)
        session = self._sessions.open(state, float(request.ttl_seconds))
        metrics.SESSIONS.set(len(self._sessions))
        expires = Timestamp()
        expires.FromNanoseconds(int(session.expires_at * 1e9))
        return service_pb2.OpenSessionResponse(
            session_id=session.id, expires_at=expires, node_count=state.n_nodes, task_count=state.n_tasks
        )

    def close_session(
        self, request: service_pb2.CloseSessionRequest, deadline: Deadline
    ) -> service_pb2.CloseSessionResponse:
        if not request.session_id:
            raise SnapshotError("session_id", "missing")
        closed = self._sessions.close(request.session_id)
        metrics.SESSIONS.set(len(self._sessions))
        return service_pb2.CloseSessionResponse(closed=closed)


class _NotFound(Exception):
    pass


class _Unimplemented(Exception):
    pass


def _unimplemented(what: str, issue: str) -> Callable[[Any, Deadline], Message]:
    def handler(request: Any, deadline: Deadline) -> Message:
        raise _Unimplemented(f"{what} is not implemented yet; it lands with the {issue} (see README, 'Status')")

    return handler


def _deserializer(cls: type[Message], max_bytes: int) -> Callable[[bytes], Message | Rejected]:
    def parse(data: bytes) -> Message | Rejected:
        if len(data) > max_bytes:
            return Rejected(
                f"request is {len(data) / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit "
                "(--max-message-mib)"
            )
        try:
            return cls.FromString(data)
        except DecodeError as exc:
            return Rejected(f"request is not a valid {cls.DESCRIPTOR.full_name}: {exc}")

    return parse


Work = Callable[[Any, Deadline], Message]


def _rpc(config: ServerConfig, work: Work) -> Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Message]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if isinstance(request, Rejected):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)
        deadline = Deadline(context.time_remaining())
        try:
            return await asyncio.to_thread(work, request, deadline)
        except SnapshotError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except _NotFound as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except _Unimplemented as exc:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, str(exc))
        except DeadlineExceeded as exc:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        except Exception:
            log.exception("rpc_failed")
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the sidecar log")
        raise AssertionError("unreachable: context.abort raises")

    return handle


def generic_handler(service: RepackService, config: ServerConfig) -> grpc.GenericRpcHandler:  # type: ignore[type-arg]
    methods: dict[str, tuple[type[Message], Work]] = {
        "Evaluate": (service_pb2.EvaluateRequest, service.evaluate),
        "Plan": (service_pb2.PlanRequest, _unimplemented("Plan", "Repack planner issue")),
        "Filter": (service_pb2.FilterRequest, _unimplemented("Filter", "Mirror core issue")),
        "Prioritize": (service_pb2.PrioritizeRequest, _unimplemented("Prioritize", "Mirror core issue")),
        "OpenSession": (service_pb2.OpenSessionRequest, service.open_session),
        "CloseSession": (service_pb2.CloseSessionRequest, service.close_session),
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _rpc(config, work),
            request_deserializer=_deserializer(req, config.max_message_bytes),
            response_serializer=lambda m: m.SerializeToString(),
        )
        for name, (req, work) in methods.items()
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)
