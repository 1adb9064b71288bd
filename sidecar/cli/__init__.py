"""``repack-sidecar`` command line: serve, evaluate, plan, demo, snapshot synth, sandbox serve, watch."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import TypeVar

from google.protobuf import json_format

from sidecar import logs
from sidecar.api.v1alpha1 import service_pb2
from sidecar.cli.demo import DEMO, cmd_demo
from sidecar.cli.output import emit, fragmentation_table, plan_table
from sidecar.errors import InputError
from sidecar.scenarios.synth import SynthOptions
from sidecar.watcher.args import watch_arguments, watch_options

T = TypeVar("T")


def cmd_evaluate(ns: argparse.Namespace) -> int:
    from sidecar.snapshot.io import load_snapshot

    request = service_pb2.EvaluateRequest(snapshot=load_snapshot(ns.snapshot), resources=ns.resource or [])
    if ns.server:
        from sidecar.client import RepackClient

        with RepackClient(ns.server) as client:
            response = client.evaluate(request)
    else:
        from sidecar.cli.offline import evaluate_offline

        response = evaluate_offline(request)
    emit(response, ns.output, fragmentation_table(response))
    return 0


def cmd_plan(ns: argparse.Namespace) -> int:
    from sidecar.snapshot.io import load_repack_spec, load_snapshot

    snapshot = load_snapshot(ns.snapshot)
    spec = load_repack_spec(ns.run)
    if ns.server:
        from sidecar.client import RepackClient

        with RepackClient(ns.server) as client:
            status = client.plan(service_pb2.PlanRequest(snapshot=snapshot, spec=spec)).status
    else:
        from sidecar.cli.offline import plan_offline

        status = plan_offline(snapshot, spec)
    emit(status, ns.output, plan_table(status), wrap_status=True)
    return 0


def cmd_synth(ns: argparse.Namespace) -> int:
    from sidecar.scenarios.synth import synth
    from sidecar.snapshot.io import save_snapshot

    snap = synth(
        SynthOptions(
            nodes=ns.nodes,
            cards_per_node=ns.cards_per_node,
            fill=ns.fill,
            seed=ns.seed,
            resource=ns.resource,
            cpu_pods_per_node=ns.cpu_pods_per_node,
        )
    )
    if ns.out == "-":
        print(json_format.MessageToJson(snap, indent=1))
    else:
        save_snapshot(snap, ns.out)
        print(
            f"wrote {ns.out}: {len(snap.nodes)} nodes, {len(snap.task_columns.uid)} tasks, "
            f"{len(snap.pod_groups)} PodGroups",
            file=sys.stderr,
        )
    return 0


def cmd_from_trace(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from sidecar.scenarios.traces import Stop, dlrm_snapshot, openb_snapshot
    from sidecar.snapshot.io import save_snapshot

    if (ns.fill is None) == (ns.time is None):
        print("error: give exactly one of --fill and --time", file=sys.stderr)
        return 2
    if ns.fill is not None and not 0 < ns.fill <= 1:
        print("error: --fill must be within (0, 1]", file=sys.stderr)
        return 2
    stop = Stop(at_time=ns.time, at_fill=ns.fill)
    if ns.trace == "dlrm":
        snap, stats = dlrm_snapshot(Path(ns.traces) / "dlrm2025", stop)
    else:
        snap, stats = openb_snapshot(Path(ns.traces) / "openb", stop, pods_file=ns.pods_file)
    save_snapshot(snap, ns.out)
    print(
        f"wrote {ns.out}: {len(snap.nodes)} nodes, {stats['pods']:.0f} pods at t={stats['time']:.0f}s, card fill "
        f"{stats['fill']:.1%}, {stats['unplaced']:.0f} pods found no node",
        file=sys.stderr,
    )
    return 0


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def cmd_serve(ns: argparse.Namespace) -> int:
    """Flags left out are None in the parser and take ServerConfig's defaults here: offline commands skip the server."""
    from sidecar.server.app import serve
    from sidecar.server.config import MIB, ServerConfig, message_bytes_from_mib

    d = ServerConfig()
    config = ServerConfig(
        host=_given(ns.host, d.host),
        port=_given(ns.port, d.port),
        metrics_port=_given(ns.metrics_port, d.metrics_port),
        metrics_host=_given(ns.metrics_host, d.metrics_host),
        max_message_bytes=message_bytes_from_mib(_given(ns.max_message_mib, d.max_message_bytes / MIB)),
        max_concurrent_rpcs=_given(ns.max_concurrent_rpcs, d.max_concurrent_rpcs),
        workers=_given(ns.workers, d.workers),
        session_ttl_seconds=_given(ns.session_ttl, d.session_ttl_seconds),
        max_sessions=_given(ns.max_sessions, d.max_sessions),
        shutdown_grace_seconds=_given(ns.grace, d.shutdown_grace_seconds),
        extender_port=_given(ns.extender_port, d.extender_port),
        extender_host=_given(ns.extender_host, d.extender_host),
        extender_timeout_seconds=_given(ns.extender_timeout, d.extender_timeout_seconds),
        memory_budget_mib=_given(ns.memory_budget_mib, d.memory_budget_mib),
    )
    asyncio.run(serve(config))
    return 0


def cmd_health(ns: argparse.Namespace) -> int:
    """grpc.health.v1 Check against a running sidecar: exit 0 only when SERVING (for exec probes)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from sidecar.server.config import ServerConfig

    target = _given(ns.target, f"127.0.0.1:{ServerConfig().port}")
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=ns.service), timeout=ns.timeout)
        except grpc.RpcError as exc:
            print(f"{target}: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(status)
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


def cmd_sandbox_serve(ns: argparse.Namespace) -> int:
    """The API server emulator on loopback until SIGINT/SIGTERM; --load fills it from a snapshot."""
    from sidecar.sandbox.apiserver.server import serve

    return serve(ns.port, ns.kubeconfig, ns.load, control_plane=ns.control_plane)


def cmd_watch(ns: argparse.Namespace) -> int:
    from sidecar.client import RepackClient
    from sidecar.watcher.runner import watch

    return watch(watch_options(ns), RepackClient(ns.sidecar) if ns.sidecar else None)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="repack-sidecar", description=__doc__)
    p.add_argument("--log-format", choices=("auto", "json", "console"), default="auto")
    p.add_argument("--log-level", default=None, help="default: info (warning for demo)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the gRPC server")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--metrics-port", type=int, help="-1 disables /metrics")
    s.add_argument("--metrics-host")
    s.add_argument("--max-message-mib", type=float)
    s.add_argument("--max-concurrent-rpcs", type=int)
    s.add_argument("--workers", type=int)
    s.add_argument("--session-ttl", type=float, help="seconds")
    s.add_argument("--max-sessions", type=int)
    s.add_argument("--grace", type=float, help="drain seconds on SIGTERM")
    s.add_argument("--extender-port", type=int, help="Volcano extender-plugin HTTP intake; default off, 0: a free port")
    s.add_argument("--extender-host", help="default 127.0.0.1 (the scheduler's pod)")
    s.add_argument("--extender-timeout", type=float, help="seconds per predicate/prioritize (Volcano's httpTimeout)")
    s.add_argument("--memory-budget-mib", type=float, help="estimated working memory of requests at once (1024)")
    s.set_defaults(func=cmd_serve)

    h = sub.add_parser("health", help="check a running sidecar's health (exit 0 when SERVING)")
    h.add_argument("--target")  # default: 127.0.0.1 on the serve port
    h.add_argument("--service", default="", help='"" for the whole server, or a service name')
    h.add_argument("--timeout", type=float, default=2.0)
    h.set_defaults(func=cmd_health)

    e = sub.add_parser("evaluate", help="fragmentation per resource of a snapshot file")
    e.add_argument("--snapshot", required=True, help="JSON/YAML (protobuf JSON form) or .pb")
    e.add_argument("--resource", action="append", help="repeatable; default: every scalar resource")
    e.add_argument("--server", help="host:port of a running sidecar (default: in-process)")
    e.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    e.set_defaults(func=cmd_evaluate)

    pl = sub.add_parser("plan", help="plan a RepackRun (prints its status)")
    pl.add_argument("--snapshot", required=True)
    pl.add_argument("--run", required=True, help="RepackRun YAML (or a bare spec)")
    pl.add_argument("--server", help="host:port of a running sidecar (default: in-process)")
    pl.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    pl.set_defaults(func=cmd_plan)

    dm = sub.add_parser("demo", help="plan the built-in fragmented cluster (--execute: repack one end to end)")
    dm.add_argument("--offline", action="store_true", help="skip the loopback server")
    dm.add_argument(
        "--execute", action="store_true", help="repack the guide's cluster end to end (sandbox + sidecar + watcher)"
    )
    dm.add_argument("--gates", action="store_true", help="with --execute: rebuilt pods wait behind the placement gate")
    dm.set_defaults(func=cmd_demo)

    sn = sub.add_parser("snapshot", help="snapshot tools")
    snsub = sn.add_subparsers(dest="snapshot_command", required=True)
    sy = snsub.add_parser("synth", help="generate a seeded fragmented cluster")
    sy.add_argument("--nodes", type=int, default=DEMO.nodes)
    sy.add_argument("--cards-per-node", type=int, default=DEMO.cards_per_node)
    sy.add_argument("--fill", type=float, default=DEMO.fill)
    sy.add_argument("--seed", type=int, default=DEMO.seed)
    sy.add_argument("--resource", default="nvidia.com/gpu")
    sy.add_argument("--cpu-pods-per-node", type=float, default=0.5)
    sy.add_argument("--out", default="-", help="file (.json, .yaml or .pb) or - for stdout")
    sy.set_defaults(func=cmd_synth)
    ft = snsub.add_parser("from-trace", help="replay a public trace into a snapshot (openb, dlrm)")
    ft.add_argument("trace", choices=("openb", "dlrm"))
    ft.add_argument("--traces", default="../shared/traces", help="folder holding openb/ and dlrm2025/")
    ft.add_argument("--pods-file", default="openb_pod_list_default.csv", help="openb pod list")
    ft.add_argument("--fill", type=float, help="stop when this fraction of cards is allocated (deletions ignored)")
    ft.add_argument("--time", type=float, help="stop at this trace time in seconds (creations and deletions)")
    ft.add_argument("--out", required=True, help="file (.json, .yaml or .pb)")
    ft.set_defaults(func=cmd_from_trace)
    sb = sub.add_parser("sandbox", help="a Kubernetes sandbox without a cluster")
    sbs = sb.add_subparsers(dest="sandbox_command", required=True).add_parser("serve", help="the API server emulator")
    sbs.add_argument("--port", type=int, default=0, help="0: a free port")
    sbs.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    sbs.add_argument("--load", help="snapshot file whose nodes, pods, PodGroups and PDBs to create")
    sbs.add_argument(
        "--control-plane", action="store_true", help="also run the simulated scheduler, kubelet, controllers"
    )
    sbs.set_defaults(func=cmd_sandbox_serve)
    w = sub.add_parser("watch", help="the RepackRun controller (DryRun) on a cluster, leader-elected")
    watch_arguments(w)
    w.set_defaults(func=cmd_watch)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    logs.configure(ns.log_format, ns.log_level or ("warning" if ns.command == "demo" else "info"))
    try:
        return int(ns.func(ns))
    except (InputError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
