"""``repack-sidecar`` command line: serve, evaluate, plan, demo, snapshot synth, watch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sidecar import logs
from sidecar.api.v1alpha1 import service_pb2
from sidecar.cli import commands
from sidecar.cli.demo import cmd_demo
from sidecar.cli.failures import rpc_failure, say
from sidecar.cli.output import emit, fragmentation_table, warn
from sidecar.cli.parser import UsageError, build
from sidecar.cli.plantable import plan_table
from sidecar.errors import InputError

if TYPE_CHECKING:
    from sidecar.client import RepackClient


class CommandFailed(Exception):
    """A failure already worded for a person, with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _remote(server: str, call: str, fn: object, request: object) -> object:
    """One RPC to ``--server``; gRPC failures become one line naming the address (exit 1, or 2 for bad input)."""
    import grpc

    try:
        return fn(request)  # type: ignore[operator]
    except grpc.RpcError as exc:
        code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
        details = exc.details() if hasattr(exc, "details") else str(exc)
        message, exit_code = rpc_failure(server, code, f"{call}: {details}", timeout=CLIENT_TIMEOUT)
        raise CommandFailed(message, exit_code) from None


CLIENT_TIMEOUT = 30.0


def _client(server: str) -> RepackClient:
    from sidecar.client import RepackClient

    return RepackClient(server, timeout=CLIENT_TIMEOUT)


def cmd_evaluate(ns: argparse.Namespace) -> int:
    from sidecar.snapshot.io import load_snapshot

    request = service_pb2.EvaluateRequest(snapshot=load_snapshot(ns.snapshot), resources=ns.resource or [])
    if ns.server:
        with _client(ns.server) as client:
            response = _remote(ns.server, "Evaluate", client.evaluate, request)
        assert isinstance(response, service_pb2.EvaluateResponse)
    else:
        from sidecar.cli.offline import evaluate_offline

        response = evaluate_offline(request)
    warn(response.warnings)
    emit(response, ns.output, fragmentation_table(response, headers=not ns.no_headers))
    return 0


def cmd_plan(ns: argparse.Namespace) -> int:
    from sidecar.snapshot.io import load_repack_spec, load_snapshot

    snapshot = load_snapshot(ns.snapshot)
    spec = load_repack_spec(ns.run)
    if ns.server:
        with _client(ns.server) as client:
            reply = _remote(ns.server, "Plan", client.plan, service_pb2.PlanRequest(snapshot=snapshot, spec=spec))
        assert isinstance(reply, service_pb2.PlanResponse)
        status = reply.status
    else:
        from sidecar.cli.offline import plan_offline

        status = plan_offline(snapshot, spec)
    warn(status.warnings)
    wide = ns.output == "wide"
    emit(
        status,
        "table" if wide else ns.output,
        lambda: plan_table(status, wide=wide, headers=not ns.no_headers),
        wrap_status=True,
    )
    if ns.html:
        from sidecar.cli.htmlreport import write_report

        drawn = write_report(snapshot, spec, status, ns.html)
        print(f"wrote {ns.html}: {drawn} nodes before and after the plan", file=sys.stderr)
    return 0


HANDLERS = {
    "serve": commands.cmd_serve,
    "health": commands.cmd_health,
    "evaluate": cmd_evaluate,
    "plan": cmd_plan,
    "demo": cmd_demo,
    "synth": commands.cmd_synth,
    "from_trace": commands.cmd_from_trace,
    "watch": commands.cmd_watch,
}


def build_parser() -> argparse.ArgumentParser:
    return build(HANDLERS, __doc__)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure is one line on stderr (exit 2: usage or bad input, 1: environment)."""
    try:
        ns = build_parser().parse_args(argv)
    except UsageError as exc:
        say(str(exc))
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    logs.configure(ns.log_format, ns.log_level or ("warning" if ns.command == "demo" else "info"))
    try:
        return int(ns.func(ns))
    except InputError as exc:
        say(str(exc))
        return 2
    except CommandFailed as exc:
        say(str(exc))
        return exc.code
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        say(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
        return 2
    except OSError as exc:
        say(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
