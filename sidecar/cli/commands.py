"""The commands that are not evaluate/plan: serve, health, snapshot synth/from-trace, watch."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import sys
from typing import NoReturn, TypeVar

from sidecar.cli.failures import rpc_failure, say
from sidecar.errors import InputError
from sidecar.scenarios.synth import SynthOptions
from sidecar.watcher.args import watch_options
from sidecar.wording import count

T = TypeVar("T")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def write_snapshot(snap: object, out: str, summary: str) -> None:
    """``-`` prints deterministic JSON on stdout; a path is written (.pb binary, else JSON) and summarised on stderr."""
    from sidecar.api.v1alpha1 import snapshot_pb2 as pb
    from sidecar.snapshot.io import save_snapshot, snapshot_json

    assert isinstance(snap, pb.Snapshot)
    if out == "-":
        sys.stdout.write(snapshot_json(snap))
        sys.stdout.flush()
        print(f"{summary} (JSON on stdout; --out FILE to write a file)", file=sys.stderr)
    else:
        save_snapshot(snap, out)
        print(f"wrote {out}: {summary}", file=sys.stderr)


def cmd_synth(ns: argparse.Namespace) -> int:
    from sidecar.scenarios.synth import synth

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
    tasks, groups = count(len(snap.task_columns.uid), "task"), count(len(snap.pod_groups), "PodGroup")
    summary = f"{count(len(snap.nodes), 'node')}, {tasks}, {groups}"
    write_snapshot(snap, ns.out, summary)
    return 0


#: the flag of each Stop field (snapshot from-trace)
_STOP_FLAGS = {"at_fill": "--fill", "at_time": "--time", "depart_to": "--depart-to", "refill": "--refill"}


def cmd_from_trace(ns: argparse.Namespace) -> int:
    """Replay a trace; a progress line on stderr when it is a terminal (a full openb replay takes a while)."""
    from pathlib import Path

    from sidecar.cli.progress import Progress
    from sidecar.scenarios.traces import Stop, dlrm_pods, openb_pods, replay

    try:
        stop = Stop(
            at_time=ns.time,
            at_fill=ns.fill,
            depart_to=ns.depart_to,
            departures=ns.departures,
            seed=ns.seed,
            refill=ns.refill,
        )
    except InputError as exc:  # Stop names its fields; a person typed flags

        def flags(text: str) -> str:
            return re.sub(r"\b(at_fill|at_time|depart_to|refill)\b", lambda m: _STOP_FLAGS[m.group(1)], text)

        raise InputError(flags(exc.field), flags(exc.problem)) from None
    with Progress(f"replaying {ns.trace}") as progress:
        progress.step("reading the trace")
        if ns.trace == "dlrm":
            pods, times = dlrm_pods(Path(ns.traces) / "dlrm2025")
        else:
            pods, times = openb_pods(Path(ns.traces) / "openb", ns.pods_file)
        progress.step(f"placing {len(times):,} pods")
        snap, stats = replay(pods, times, stop, progress=progress.update)
    churn = ""
    if "high_fill" in stats:
        resumed = ", then arrivals resumed" if "refill_unplaced" in stats else ""
        churn = (
            f" (filled to {stats['high_fill']:.1%}, then {count(int(stats['departed_workloads']), 'workload')} with "
            f"{count(int(stats['departed_pods']), 'pod')} departed{resumed})"
        )
    write_snapshot(
        snap,
        ns.out,
        f"{len(snap.nodes)} nodes, {stats['pods']:.0f} pods at t={stats['time']:.0f}s, card fill "
        f"{stats['fill']:.1%}{churn}, {stats['unplaced']:.0f} pods found no node",
    )
    return 0


def cmd_serve(ns: argparse.Namespace) -> int:
    """Flags left out are None in the parser and take ServerConfig's defaults here: offline commands skip the server.

    A port that cannot be bound is an OSError naming the address (grpc reports it as a RuntimeError).
    Once serving, it does not return: after the drain the process ends with exit 0.
    """
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
    _check_port(config.host, config.port, "--host/--port")
    _check_port(config.metrics_host, config.metrics_port, "--metrics-host/--metrics-port")
    _check_port(config.extender_host, config.extender_port, "--extender-host/--extender-port")
    try:
        asyncio.run(serve(config))
    except RuntimeError as exc:
        if "Failed to bind to address" not in str(exc):
            raise
        address = str(exc).split("address", 1)[1].split(";", 1)[0].strip()
        raise OSError(f"cannot listen on {address} (gRPC --host/--port): is another process using that port?") from exc
    except OSError as exc:
        ports = [f"metrics {config.metrics_host}:{config.metrics_port}"] if config.metrics_port >= 0 else []
        ports += [f"extender {config.extender_host}:{config.extender_port}"] if config.extender_port >= 0 else []
        raise OSError(
            f"cannot listen ({exc.strerror or exc}) on {' or '.join(ports) or 'a port'}: is another process using "
            f"that port? (--metrics-port/--extender-port; -1 turns them off)"
        ) from exc
    _exit_without_finalization()


def _exit_without_finalization() -> NoReturn:
    """Exit 0 after the drain, without interpreter finalization.

    Why: workers the grace cut short are daemon threads that may be inside numpy right now, and
    so may the extender's decoder and the fragmentation gauge's thread; from outside, a thread in
    native code cannot be told from an idle one. CPython before 3.14 finalizes by ending such a
    thread with ``pthread_exit`` as soon as it asks for the GIL back (python/cpython#87135).
    Inside numpy's C++ -- ``np.unique`` takes the GIL back in a destructor,
    ``np::raii::SaveThreadState`` -- that unwinding meets a noexcept frame and libstdc++ calls
    ``std::terminate``: "terminate called without an active exception", exit -6 after a clean
    drain and the ``stopped`` line. Not finalizing at all is the one way that holds for every
    thread, busy or not.

    What it skips, none of which a drained server needs: the atexit callbacks (here only
    ``logging.shutdown``, called first), buffered output (flushed first), the collection and
    teardown of the heap (sessions and mirrors: long for a large one, and not bounded by
    ``--grace``) and object finalizers (gRPC's server and channels: the kernel closes their sockets
    with the process). ``serve`` writes no files.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _check_port(host: str, port: int, flags: str) -> None:
    """Fail before starting anything when a fixed port is taken, naming it (gRPC would log and raise a generic error).

    A pre-check only: a port taken in between still fails in the server, and is reported there.
    """
    import socket

    if port <= 0 or "[" in host:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OSError(
                f"cannot listen on {host}:{port} ({flags}): {exc.strerror or exc}; is another process using that port?"
            ) from exc


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
            message, _ = rpc_failure(target, exc.code().name, f"health check: {exc.details()}", timeout=ns.timeout)
            say(message)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(status)
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


def cmd_watch(ns: argparse.Namespace) -> int:
    from sidecar.client import RepackClient
    from sidecar.watcher.runner import watch

    return watch(watch_options(ns), RepackClient(ns.sidecar) if ns.sidecar else None)
