"""Prometheus metrics, served on their own port beside the probes (``/healthz``, ``/readyz``)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator

import structlog
from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sidecar.api.v1alpha1 import plan_pb2
from sidecar.metricsport import PortServer
from sidecar.repack.fragmentation import fragmentation, goal_resources
from sidecar.server.probes import Probes, start_probe_server
from sidecar.service.observer import Observer
from sidecar.snapshot.state import ClusterState

log = structlog.get_logger("sidecar.server")

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
MEMORY_BUDGET = Gauge("repack_memory_budget_bytes", "The memory budget (--memory-budget-mib) in bytes")
MEMORY_ADMITTED = Gauge(
    "repack_memory_admitted_bytes", "Estimated working memory of the requests admitted and running now"
)
KERNELS = Gauge("repack_kernels_compiled", "1 when the Cython kernels are in use, 0 on the Python twins")
FRAGMENTATION = Gauge(
    "repack_fragmentation_ratio",
    "Fragmentation of each goal resource in the last snapshot or session a request used (0..1)",
    ["resource"],
)
PLAN_SECONDS = Histogram(
    "repack_plan_duration_seconds",
    "Planning time of a Plan (the planner loop and its status; decoding and transport excluded)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
PLAN_CANDIDATES = Histogram(
    "repack_plan_candidates",
    "Nodes a Plan considered and explained (plan.candidates)",
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
)
CANDIDATE_REASONS = Counter(
    "repack_plan_candidate_reasons_total", "Candidate explanations by reason (Emptied, NoReceiver, ...)", ["reason"]
)

EXTENDER_REQUESTS = Counter(
    "repack_extender_requests_total", "Volcano extender-plugin HTTP requests answered", ["verb", "code"]
)
EXTENDER_SECONDS = Histogram(
    "repack_extender_duration_seconds",
    "Extender request handling, from its body read to its answer built",
    ["verb"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5),
)
EXTENDER_SESSIONS = Counter(
    "repack_extender_sessions_total",
    "onSessionOpen bodies by fate: published (decoded, now `latest`), dropped (superseded before "
    "decoding), failed (not decodable; `latest` kept)",
    ["result"],
)
for _result in ("published", "dropped", "failed"):
    EXTENDER_SESSIONS.labels(result=_result)
EXTENDER_DECODE_SECONDS = Histogram(
    "repack_extender_decode_seconds",
    "Decoding one onSessionOpen body and publishing it as `latest` (off the request path)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class _SessionAge(Collector):
    """``repack_extender_session_age_seconds``: the age of ``latest`` at scrape time, whoever
    published it (the repack scheduler plugin over gRPC, or the extender intake); no sample while
    there is no such session. The name predates the plugin and is kept for dashboards."""

    def __init__(self) -> None:
        self.source: Callable[[], float | None] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "repack_extender_session_age_seconds",
            "Seconds since the session `latest` was published, by the scheduler plugin or the extender"
            " (absent while there is none)",
        )
        age = self.source() if self.source is not None else None
        if age is not None:
            family.add_metric([], age)
        yield family


SESSION_AGE = _SessionAge()
REGISTRY.register(SESSION_AGE)


def track_session_age(source: Callable[[], float | None] | None) -> None:
    """Make ``source`` (seconds, or None) the value of ``repack_extender_session_age_seconds``."""
    SESSION_AGE.source = source


class FragmentationGauge:
    """Keeps ``repack_fragmentation_ratio`` on the newest state a request used, off the request path:
    ``seen`` only records the state; one daemon thread measures it (the newest wins, a state already
    measured is not measured again — sessions are looked up on every call)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: ClusterState | None = None
        self._busy = False
        self._last: weakref.ref[ClusterState] | None = None
        self._thread: threading.Thread | None = None

    def seen(self, state: ClusterState) -> None:
        with self._cond:
            if (self._last is not None and self._last() is state) or self._pending is state:
                return
            self._pending = state
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="repack-fragmentation", daemon=True)
                self._thread.start()
            self._cond.notify()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until the newest state seen is measured (tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None)
                state, self._pending, self._busy = self._pending, None, True
            assert state is not None
            try:
                measure(state)
            except Exception as exc:  # a metric must never take the sidecar down
                log.warning("fragmentation gauge not updated", error=f"{type(exc).__name__}: {exc}")
            finally:
                with self._cond:
                    self._last, self._busy = weakref.ref(state), False
                    self._cond.notify_all()
            del state  # not kept alive while waiting: an expired session's memory must go back


_measured: set[str] = set()


def measure(state: ClusterState) -> None:
    """Set the gauge for every goal resource of ``state``; resources it no longer provides are dropped."""
    values = {name: fragmentation(state, name).percent / 100.0 for name in goal_resources(state)}
    for name in _measured - set(values):  # resources of an earlier cluster
        FRAGMENTATION.remove(name)
    _measured.clear()
    _measured.update(values)
    for name, ratio in values.items():
        FRAGMENTATION.labels(resource=name).set(ratio)


class PrometheusObserver(Observer):
    """The service's reports as the metrics above."""

    def __init__(self) -> None:
        self.fragmentation = FragmentationGauge()

    def snapshot_decoded(self, seconds: float, state: ClusterState) -> None:
        DECODE_SECONDS.observe(seconds)
        SNAPSHOT_NODES.set(state.n_nodes)
        SNAPSHOT_TASKS.set(state.n_tasks)

    def state_used(self, state: ClusterState) -> None:
        self.fragmentation.seen(state)

    def planned(self, seconds: float, status: plan_pb2.RepackStatus) -> None:
        PLAN_SECONDS.observe(seconds)
        PLAN_CANDIDATES.observe(len(status.plan.candidates))
        for candidate in status.plan.candidates:
            CANDIDATE_REASONS.labels(reason=candidate.reason or "unknown").inc()

    def sessions_changed(self, open_sessions: int) -> None:
        SESSIONS.set(open_sessions)


def start_metrics_server(port: int, host: str = "0.0.0.0", probes: Probes | None = None) -> PortServer:
    """``/metrics`` (also ``/``), ``/healthz`` and ``/readyz`` on a daemon thread (port 0 picks one)."""
    return start_probe_server(port, host, probes or Probes())


def serve_metrics(port: int, host: str = "0.0.0.0", probes: Probes | None = None) -> int:
    """Start the endpoint; returns the bound port."""
    return start_metrics_server(port, host, probes).port


__all__ = [
    "PortServer",
    "Probes",
    "PrometheusObserver",
    "serve_metrics",
    "start_metrics_server",
    "track_session_age",
]
