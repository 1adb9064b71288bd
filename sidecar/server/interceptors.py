"""Access log (structlog JSON), RPC metrics and the concurrency limit for every unary call.

The limit is ours rather than grpc's ``maximum_concurrent_rpcs``, because grpc's counts every
call alike: under a burst of Plans it shed the kubelet's and the scheduler's health checks, so a
busy sidecar looked dead and was restarted. Health and reflection are exempt here; every other
method is shed with RESOURCE_EXHAUSTED past ``--max-concurrent-rpcs`` (before its request is
parsed when the limit is already reached as the call arrives).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from sidecar.server import metrics

log = structlog.get_logger("sidecar.access")
#: answered OK, logged at debug: health checks come every few seconds (probes, the scheduler, grpcurl)
QUIET_METHODS = frozenset({"/grpc.health.v1.Health/Check"})
#: never shed: liveness/readiness must answer under any load; reflection is what grpcurl asks first
EXEMPT_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
if TYPE_CHECKING:
    Handler = grpc.RpcMethodHandler[Any, Any]
else:
    Handler = grpc.RpcMethodHandler


def exempt(method: str) -> bool:
    return method.startswith(EXEMPT_PREFIXES)


class AccessLogInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Logs and counts each unary call with its real status code; ``limit`` caps the calls in
    flight that are not ``exempt`` (None: no cap). Runs on the event loop, so the count needs no lock."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.in_flight = 0

    def _full(self) -> bool:
        return self.limit is not None and self.in_flight >= self.limit

    def _shed_message(self) -> str:
        return (
            f"{self.in_flight} RPCs in flight, the limit (--max-concurrent-rpcs {self.limit}); "
            "retry with backoff or raise it"
        )

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        method: str = handler_call_details.method
        limited = not exempt(method)
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming (health Watch, reflection) passes through
        behaviour: Any = handler.unary_unary
        shed_early = limited and self._full()
        # shed at once: the request bytes are not even parsed
        deserializer = None if shed_early else handler.request_deserializer

        async def logged(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            start = time.perf_counter()
            code = grpc.StatusCode.OK
            counted = False
            try:
                if limited:
                    if shed_early or self._full():
                        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self._shed_message())
                    self.in_flight += 1
                    counted = True
                return await behaviour(request, context)
            except asyncio.CancelledError:
                remaining = context.time_remaining()
                late = remaining is not None and remaining <= 0
                code = grpc.StatusCode.DEADLINE_EXCEEDED if late else grpc.StatusCode.CANCELLED
                raise
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                if counted:
                    self.in_flight -= 1
                elapsed = time.perf_counter() - start
                name = code.name if isinstance(code, grpc.StatusCode) else str(code)
                metrics.RPCS.labels(method=method, code=name).inc()
                metrics.RPC_SECONDS.labels(method=method).observe(elapsed)
                details = context.details() if code != grpc.StatusCode.OK else None
                emit = log.debug if method in QUIET_METHODS and code == grpc.StatusCode.OK else log.info
                emit(
                    "rpc",
                    method=method,
                    code=name,
                    ms=round(elapsed * 1000, 3),
                    peer=context.peer(),
                    **({"details": details} if details else {}),
                )

        return grpc.unary_unary_rpc_method_handler(
            logged,
            request_deserializer=deserializer,
            response_serializer=handler.response_serializer,
        )
