"""The Repack gRPC front door: request bytes in, the service, response or status code out.

Handlers are registered by hand rather than through the generated ``add_RepackServicer_to_server``
so that request bytes pass through our own deserializer: an oversize or undecodable request
becomes INVALID_ARGUMENT with a sentence, instead of gRPC's generic RESOURCE_EXHAUSTED/INTERNAL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from google.protobuf.message import DecodeError, Message

from sidecar.api import richerrors
from sidecar.api.sessions import AGE_METADATA, LATEST
from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import InputError
from sidecar.server.config import ServerConfig
from sidecar.service import Deadline, DeadlineExceeded, NotFound, RepackService
from sidecar.service.limits import Overloaded

SERVICE_NAME = "volcano.repack.v1alpha1.Repack"
log = structlog.get_logger("sidecar.server")


@dataclass(frozen=True)
class Rejected:
    """A request that never became a message; the handler turns it into INVALID_ARGUMENT (the
    field: ``request``)."""

    reason: str


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


class CallDeadline(Deadline):
    """The caller's deadline, and also stops the work in its worker thread once the call is gone
    (the client cancelled, or the server stopped it at the end of ``--grace``)."""

    def __init__(self, remaining: float | None) -> None:
        super().__init__(remaining)
        self.cancelled = False

    def check(self, step: str) -> None:
        if self.cancelled:
            raise DeadlineExceeded(f"call cancelled; stopped after {step}")
        super().check(step)


def _rpc(
    work: Work, service: RepackService | None = None, pool: Executor | None = None
) -> Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Message]]:
    """Run the service off the event loop (on ``pool``) under the caller's deadline; map its errors
    to status codes. A request on the extender's session ``latest`` gets its age as trailing metadata."""

    async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if isinstance(request, Rejected):
            await _abort(context, richerrors.invalid_argument("request", request.reason, request.reason))
        deadline = CallDeadline(context.time_remaining())
        try:
            try:
                response = await asyncio.get_running_loop().run_in_executor(pool, work, request, deadline)
            except asyncio.CancelledError:
                deadline.cancelled = True  # the worker stops at its next check and frees its memory
                raise
            latest = service.session(LATEST) if service and getattr(request, "session_id", "") == LATEST else None
            if latest is not None:
                age = max(0.0, time.time() - latest.opened_at)
                context.set_trailing_metadata(((AGE_METADATA, f"{age:.3f}"),))
            return response
        except InputError as exc:
            await _abort(context, richerrors.invalid_argument(exc.field, exc.problem, str(exc)))
        except NotFound as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except Overloaded as exc:  # before DeadlineExceeded, its base
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except DeadlineExceeded as exc:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        except Exception:
            log.exception("rpc_failed")
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the sidecar log")
        raise AssertionError("unreachable: context.abort raises")

    return handle


async def _abort(context: grpc.aio.ServicerContext[Any, Any], status: grpc.Status) -> None:
    await context.abort(status.code, status.details, status.trailing_metadata)


def generic_handler(
    service: RepackService, config: ServerConfig, pool: Executor | None = None
) -> grpc.GenericRpcHandler:  # type: ignore[type-arg]
    """The Repack methods; their work runs on ``pool`` (None: the loop's default executor)."""
    methods: dict[str, tuple[type[Message], Work]] = {
        "Evaluate": (service_pb2.EvaluateRequest, service.evaluate),
        "Plan": (service_pb2.PlanRequest, service.plan),
        "Filter": (service_pb2.FilterRequest, service.filter),
        "Prioritize": (service_pb2.PrioritizeRequest, service.prioritize),
        "OpenSession": (service_pb2.OpenSessionRequest, service.open_session),
        "CloseSession": (service_pb2.CloseSessionRequest, service.close_session),
        "Pipeline": (service_pb2.PipelineRequest, service.pipeline),
        "Supplement": (service_pb2.SupplementRequest, service.supplement),
        "CheckPending": (service_pb2.CheckPendingRequest, service.check_pending),
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _rpc(work, service, pool),
            request_deserializer=_deserializer(req, config.max_message_bytes),
            response_serializer=lambda m: m.SerializeToString(),
        )
        for name, (req, work) in methods.items()
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)
