"""``serve``'s settings are checked where the config is built, and ports that cannot be opened
fail as one line naming host:port and the flag (the CLI prints both; see tests/cli/test_cli.py)."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Iterator

import pytest

from sidecar.errors import InputError
from sidecar.server.app import start
from sidecar.server.config import ServerConfig, message_bytes_from_mib
from sidecar.server.metrics import start_metrics_server


@pytest.mark.parametrize(
    "overrides,flag,words",
    [
        ({"session_ttl_seconds": math.nan}, "--session-ttl", "finite number"),
        ({"session_ttl_seconds": 0.0}, "--session-ttl", "seconds > 0, got 0.0"),
        ({"session_ttl_seconds": math.inf}, "--session-ttl", "finite"),
        ({"max_sessions": 0}, "--max-sessions", "at least 1, got 0"),
        ({"workers": 0}, "--workers", "at least 1"),
        ({"max_concurrent_rpcs": -3}, "--max-concurrent-rpcs", "at least 1"),
        ({"shutdown_grace_seconds": -1.0}, "--grace", ">= 0"),
        ({"shutdown_grace_seconds": math.nan}, "--grace", "finite"),
        ({"port": 70000}, "--port", "0..65535"),
        ({"metrics_port": -2}, "--metrics-port", "-1 turns it off"),
        ({"extender_port": 65536}, "--extender-port", "0..65535"),
        ({"extender_timeout_seconds": 0.0}, "--extender-timeout", "> 0"),
        ({"metrics_host": ""}, "--metrics-host", "non-empty"),
        ({"max_message_bytes": 0}, "--max-message-mib", "(0, 1023]"),
        ({"memory_budget_mib": 0.5}, "--memory-budget-mib", "at least 1 MiB"),
        ({"workers": 2.5}, "--workers", "whole number"),
        ({"keepalive_time_ms": 0}, "keepalive_time_ms", "at least 1"),
    ],
)
def test_bad_settings_name_their_flag(overrides: dict[str, object], flag: str, words: str) -> None:
    with pytest.raises(InputError) as err:
        ServerConfig(**overrides)  # type: ignore[arg-type]
    assert err.value.field == flag
    assert str(err.value).startswith(f"{flag}: ") and words in str(err.value)
    assert "\n" not in str(err.value)


def test_defaults_and_edges_are_accepted() -> None:
    ServerConfig()
    ServerConfig(port=0, metrics_port=-1, extender_port=0, shutdown_grace_seconds=0.0, workers=1, max_sessions=1)


@pytest.mark.parametrize("mib", [math.nan, math.inf, 0.0, -1.0, 4096.0])
def test_max_message_mib_is_checked_before_conversion(mib: float) -> None:
    with pytest.raises(InputError, match=r"^--max-message-mib: must be a number of MiB in \(0, 1023\]"):
        message_bytes_from_mib(mib)
    assert message_bytes_from_mib(1.5) == 3 * 512 * 1024


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_grpc_port_in_use_is_one_line_naming_the_flag(taken_port: int) -> None:
    with pytest.raises(OSError) as err:
        asyncio.run(start(ServerConfig(port=taken_port, metrics_port=-1)))
    assert str(err.value) == f"--port: cannot listen on 127.0.0.1:{taken_port}: address in use or not available"


def test_metrics_port_in_use_is_one_line_naming_the_flag(taken_port: int) -> None:
    with pytest.raises(OSError) as err:
        start_metrics_server(taken_port, "127.0.0.1")
    assert str(err.value) == f"--metrics-port: cannot listen on 127.0.0.1:{taken_port}: Address already in use"


def test_extender_port_in_use_is_one_line_naming_the_flag(taken_port: int) -> None:
    async def attempt() -> None:
        await start(ServerConfig(port=0, metrics_port=-1, extender_port=taken_port))

    with pytest.raises(OSError) as err:
        asyncio.run(attempt())
    assert str(err.value) == f"--extender-port: cannot listen on 127.0.0.1:{taken_port}: Address already in use"


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["--session-ttl", "nan"], "--session-ttl"),
        (["--max-message-mib", "nan"], "--max-message-mib"),
        (["--workers", "0"], "--workers"),
        (["--memory-budget-mib", "0"], "--memory-budget-mib"),
    ],
)
def test_serve_flags_reach_the_checks_before_anything_starts(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whether the parser (NaN) or the config (0) refuses it: one line naming the flag, exit 2."""
    from sidecar.cli import main

    assert main(["serve", "--port", "0", "--metrics-port", "-1", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"repack-sidecar: error: {flag}: "), lines


def test_the_image_limits_malloc_arenas() -> None:
    from pathlib import Path

    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    runtime = dockerfile.rsplit("\nFROM ", 1)[1]
    assert "ENV MALLOC_ARENA_MAX=2" in runtime
