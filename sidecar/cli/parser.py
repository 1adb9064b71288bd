"""The ``repack-sidecar`` argument parser; a usage error is one line: ``repack-sidecar: error: <flag>: <problem>``."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from sidecar.cli.demo import DEMO
from sidecar.watcher.args import watch_arguments

Handler = Callable[[argparse.Namespace], int]
PROG = "repack-sidecar"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class UsageError(Exception):
    """A bad command line: printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse prints the whole usage block before an error; a person needs the one line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument "):  # "argument --log-level: invalid choice: ..." -> "--log-level: ..."
            message = message.removeprefix("argument ")
        raise UsageError(message)


def finite_float(text: str) -> float:
    """A float flag that is a number: nan and inf are refused at parse time (range checks stay with the config)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text[:40]!r}")
    return value


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("volcano-repack-sidecar")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


def _log_flags(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--log-format", choices=("auto", "json", "console"), default=default or "auto")
    p.add_argument(
        "--log-level", type=str.lower, choices=LOG_LEVELS, default=default, help="default: info (warning for demo)"
    )


def build(handlers: Mapping[str, Handler], description: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree; ``handlers`` maps each command to its function (they live in other modules)."""
    p = OneLineParser(prog=PROG, description=description)
    p.add_argument("--version", action="version", version=f"{PROG} {version()} (Python {sys.version.split()[0]})")
    _log_flags(p, None)
    # the log flags are accepted after the command too (`serve --log-level debug`), as people write them
    common = OneLineParser(add_help=False)
    _log_flags(common, argparse.SUPPRESS)

    def leaf(subs: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return subs.add_parser(name, parents=[common], **kwargs)  # type: ignore[no-any-return]

    sub = p.add_subparsers(dest="command", required=True)

    s = leaf(sub, "serve", help="run the gRPC server")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--metrics-port", type=int, help="-1 disables /metrics")
    s.add_argument("--metrics-host")
    s.add_argument("--max-message-mib", type=finite_float)
    s.add_argument("--max-concurrent-rpcs", type=int)
    s.add_argument("--workers", type=int)
    s.add_argument("--session-ttl", type=finite_float, help="seconds")
    s.add_argument("--max-sessions", type=int)
    s.add_argument("--grace", type=finite_float, help="drain seconds on SIGTERM")
    s.add_argument("--extender-port", type=int, help="Volcano extender-plugin HTTP intake; default off, 0: a free port")
    s.add_argument("--extender-host", help="default 127.0.0.1 (the scheduler's pod)")
    s.add_argument(
        "--extender-timeout", type=finite_float, help="seconds per predicate/prioritize (Volcano's httpTimeout)"
    )
    s.add_argument("--memory-budget-mib", type=finite_float, help="estimated working memory of requests at once (1024)")
    s.set_defaults(func=handlers["serve"])

    h = leaf(sub, "health", help="check a running sidecar's health (exit 0 when SERVING)")
    h.add_argument("--target")  # default: 127.0.0.1 on the serve port
    h.add_argument("--service", default="", help='"" for the whole server, or a service name')
    h.add_argument("--timeout", type=finite_float, default=2.0)
    h.set_defaults(func=handlers["health"])

    snapshot_help = "JSON/YAML (a Snapshot or a request body {snapshot: ...}; quantity strings allowed) or .pb"
    e = leaf(sub, "evaluate", help="fragmentation per resource of a snapshot file")
    e.add_argument("--snapshot", required=True, help=snapshot_help)
    e.add_argument("--resource", action="append", help="repeatable; default: every scalar resource")
    e.add_argument("--server", help="host:port of a running sidecar (default: in-process)")
    e.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    e.add_argument("--no-headers", action="store_true", help="table without its header line")
    e.set_defaults(func=handlers["evaluate"])

    pl = leaf(sub, "plan", help="plan a RepackRun (prints its status)")
    pl.add_argument("--snapshot", required=True, help=snapshot_help)
    pl.add_argument("--run", required=True, help="RepackRun YAML, {spec: ...}, or a bare spec")
    pl.add_argument("--server", help="host:port of a running sidecar (default: in-process)")
    pl.add_argument(
        "-o", "--output", choices=("table", "wide", "json", "yaml"), default="table", help="wide: every move and node"
    )
    pl.add_argument("--no-headers", action="store_true", help="tables without their header lines")
    pl.add_argument("--html", metavar="FILE", help="also write a self-contained HTML picture of before/after")
    pl.set_defaults(func=handlers["plan"])

    dm = leaf(sub, "demo", help="plan the built-in fragmented cluster (--execute: repack one end to end)")
    dm.add_argument("--offline", action="store_true", help="skip the loopback server")
    dm.add_argument(
        "--execute",
        action="store_true",
        help="repack the guide's cluster end to end (an in-memory cluster + sidecar + watcher)",
    )
    dm.add_argument(
        "--gates",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --execute: the placement gate's webhook holds rebuilt pods until nominated (default; "
        "--no-gates shows the race without it)",
    )
    dm.set_defaults(func=handlers["demo"])

    sn = sub.add_parser("snapshot", help="snapshot tools")
    snsub = sn.add_subparsers(dest="snapshot_command", required=True)
    sy = leaf(snsub, "synth", help="generate a seeded fragmented cluster")
    sy.add_argument("--nodes", type=int, default=DEMO.nodes)
    sy.add_argument("--cards-per-node", type=int, default=DEMO.cards_per_node)
    sy.add_argument("--fill", type=finite_float, default=DEMO.fill)
    sy.add_argument("--seed", type=int, default=DEMO.seed)
    sy.add_argument("--resource", default="nvidia.com/gpu")
    sy.add_argument("--cpu-pods-per-node", type=finite_float, default=0.5)
    sy.add_argument("--out", default="-", help="file (.json, .yaml or .pb) or - for stdout (JSON)")
    sy.set_defaults(func=handlers["synth"])
    ft = leaf(snsub, "from-trace", help="replay a public trace into a snapshot (openb, dlrm)")
    ft.add_argument("trace", choices=("openb", "dlrm"))
    ft.add_argument("--traces", default="../shared/traces", help="folder holding openb/ and dlrm2025/")
    ft.add_argument("--pods-file", default="openb_pod_list_default.csv", help="openb pod list")
    ft.add_argument(
        "--fill", type=finite_float, help="stop when this fraction of cards is allocated (deletions ignored)"
    )
    ft.add_argument("--time", type=finite_float, help="stop at this trace time in seconds (creations and deletions)")
    ft.add_argument(
        "--depart-to",
        type=finite_float,
        help="churn: after --fill (the high-water mark), whole workloads depart until this card fill",
    )
    ft.add_argument(
        "--departures", choices=("random", "recorded"), default="random", help="their order (recorded: trace deletions)"
    )
    ft.add_argument("--seed", type=int, default=0, help="seed of the random departure order")
    ft.add_argument("--refill", type=finite_float, help="churn: then arrivals resume until this card fill")
    ft.add_argument("--out", default="-", help="file (.json, .yaml or .pb); default -: JSON on stdout")
    ft.set_defaults(func=handlers["from_trace"])
    w = leaf(sub, "watch", help="the RepackRun controller (DryRun) on a cluster, leader-elected")
    watch_arguments(w)
    w.set_defaults(func=handlers["watch"])
    return p
