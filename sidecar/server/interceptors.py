"""Access log (structlog JSON) and RPC metrics for every unary call."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from sidecar.server import metrics

log = structlog.get_logger("sidecar.access")
#: answered OK, logged at debug: health checks come every few seconds (probes, the scheduler, grpcurl)
QUIET_METHODS = frozenset({"/grpc.health.v1.Health/Check"})
if TYPE_CHECKING:
    Handler = grpc.RpcMethodHandler[Any, Any]
else:
    Handler = grpc.RpcMethodHandler


class AccessLogInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming (health Watch, reflection) passes through
        method: str = handler_call_details.method
        behaviour: Any = handler.unary_unary

        async def logged(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            start = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                return await behaviour(request, context)
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
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
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
