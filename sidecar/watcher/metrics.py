"""``watch --metrics-port``: the watcher's Prometheus metrics and probes on one HTTP port.

* ``/healthz`` (liveness): every informer's list+watch thread is alive, and while this replica
  leads, the controller's worker thread is alive.
* ``/readyz`` (readiness): every informer's cache has synced (listed once).
* ``/metrics`` (and ``/``): the counters fed by ``watcher.observer`` and gauges read from the
  informers' caches at scrape time (relocations by phase, runs by phase, informer activity).

Requests are not logged (the kubelet probes every few seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import structlog
from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sidecar.api.repackrun import TERMINAL, EvictionPhase, Phase
from sidecar.metricsport import Check, PortServer, serve_port
from sidecar.watcher.execute.journal import Relocation, relocations_of
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.status import mode_of, phase_of
from sidecar.watcher.observer import WatcherObserver

log = structlog.get_logger("sidecar.watcher")

EVICTIONS = Counter("repack_evictions_total", "Evictions that reached a final phase, by result", ["result"])
NOMINATIONS = Counter("repack_nominations_total", "nominatedNodeName patches, by result", ["result"])
RUNS = Counter("repack_runs_total", "Runs this watcher drove to a terminal phase, by mode and final reason",
               ["mode", "outcome"])  # fmt: skip
RECONCILE_SECONDS = Histogram(
    "repack_reconcile_seconds",
    "One reconcile of one run (a DryRun plan, an Execute pass, a TTL check), by reconciler",
    ["reconciler"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
PLANS = Counter("repack_watcher_plans_total", "Runs planned, by the view planned on (session: the scheduler's "
                "latest, fresh; informer: the watcher's cache)", ["source"])  # fmt: skip
GATES = Counter("repack_placement_gates_total", "Placement gates added to rebuilt pods at admission, or lifted "
                "by the leader (run finished or gone, or not nominated in time)", ["action"])  # fmt: skip
LEADER = Gauge("repack_leader", "1 while this replica holds the Lease (runs the controller), else 0")
POLICY_RUNS = Counter("repack_policy_runs_created_total", "Runs RepackPolicies created, by policy and trigger "
                      "(schedule, or pending: a job held back by fragmentation)", ["policy", "trigger"])  # fmt: skip


class PrometheusWatcherObserver(WatcherObserver):
    def eviction(self, result: str) -> None:
        EVICTIONS.labels(result=result).inc()

    def nomination(self, result: str) -> None:
        NOMINATIONS.labels(result=result).inc()

    def reconciled(self, kind: str, seconds: float) -> None:
        RECONCILE_SECONDS.labels(reconciler=kind).observe(seconds)

    def run_finished(self, mode: str, outcome: str) -> None:
        RUNS.labels(mode=mode, outcome=outcome).inc()

    def leading(self, leader: bool) -> None:
        LEADER.set(1 if leader else 0)

    def planned(self, source: str) -> None:
        PLANS.labels(source=source).inc()

    def gate(self, action: str) -> None:
        GATES.labels(action=action).inc()

    def policy_run(self, policy: str, trigger: str) -> None:
        POLICY_RUNS.labels(policy=policy, trigger=trigger).inc()


def relocation_phase(rel: Relocation) -> str:
    """The eviction's phase until the pod is evicted, then the placement's."""
    return rel.placement.phase if rel.eviction.phase == EvictionPhase.EVICTED else rel.eviction.phase


class CacheCollector(Collector):
    """Gauges and counters read from the informers at scrape time (nothing to keep in step)."""

    def __init__(self) -> None:
        self.cache: ClusterCache | None = None

    def collect(self) -> Iterator[Any]:
        cache = self.cache
        if cache is None:
            return
        relocations = GaugeMetricFamily(
            "repack_relocations", "Relocations of unfinished Execute runs, by phase (eviction, then placement)",
            labels=["phase"])  # fmt: skip
        runs = GaugeMetricFamily("repack_runs_by_phase", "RepackRuns in the watcher's cache, by mode and phase",
                                 labels=["mode", "phase"])  # fmt: skip
        by_phase: dict[str, int] = {}
        by_run: dict[tuple[str, str], int] = {}
        for run in cache.list_runs():
            key = (mode_of(run) or "unknown", phase_of(run) or Phase.PENDING)
            by_run[key] = by_run.get(key, 0) + 1
            if phase_of(run) in TERMINAL:
                continue
            for rel in relocations_of(run.get("status") or {}):
                phase = relocation_phase(rel)
                by_phase[phase] = by_phase.get(phase, 0) + 1
        for phase, n in sorted(by_phase.items()):
            relocations.add_metric([phase], n)
        for (mode, phase), n in sorted(by_run.items()):
            runs.add_metric([mode, phase], n)
        lists = CounterMetricFamily(
            "repack_informer_lists", "Full LISTs by each informer (first sync, resyncs, relists after 410)",
            labels=["kind"])  # fmt: skip
        expired = CounterMetricFamily(
            "repack_informer_watch_expired", "Watches that ended in 410 Gone (a relist followed)", labels=["kind"]
        )
        errors = CounterMetricFamily("repack_informer_errors", "List/watch errors (backed off)", labels=["kind"])
        events = CounterMetricFamily("repack_informer_events", "Watch events applied", labels=["kind"])
        for inf in cache.informers:
            lists.add_metric([inf.kind.plural], inf.stats.lists)
            expired.add_metric([inf.kind.plural], inf.stats.relists_gone)
            errors.add_metric([inf.kind.plural], inf.stats.errors)
            events.add_metric([inf.kind.plural], inf.stats.events)
        waiting = GaugeMetricFamily(
            "repack_waiting_podgroups",
            "PodGroups a RepackPolicy's latest whenPending check found waiting, by policy and why "
            "(Fragmentation gets a run; Capacity, Enqueue, NoPlan, FitsNow do not)",
            labels=["policy", "verdict"],
        )
        for policy in cache.policies.items():
            counted: dict[str, int] = {}
            for w in (policy.get("status") or {}).get("waiting") or []:
                counted[str(w.get("verdict"))] = counted.get(str(w.get("verdict")), 0) + 1
            for verdict, n in sorted(counted.items()):
                waiting.add_metric([policy["metadata"]["name"], verdict], n)
        yield from (relocations, runs, lists, expired, errors, events, waiting)


COLLECTOR = CacheCollector()
REGISTRY.register(COLLECTOR)


def health_checks(cache: ClusterCache, controller_healthy: Callable[[], bool]) -> dict[str, Check]:
    def live() -> tuple[bool, str]:
        dead = [inf.kind.plural for inf in cache.informers if not inf.running()]
        if dead:
            return False, f"informers not running: {', '.join(dead)}"
        if not controller_healthy():
            return False, "leading, but the controller's worker thread is not alive"
        return True, "ok"

    def ready() -> tuple[bool, str]:
        waiting = [inf.kind.plural for inf in cache.informers if not inf.has_synced()]
        return (False, f"caches not synced: {', '.join(waiting)}") if waiting else (True, "ok")

    return {"/healthz": live, "/readyz": ready}


def serve(port: int, host: str, cache: ClusterCache, controller_healthy: Callable[[], bool]) -> PortServer:
    """Serve the endpoint on a daemon thread (port 0 picks one) with ``cache`` behind the gauges."""
    COLLECTOR.cache = cache
    return serve_port(port, host, health_checks(cache, controller_healthy), "watcher-metrics")
