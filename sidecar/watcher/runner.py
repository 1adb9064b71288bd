"""``repack-sidecar watch``: the informers, the Lease and the controller wired together.

Informers run on every replica (a standby's cache is warm when it takes over); the controller's
worker runs only while this replica holds the Lease. SIGTERM (or SIGINT) stops the worker,
releases the Lease and exits 0.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from sidecar.watcher import observer as observe
from sidecar.watcher.args import WatchOptions, lease_namespace
from sidecar.watcher.dryrun import dry_run
from sidecar.watcher.execute.events import ExecuteEvents
from sidecar.watcher.execute.progress import ExecuteOptions
from sidecar.watcher.execute.reconciler import ExecuteReconciler
from sidecar.watcher.gate import certs
from sidecar.watcher.gate.index import GateIndex, Lifter, owner_from
from sidecar.watcher.gate.webhook import WebhookServer
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.controller import Controller, Controllers, Reconciler
from sidecar.watcher.kit.kube import connect
from sidecar.watcher.kit.lease import LeaderElector, LeaseConfig
from sidecar.watcher.kit.port import REPACKPOLICIES, Cluster
from sidecar.watcher.kit.status import utcnow
from sidecar.watcher.policy.reconciler import PolicyOptions, PolicyReconciler, owner_policies
from sidecar.watcher.sidecarport import InProcessSidecar, Sidecar
from sidecar.watcher.supplement import SupplementPusher
from sidecar.watcher.ttl import TTLReconciler

if TYPE_CHECKING:
    from sidecar.metricsport import PortServer

log = structlog.get_logger("sidecar.watcher")


def reconcilers(cluster: Cluster, sidecar: Sidecar, cache: ClusterCache, options: WatchOptions) -> list[Reconciler]:
    """DryRun, Execute (its options from the flags) and TTL, each on the cache's snapshot and runs
    (DryRun and Execute on the sidecar's session ``latest`` instead while it is fresh)."""
    ex = options.execute
    execute = ExecuteOptions(
        cooldown=ex.cooldown,
        eviction_timeout=ex.eviction_timeout,
        execution_timeout=ex.execution_timeout,
        planner_wait=options.planner_wait,
    )
    age = options.session_max_age
    return [
        dry_run(cluster, sidecar, cache, session_max_age=age, planner_wait=options.planner_wait),
        ExecuteReconciler(
            cluster, sidecar, options=execute, snapshot=cache.snapshot, runs=cache.list_runs, session_max_age=age
        ),
        TTLReconciler(cluster, clock=utcnow),
    ]


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set ``stop`` (only the main thread may install handlers; elsewhere, nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _lead(controller: Controller | Controllers) -> None:
    observe.leading(True)
    controller.start_leading()


def _follow(controller: Controller | Controllers) -> None:
    controller.stop_leading()
    observe.leading(False)


def _serve_metrics(options: WatchOptions, cache: ClusterCache, controller: Controller | Controllers) -> PortServer:
    """``--metrics-port``: Prometheus text and the probes; the observer feeds the counters from now on."""
    from sidecar.watcher import metrics  # prometheus_client only when asked for

    server = metrics.serve(options.metrics_port, options.metrics_host, cache, controller.healthy)
    observe.install(metrics.PrometheusWatcherObserver())
    metrics.LEADER.set(0)
    log.info("metrics", address=f"{options.metrics_host}:{server.port}")
    return server


def build_controller(cluster: Cluster, sidecar: Sidecar, cache: ClusterCache, options: WatchOptions,
               chores: list[Lifter]) -> Controller:  # fmt: skip
    """The controller ``watch`` runs: DryRun, Execute and TTL, with Execute's event maps."""
    return Controller(
        cluster,
        reconcilers(cluster, sidecar, cache, options),
        cache=cache,
        period=options.period,
        sync_period=options.sync_period,
        chores=chores,
        maps=ExecuteEvents.maps(cache),
    )


def build_policy_controller(
    cluster: Cluster, sidecar: Sidecar, cache: ClusterCache, options: WatchOptions
) -> Controller:
    """The RepackPolicy controller: its runs' events bring a policy back (outcome, history, Forbid)."""
    policies = PolicyReconciler(
        cluster,
        sidecar,
        runs=cache.list_runs,
        pod_groups=cache.pod_groups.items,
        snapshot=cache.snapshot,
        options=PolicyOptions(resync=options.policy_resync),
    )
    return Controller(
        cluster,
        [policies],
        cache=cache,
        period=options.period,
        sync_period=options.sync_period,
        maps=[(cache.runs, owner_policies)],
        resource=REPACKPOLICIES,
    )


def placement_gate(cluster: Cluster, cache: ClusterCache, timeout: float) -> tuple[GateIndex, Lifter]:
    """The active relocations (rebuilt from the runs on each run event) and the leader's gate
    release (told by the pods informer which pods carry the gate)."""
    gates = GateIndex(cache.list_runs, owner_from(cache.pod_groups.get))
    cache.runs.add_handler(gates.refresh)
    lifter = Lifter(cluster, gates, cache.pods.get, clock=utcnow, timeout=timeout)
    cache.pods.add_handler(lifter.on_pod)
    return gates, lifter


#: seconds between the webhook's certificate refreshes on every replica
WEBHOOK_REFRESH = 300.0


def webhook_certificate(cluster: Cluster, options: WatchOptions) -> tuple[bytes, bytes]:
    """The webhook's (certificate, key): ``--webhook-cert-dir``'s files as they are now, else the
    Secret's (issued or renewed when needed) with the CA (re-)injected into the configuration —
    so a configuration applied after the watcher, or re-applied without its caBundle, is mended."""
    flags = options.webhook
    if flags.cert_dir:
        cert, key = (Path(flags.cert_dir, f).read_bytes() for f in ("tls.crt", "tls.key"))
        return cert, key
    namespace = lease_namespace(options.lease)
    names = [*certs.service_names(flags.service, namespace), *flags.names]
    bundle = certs.ensure_secret(cluster, namespace, flags.secret, names, utcnow())
    certs.inject_ca(cluster, flags.config, bundle.ca)
    return bundle.cert, bundle.key


def serve_webhook(
    cluster: Cluster, options: WatchOptions, gates: GateIndex, refresh: float = WEBHOOK_REFRESH
) -> WebhookServer:
    """``--webhook-port``: HTTPS with ``webhook_certificate``, asked again every ``refresh`` seconds."""
    flags = options.webhook
    server = WebhookServer(flags.host, flags.port, *webhook_certificate(cluster, options), gates.review)
    server.keep_fresh(lambda: webhook_certificate(cluster, options), refresh)
    log.info("placement gate webhook", address=f"{flags.host}:{server.port}", gate_timeout=flags.gate_timeout)
    return server


def watch(options: WatchOptions, sidecar: Sidecar | None, *, stop: threading.Event | None = None) -> int:
    """One pass (``options.once``) or the controller until SIGTERM/SIGINT (or ``stop``); exit code 0.
    ``sidecar`` None plans in process (the CLI passes the gRPC client: the watcher may not import it);
    with a sidecar, the informers' namespaces and PDBs are also pushed to it (``SupplementPusher``)."""
    cluster = connect(options.kubeconfig)
    stop = stop or threading.Event()
    cache = ClusterCache(cluster, resync=options.resync)
    gates, lifter = placement_gate(cluster, cache, options.webhook.gate_timeout)
    planner = sidecar or InProcessSidecar()
    work = Controllers(
        build_controller(cluster, planner, cache, options, [lifter]),
        build_policy_controller(cluster, planner, cache, options),
    )
    server = webhook = None
    # through a sidecar: push it the namespace labels and PDBs Volcano's session lacks
    pusher = SupplementPusher(sidecar, cache, period=options.period) if sidecar is not None else None
    previous = observe.current()
    try:
        if options.once:
            for name, phase in sorted(work.run_once().items()):
                print(f"{name} {phase}", flush=True)
            return 0
        log.info(
            "watching",
            leader_elect=options.leader_elect,
            period=options.period,
            resync=options.resync,
            execute=asdict(options.execute),
        )
        with _stop_on_signals(stop):
            cache.start()
            if pusher is not None:
                pusher.start()
            if options.metrics_port >= 0:
                server = _serve_metrics(options, cache, work)
            if options.webhook.port >= 0:
                webhook = serve_webhook(cluster, options, gates)
            elector = None
            if options.leader_elect:
                lease = LeaseConfig(
                    name=options.lease.name,
                    namespace=lease_namespace(options.lease),
                    lease_duration=options.lease.duration,
                    renew_deadline=options.lease.renew_deadline,
                    retry_period=options.lease.retry_period,
                )
                lead, follow = (lambda: _lead(work)), (lambda: _follow(work))
                unretried = connect(options.kubeconfig, retries=False)  # no request outlives the renew deadline
                elector = LeaderElector(unretried, lease, on_started_leading=lead, on_stopped_leading=follow).start()
            else:
                _lead(work)
            stop.wait()
            log.info("stopping")
            if elector is not None:
                elector.stop(
                    timeout=40.0
                )  # stops the worker (callback; a reconcile under way ends first), then releases
            else:
                _follow(work)
        return 0
    finally:
        if pusher is not None:
            pusher.stop()
        if webhook is not None:
            webhook.close()
        if server is not None:
            server.close()
            observe.install(previous)
        cache.stop()
        cluster.close()
