"""Server settings, with the defaults the deployment manifests assume.

Every value is checked where the config is built, so a bad flag is one line naming it
(``InputError("--session-ttl", ...)``) instead of a server that starts and misbehaves later
(a NaN TTL would make every session immortal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from sidecar.errors import InputError
from sidecar.service.limits import ServiceLimits

MIB = 1024 * 1024
#: gRPC's message limits are int32; the transport limit is 2 x max_message_bytes + 1 MiB
MAX_MESSAGE_MIB = 1023

#: the ``serve`` flag behind each field (fields without a flag are named as they are)
FLAGS = {
    "host": "--host",
    "port": "--port",
    "metrics_port": "--metrics-port",
    "metrics_host": "--metrics-host",
    "max_message_bytes": "--max-message-mib",
    "max_concurrent_rpcs": "--max-concurrent-rpcs",
    "workers": "--workers",
    "session_ttl_seconds": "--session-ttl",
    "max_sessions": "--max-sessions",
    "shutdown_grace_seconds": "--grace",
    "extender_port": "--extender-port",
    "extender_host": "--extender-host",
    "extender_timeout_seconds": "--extender-timeout",
    "memory_budget_mib": "--memory-budget-mib",
}


def flag(name: str) -> str:
    return FLAGS.get(name, name)


def message_bytes_from_mib(mib: float) -> int:
    """``--max-message-mib`` as bytes; NaN, infinity and sizes gRPC cannot carry are refused here."""
    if not isinstance(mib, (int, float)) or not math.isfinite(mib) or not 0 < mib <= MAX_MESSAGE_MIB:
        raise InputError("--max-message-mib", f"must be a number of MiB in (0, {MAX_MESSAGE_MIB}], got {mib}")
    return int(mib * MIB)


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
    #: Repack RPCs in flight beyond this are shed with RESOURCE_EXHAUSTED (health checks never are).
    max_concurrent_rpcs: int = 16
    #: Worker threads for decoding and planning (the event loop only does I/O).
    workers: int = 4
    session_ttl_seconds: float = ServiceLimits.session_ttl_seconds
    max_sessions: int = ServiceLimits.max_sessions
    #: On SIGTERM: NOT_SERVING, then in-flight RPCs get this long to finish; the process exits after.
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
    #: Estimated working memory of the requests decoded or planned at once (docs/operations.md).
    memory_budget_mib: float = 1024.0
    #: A request that does not fit the budget yet waits this long (within its deadline) for it.
    admission_wait_seconds: float = ServiceLimits.admission_wait_seconds

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("str", str):
                if not isinstance(value, str) or not value:
                    raise InputError(flag(f.name), f"must be a non-empty address, got {value!r}")
            elif f.type in ("int", int):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise InputError(flag(f.name), f"must be a whole number, got {value!r}")
            elif not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise InputError(flag(f.name), f"must be a finite number, got {value!r}")
        self._check_ports()
        positive = ("max_concurrent_rpcs", "workers", "max_sessions", "max_nodes", "max_tasks")
        for name in (*positive, "keepalive_time_ms", "keepalive_timeout_ms"):
            if getattr(self, name) < 1:
                raise InputError(flag(name), f"must be at least 1, got {getattr(self, name)}")
        for name in ("session_ttl_seconds", "extender_timeout_seconds", "extender_max_age_seconds"):
            if getattr(self, name) <= 0:
                raise InputError(flag(name), f"must be a finite number of seconds > 0, got {getattr(self, name)}")
        for name in ("shutdown_grace_seconds", "admission_wait_seconds"):
            if getattr(self, name) < 0:
                raise InputError(flag(name), f"must be a finite number of seconds >= 0, got {getattr(self, name)}")
        if not 0 < self.max_message_bytes <= MAX_MESSAGE_MIB * MIB:
            mib = self.max_message_bytes / MIB
            problem = f"must be a number of MiB in (0, {MAX_MESSAGE_MIB}], got {mib:g}"
            raise InputError(flag("max_message_bytes"), problem)
        if self.memory_budget_mib < 1:
            raise InputError(flag("memory_budget_mib"), f"must be at least 1 MiB, got {self.memory_budget_mib}")

    def _check_ports(self) -> None:
        for name, lowest in (("port", 0), ("metrics_port", -1), ("extender_port", -1)):
            value = getattr(self, name)
            if not lowest <= value <= 65535:
                off = " (-1 turns it off)" if lowest < 0 else ""
                raise InputError(flag(name), f"must be a port in {max(lowest, 0)}..65535{off}, got {value}")

    def service_limits(self) -> ServiceLimits:
        """The service's share of the flags."""
        return ServiceLimits(
            max_nodes=self.max_nodes,
            max_tasks=self.max_tasks,
            session_ttl_seconds=self.session_ttl_seconds,
            max_sessions=self.max_sessions,
            memory_budget_mib=self.memory_budget_mib,
            admission_wait_seconds=self.admission_wait_seconds,
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
