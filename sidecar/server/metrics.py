"""Prometheus metrics, served on their own port."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from sidecar.service.observer import Observer
from sidecar.snapshot.state import ClusterState

RPCS = Counter("repack_rpc_requests_total", "RPCs handled", ["method", "code"])
RPC_SECONDS = Histogram(
    "repack_rpc_duration_seconds",
    "RPC latency",
    ["method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
DECODE_SECONDS = Histogram(
    "repack_snapshot_decode_seconds",
    "Snapshot validation and conversion to columns",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5),
)
SNAPSHOT_NODES = Gauge("repack_snapshot_nodes", "Nodes in the last decoded snapshot")
SNAPSHOT_TASKS = Gauge("repack_snapshot_tasks", "Tasks in the last decoded snapshot")
SESSIONS = Gauge("repack_sessions", "Open sessions in the cache")
KERNELS = Gauge("repack_kernels_compiled", "1 when the Cython kernels are in use, 0 on the Python twins")


class PrometheusObserver(Observer):
    """The service's reports as the gauges and histogram above."""

    def snapshot_decoded(self, seconds: float, state: ClusterState) -> None:
        DECODE_SECONDS.observe(seconds)
        SNAPSHOT_NODES.set(state.n_nodes)
        SNAPSHOT_TASKS.set(state.n_tasks)

    def sessions_changed(self, open_sessions: int) -> None:
        SESSIONS.set(open_sessions)


def serve_metrics(port: int, host: str = "0.0.0.0") -> int:
    """Start the /metrics endpoint in a daemon thread; returns the bound port (port 0 picks one)."""
    httpd, _thread = start_http_server(port, addr=host)
    return int(httpd.server_port)
