"""``repack-sidecar watch`` flags, kept here so the CLI module stays a thin switchboard.

Nothing from the Kubernetes client is imported at module level: the CLI builds its parser from
this module on every command.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.errors import InputError

#: the service account's namespace inside a pod (the Lease's default namespace there)
POD_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class ExecuteFlags:
    """Execute's timings from the flags (seconds); ``runner.reconcilers`` turns them into ExecuteOptions."""

    cooldown: float = 300.0
    eviction_timeout: float = 300.0
    execution_timeout: float = 900.0


@dataclass(frozen=True)
class LeaseFlags:
    name: str = "repack-watcher"
    namespace: str = ""  # empty: the pod's namespace, else "default"
    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class WebhookFlags:
    """The placement gate's admission webhook (``gate/``)."""

    #: HTTPS port of ``/mutate-pods``; -1 (the default) serves none (the manifests use 9443)
    port: int = -1
    host: str = "0.0.0.0"
    #: the Service the API server calls, in the watcher's namespace (its DNS names go in the certificate)
    service: str = "repack-webhook"
    #: the MutatingWebhookConfiguration whose caBundle the watcher keeps
    config: str = "repack-placement-gate"
    #: the Secret holding the CA and the serving certificate, in the watcher's namespace
    secret: str = "repack-webhook-tls"
    #: serve tls.crt/tls.key from this directory instead (cert-manager: its CA injector fills caBundle)
    cert_dir: str = ""
    #: more names for the certificate (DNS names or IP addresses: a url clientConfig)
    names: tuple[str, ...] = ()
    #: seconds a gated pod may wait for its nomination before the leader lifts the gate
    gate_timeout: float = 60.0


@dataclass(frozen=True)
class WatchOptions:
    kubeconfig: str | None = None
    once: bool = False
    period: float = 2.0
    #: the safety resync of every wanted run (deadlines requeue themselves; events map to runs)
    sync_period: float = 60.0
    resync: float = 300.0
    leader_elect: bool = True
    lease: LeaseFlags = field(default_factory=LeaseFlags)
    execute: ExecuteFlags = field(default_factory=ExecuteFlags)
    #: /metrics, /healthz, /readyz on this port; -1 (the default) serves none (the manifests use 9465)
    metrics_port: int = -1
    metrics_host: str = "0.0.0.0"
    #: plan on the sidecar's session ``latest`` (Volcano's newest cycle) while at most this many
    #: seconds old, else on the informer cache; 0 never uses it. Volcano opens a session every 1 s.
    session_max_age: float = 5.0
    webhook: WebhookFlags = field(default_factory=WebhookFlags)
    #: seconds a run waits for a sidecar that does not answer before it fails PlannerUnavailable
    planner_wait: float = 60.0
    #: seconds between two whenPending checks of a RepackPolicy
    policy_resync: float = 30.0


def watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The cluster, the planner (a sidecar on HOST:PORT, or the service in process), the loop, the
    Lease, Execute's timings and the metrics port."""
    d, lease, ex = WatchOptions(), LeaseFlags(), ExecuteFlags()
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file of the cluster (default: $KUBECONFIG, else in-cluster config, else ~/.kube/config)",
    )
    pick = parser.add_mutually_exclusive_group(required=True)
    pick.add_argument("--sidecar", metavar="HOST:PORT", help="plan through this sidecar's gRPC API")
    pick.add_argument("--in-process", action="store_true", help="plan in this process (no sidecar)")
    parser.add_argument("--once", action="store_true", help="one pass over the unfinished runs, then exit")
    parser.add_argument(
        "--period", type=float, default=d.period, help="seconds between the leader's chores (placement gate release)"
    )
    parser.add_argument(
        "--sync-period",
        type=float,
        default=d.sync_period,
        help="seconds between safety requeues of every wanted run (deadlines and events queue runs on time)",
    )
    parser.add_argument("--resync", type=float, default=d.resync, help="seconds between full relists of each kind")
    parser.add_argument("--no-leader-elect", dest="leader_elect", action="store_false", help="run without a Lease")
    parser.add_argument("--lease-name", default=lease.name)
    parser.add_argument("--lease-namespace", default="", help="default: the pod's namespace, else 'default'")
    parser.add_argument("--lease-duration", type=float, default=lease.duration, help="seconds")
    parser.add_argument("--renew-deadline", type=float, default=lease.renew_deadline, help="seconds")
    parser.add_argument("--retry-period", type=float, default=lease.retry_period, help="seconds")
    parser.add_argument("--execute-cooldown", type=float, default=ex.cooldown, help="seconds after an Execute run")
    parser.add_argument("--eviction-timeout", type=float, default=ex.eviction_timeout, help="seconds per eviction")
    parser.add_argument("--execution-timeout", type=float, default=ex.execution_timeout, help="seconds per run")
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=d.metrics_port,
        help="serve /metrics, /healthz, /readyz on this port (9465 in the manifests; -1: none)",
    )
    parser.add_argument("--metrics-host", default=d.metrics_host, help="address of the metrics port")
    parser.add_argument(
        "--session-max-age",
        type=float,
        default=d.session_max_age,
        help="with --sidecar: plan on its session 'latest' (fed by Volcano's extender plugin) while at most "
        "this many seconds old, else on the informer cache; 0: always the informer cache",
    )
    parser.add_argument(
        "--policy-resync",
        type=float,
        default=d.policy_resync,
        help="seconds between two whenPending checks of a RepackPolicy (each asks the sidecar why the waiting "
        "PodGroups wait)",
    )
    parser.add_argument(
        "--planner-wait",
        type=float,
        default=d.planner_wait,
        help="seconds a run waits (Waiting: PlannerUnavailable, retried with backoff) for a sidecar that does "
        "not answer before it fails; 0: fail at once",
    )
    hook = WebhookFlags()
    web = parser.add_argument_group("placement gate", "the admission webhook holding rebuilt pods until nominated")
    web.add_argument(
        "--webhook-port",
        type=int,
        default=hook.port,
        help="serve the webhook (HTTPS /mutate-pods) on this port (9443 in the manifests; -1: none)",
    )
    web.add_argument("--webhook-host", default=hook.host, help="address of the webhook port")
    web.add_argument("--webhook-service", default=hook.service, help="the webhook's Service (certificate names)")
    web.add_argument(
        "--webhook-config", default=hook.config, help="the MutatingWebhookConfiguration to inject the CA into"
    )
    web.add_argument(
        "--webhook-secret", default=hook.secret, help="the Secret keeping the webhook's CA and certificate"
    )
    web.add_argument(
        "--webhook-cert-dir",
        default=hook.cert_dir,
        help="serve tls.crt and tls.key from this directory (cert-manager) instead of the Secret",
    )
    web.add_argument(
        "--webhook-name",
        dest="webhook_names",
        action="append",
        default=[],
        metavar="NAME",
        help="one more DNS name or IP address for the certificate (repeatable)",
    )
    web.add_argument(
        "--gate-timeout",
        type=float,
        default=hook.gate_timeout,
        help="seconds a gated rebuilt pod waits for its nomination before the gate is lifted anyway",
    )


def watch_options(ns: argparse.Namespace) -> WatchOptions:
    """The parsed flags, checked (a bad value is an InputError: exit 2)."""
    seconds = ("period", "sync_period", "resync", "execute_cooldown", "eviction_timeout", "execution_timeout",
               "session_max_age", "planner_wait", "policy_resync")  # fmt: skip
    for flag in (*seconds, "gate_timeout"):
        value, positive = getattr(ns, flag), flag in ("period", "sync_period", "gate_timeout", "policy_resync")
        if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
            need = "a finite number of seconds " + ("> 0" if positive else ">= 0")
            raise InputError(f"--{flag.replace('_', '-')}", f"must be {need}, got {value:g}")
    for flag in ("metrics_port", "webhook_port"):
        if not -1 <= getattr(ns, flag) <= 65535:
            raise InputError(f"--{flag.replace('_', '-')}", "must be a port number (0: any free port), or -1 for none")
    for flag in ("webhook_service", "webhook_config", "webhook_secret"):
        if not getattr(ns, flag):
            raise InputError(f"--{flag.replace('_', '-')}", "must not be empty")
    if ns.webhook_cert_dir and not all((Path(ns.webhook_cert_dir) / f).is_file() for f in ("tls.crt", "tls.key")):
        raise InputError("--webhook-cert-dir", f"{ns.webhook_cert_dir} has no tls.crt and tls.key")
    lease = LeaseFlags(ns.lease_name, ns.lease_namespace, ns.lease_duration, ns.renew_deadline, ns.retry_period)
    if not lease.duration > lease.renew_deadline > lease.retry_period > 0:
        raise InputError("--lease-duration", "needs lease duration > renew deadline > retry period > 0")
    return WatchOptions(
        kubeconfig=ns.kubeconfig,
        once=ns.once,
        period=ns.period,
        sync_period=ns.sync_period,
        resync=ns.resync,
        leader_elect=ns.leader_elect,
        lease=lease,
        execute=ExecuteFlags(ns.execute_cooldown, ns.eviction_timeout, ns.execution_timeout),
        metrics_port=ns.metrics_port,
        metrics_host=ns.metrics_host,
        session_max_age=ns.session_max_age,
        planner_wait=ns.planner_wait,
        policy_resync=ns.policy_resync,
        webhook=WebhookFlags(
            port=ns.webhook_port,
            host=ns.webhook_host,
            service=ns.webhook_service,
            config=ns.webhook_config,
            secret=ns.webhook_secret,
            cert_dir=ns.webhook_cert_dir,
            names=tuple(ns.webhook_names),
            gate_timeout=ns.gate_timeout,
        ),
    )


def lease_namespace(flags: LeaseFlags) -> str:
    if flags.namespace:
        return flags.namespace
    try:
        return POD_NAMESPACE_FILE.read_text().strip() or "default"
    except OSError:
        return "default"
