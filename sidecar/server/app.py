"""Build and run the sidecar's gRPC server: Repack + health + reflection, drained on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sidecar.dispatch import kernels_built
from sidecar.metricsport import bind_error
from sidecar.server import metrics
from sidecar.server.config import ServerConfig
from sidecar.server.extender import ExtenderServer
from sidecar.server.interceptors import AccessLogInterceptor
from sidecar.server.servicer import SERVICE_NAME, generic_handler
from sidecar.service import RepackService

log = structlog.get_logger("sidecar.server")


@dataclass
class RunningServer:
    server: grpc.aio.Server
    health: Any  # grpc_health.v1.health.aio.HealthServicer (untyped)
    port: int
    config: ServerConfig
    service: RepackService | None = None
    extender: ExtenderServer | None = None

    async def drain(self) -> None:
        """NOT_SERVING first (so the scheduler stops sending), then let in-flight RPCs finish."""
        log.info("draining", grace_seconds=self.config.shutdown_grace_seconds)
        await self.health.enter_graceful_shutdown()
        if self.extender is not None:
            self.extender.stop()
        await self.server.stop(self.config.shutdown_grace_seconds)
        log.info("stopped")


async def start(config: ServerConfig) -> RunningServer:
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="repack")
    )
    server = grpc.aio.server(
        interceptors=[AccessLogInterceptor()],
        options=config.grpc_options(),
        maximum_concurrent_rpcs=config.max_concurrent_rpcs,
    )
    service = RepackService(config.service_limits(), observer=metrics.PrometheusObserver())
    server.add_generic_rpc_handlers((generic_handler(service, config),))

    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        port = server.add_insecure_port(f"{config.host}:{config.port}")
    except RuntimeError:  # grpc's "Failed to bind to address ...; set GRPC_VERBOSITY=debug ..."
        port = 0
    if port == 0:
        raise OSError(bind_error("--port", config.host, config.port, "address in use or not available"))
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    metrics.KERNELS.set(1 if kernels_built() else 0)
    log.info("serving", address=f"{config.host}:{port}", kernels="cython" if kernels_built() else "python")
    extender = None
    if config.extender_port >= 0:
        try:
            extender = ExtenderServer(
                service,
                config.extender_host,
                config.extender_port,
                timeout=config.extender_timeout_seconds,
                max_age=config.extender_max_age_seconds,
                max_body=config.transport_limit_bytes * 8,
            )
        except OSError as exc:
            await server.stop(None)
            raise OSError(bind_error("--extender-port", config.extender_host, config.extender_port, exc)) from None
    return RunningServer(server, health_servicer, port, config, service, extender)


async def serve(config: ServerConfig) -> None:
    """Run until SIGTERM/SIGINT, then drain and return."""
    probes = metrics.Probes()  # /healthz, /readyz beside /metrics: not through gRPC, not under its RPC limit
    if config.metrics_port >= 0:
        bound = metrics.serve_metrics(config.metrics_port, config.metrics_host, probes)
        log.info("metrics", address=f"{config.metrics_host}:{bound}")
    running = await start(config)
    probes.attach(asyncio.get_running_loop(), running.health)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("signal_received")
    await running.drain()
