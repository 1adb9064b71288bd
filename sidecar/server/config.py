"""Server settings, with the defaults the deployment manifests assume."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.service.limits import ServiceLimits

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServerConfig:
    #: Loopback by default: the sidecar shares the scheduler pod's network namespace.
    host: str = "127.0.0.1"
    #: 0 picks a free port (tests). The scheduler uses 8080 (metrics) and 11251 (healthz).
    port: int = 50151
    #: Prometheus endpoint on its own port; -1 disables it.
    metrics_port: int = 9464
    #: Prometheus scrapes from outside the pod, so metrics listen on every address.
    metrics_host: str = "0.0.0.0"
    #: Largest request/response accepted; larger requests get INVALID_ARGUMENT.
    max_message_bytes: int = 64 * MIB
    #: RPCs in flight beyond this are shed with RESOURCE_EXHAUSTED.
    max_concurrent_rpcs: int = 16
    #: Worker threads for decoding and planning (the event loop only does I/O).
    workers: int = 4
    session_ttl_seconds: float = ServiceLimits.session_ttl_seconds
    max_sessions: int = ServiceLimits.max_sessions
    #: On SIGTERM: NOT_SERVING, then in-flight RPCs get this long to finish.
    shutdown_grace_seconds: float = 10.0
    keepalive_time_ms: int = 30_000
    keepalive_timeout_ms: int = 10_000
    #: Volcano extender-plugin HTTP intake (docs/extender.md); -1 (default) is off, 0 a free port.
    extender_port: int = -1
    extender_host: str = "127.0.0.1"
    #: predicate/prioritize answer within this (Volcano's extender.httpTimeout defaults to 1 s)
    extender_timeout_seconds: float = 0.9
    #: the ``latest`` session older than this is not used; the request's own nodes are read instead
    extender_max_age_seconds: float = 30.0
    max_nodes: int = ServiceLimits.max_nodes
    max_tasks: int = ServiceLimits.max_tasks

    def service_limits(self) -> ServiceLimits:
        """The service's share of the flags."""
        return ServiceLimits(
            max_nodes=self.max_nodes,
            max_tasks=self.max_tasks,
            session_ttl_seconds=self.session_ttl_seconds,
            max_sessions=self.max_sessions,
        )

    @property
    def transport_limit_bytes(self) -> int:
        """gRPC's own ceiling: above max_message_bytes so oversize requests reach our clear error."""
        return 2 * self.max_message_bytes + MIB

    def grpc_options(self) -> list[tuple[str, int]]:
        return [
            ("grpc.max_receive_message_length", self.transport_limit_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", self.keepalive_timeout_ms),
            ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.so_reuseport", 0),
        ]
