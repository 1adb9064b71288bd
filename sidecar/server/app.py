"""Build and run the sidecar's gRPC server: Repack + health + reflection, drained on SIGTERM.

Exit is bounded by ``--grace``: the planner runs on daemon worker threads that nobody joins, and
calls still running when the grace ends are cancelled (their workers stop at the next deadline
check), so a long Plan cannot keep the pod in Terminating until the kubelet's SIGKILL. Such a
worker may still be inside numpy when ``serve`` returns, so ``repack-sidecar serve`` then ends
the process without interpreter finalization (``cmd_serve``): finalizing would kill that thread
from inside numpy's C++ code and abort the drained process (exit -6).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import weakref
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sidecar.dispatch import kernels_built
from sidecar.metricsport import DaemonPool, bind_error
from sidecar.server import metrics
from sidecar.server.config import ServerConfig
from sidecar.server.extender import ExtenderServer
from sidecar.server.interceptors import AccessLogInterceptor
from sidecar.server.servicer import SERVICE_NAME, generic_handler
from sidecar.service import RepackService

log = structlog.get_logger("sidecar.server")


def sweep_interval(ttl: float) -> float:
    """How often expired sessions are dropped: a quarter of the TTL, between 0.05 s and 5 s."""
    return min(5.0, max(0.05, ttl / 4))


@dataclass
class RunningServer:
    server: grpc.aio.Server
    health: Any  # grpc_health.v1.health.aio.HealthServicer (untyped)
    port: int
    config: ServerConfig
    service: RepackService | None = None
    extender: ExtenderServer | None = None
    pool: DaemonPool | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def drain(self) -> None:
        """NOT_SERVING first (so the scheduler stops sending), then let in-flight RPCs finish
        within the grace; what is still running then is cancelled and not waited for."""
        log.info("draining", grace_seconds=self.config.shutdown_grace_seconds)
        await self.health.enter_graceful_shutdown()
        if self.extender is not None:
            self.extender.stop()
        await self.server.stop(self.config.shutdown_grace_seconds)
        await self.close()
        log.info("stopped")

    async def close(self) -> None:
        """Stop the background tasks and release the worker threads (without joining them)."""
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks.clear()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


async def _sweep_sessions(service: RepackService, every: float) -> None:
    """Expired sessions are dropped on a timer, not on the next session call: their memory goes
    back and ``repack_sessions`` falls while nobody calls."""
    while True:
        await asyncio.sleep(every)
        try:
            service.sweep_sessions()
        except Exception as exc:  # the sweep must never end: log and try again next time
            log.warning("session sweep failed", error=f"{type(exc).__name__}: {exc}")


async def start(config: ServerConfig, probes: metrics.Probes | None = None) -> RunningServer:
    """The gRPC server (and the extender intake) started; ``probes`` answer ready from the moment
    the "serving" line is logged, not after it."""
    pool = DaemonPool(config.workers, "repack")
    server = grpc.aio.server(
        interceptors=[AccessLogInterceptor(limit=config.max_concurrent_rpcs)],
        options=config.grpc_options(),
    )
    service = RepackService(config.service_limits(), observer=metrics.PrometheusObserver())
    # the age of `latest`, whichever door published it (the scheduler plugin or the extender);
    # a weak reference: a stopped server's service is not kept alive by the metric
    ref = weakref.ref(service)
    metrics.track_session_age(lambda: (lambda s: s.session_age() if s is not None else None)(ref()))
    server.add_generic_rpc_handlers((generic_handler(service, config, pool),))

    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        port = server.add_insecure_port(f"{config.host}:{config.port}")
    except RuntimeError:  # grpc's "Failed to bind to address ...; set GRPC_VERBOSITY=debug ..."
        port = 0
    if port == 0:
        pool.shutdown(wait=False)
        raise OSError(bind_error("--port", config.host, config.port, "address in use or not available"))
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    metrics.KERNELS.set(1 if kernels_built() else 0)
    metrics.MEMORY_BUDGET.set_function(lambda: service.memory_budget()[1])
    metrics.MEMORY_ADMITTED.set_function(lambda: service.memory_budget()[0])
    if probes is not None:
        probes.attach(asyncio.get_running_loop(), health_servicer)
    log.info("serving", address=f"{config.host}:{port}", kernels="cython" if kernels_built() else "python")
    running = RunningServer(server, health_servicer, port, config, service, pool=pool)
    if config.extender_port >= 0:
        try:
            running.extender = ExtenderServer(
                service,
                config.extender_host,
                config.extender_port,
                timeout=config.extender_timeout_seconds,
                max_age=config.extender_max_age_seconds,
                max_body=config.transport_limit_bytes * 8,
            )
        except OSError as exc:
            await server.stop(None)
            await running.close()
            raise OSError(bind_error("--extender-port", config.extender_host, config.extender_port, exc)) from None
    running.tasks.append(asyncio.create_task(_sweep_sessions(service, sweep_interval(config.session_ttl_seconds))))
    return running


async def serve(config: ServerConfig) -> None:
    """Run until SIGTERM/SIGINT, then drain and return (within ``--grace`` and a moment); worker
    threads still inside work the grace cut short are left running (the caller ends the process)."""
    # before anything is logged: a SIGTERM right after "serving" drains too, instead of killing the process
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    probes = metrics.Probes()  # /healthz, /readyz beside /metrics: not through gRPC, not under its RPC limit
    port = None
    if config.metrics_port >= 0:
        port = metrics.start_metrics_server(config.metrics_port, config.metrics_host, probes)
        log.info("metrics", address=f"{config.metrics_host}:{port.port}")
    try:
        running = await start(config, probes)
    except BaseException:
        if port is not None:
            port.close()
        raise
    await stop.wait()
    log.info("signal_received")
    await running.drain()
