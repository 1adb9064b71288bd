"""Issue 13 item 8, the command line's half: every usage, config and environment error is one line
(``repack-sidecar: error: <field>: <problem>``), exit 2 for usage/bad input, 1 for the environment."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.cli import main
from sidecar.errors import InputError

GUIDE = "sidecar/data/guide-ascend.json"
RUN = "sidecar/data/guide-ascend-dryrun.yaml"


def one_error_line(err: str) -> str:
    """The stderr of a failed command: exactly one error line and no traceback."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("repack-sidecar: error: ")]
    assert len(lines) == 1, err
    return lines[0].removeprefix("repack-sidecar: error: ")


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--log-level", "loud", "evaluate", "--snapshot", GUIDE], "--log-level: invalid choice: 'loud'"),
        (["evaluate", "--snapshot", GUIDE, "--log-level", "loud"], "--log-level: invalid choice: 'loud'"),
        (["serve", "--session-ttl", "nan"], "--session-ttl: must be a finite number, got 'nan'"),
        (["serve", "--grace", "inf"], "--grace: must be a finite number"),
        (["serve", "--workers", "four"], "--workers: invalid int value: 'four'"),
        (["plan", "--snapshot", GUIDE], "the following arguments are required: --run"),
        (["evaluate", "--snapshot", GUIDE, "--colour"], "unrecognized arguments: --colour"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert expected in one_error_line(captured.err)
    assert "usage:" not in captured.err


def test_log_flags_are_case_insensitive_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log-level", "WARNING", "evaluate", "--snapshot", GUIDE]) == 0
    assert "33.3%" in capsys.readouterr().out
    assert main(["evaluate", "--snapshot", GUIDE, "--log-level", "Error", "--log-format", "json"]) == 0  # after it too
    assert "33.3%" in capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip().startswith(f"repack-sidecar {version('volcano-repack-sidecar')} ")


def test_a_config_input_error_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The server config raises InputError for values it refuses (e.g. --session-ttl 0); main words it."""
    from sidecar.server import config

    real = config.ServerConfig

    def strict(**kwargs: Any) -> config.ServerConfig:
        if kwargs.get("session_ttl_seconds", 1) <= 0:
            raise InputError("--session-ttl", "must be a positive number of seconds, got 0")
        return real(**kwargs)

    monkeypatch.setattr(config, "ServerConfig", strict)
    assert main(["serve", "--session-ttl", "0", "--port", "0", "--metrics-port", "-1"]) == 2
    assert one_error_line(capsys.readouterr().err) == "--session-ttl: must be a positive number of seconds, got 0"


def test_grpc_port_in_use_is_one_line_exit_1(busy_port: int, capfd: pytest.CaptureFixture[str]) -> None:
    """capfd: gRPC's C core logs on file descriptor 2, beneath Python's sys.stderr."""
    argv = ["--log-level", "error", "serve", "--port", str(busy_port), "--metrics-port", "-1"]
    assert main(argv) == 1
    captured = capfd.readouterr().err
    line = one_error_line(captured)
    assert f"cannot listen on 127.0.0.1:{busy_port} (--host/--port)" in line and "another process" in line
    assert "Failed to add port" not in captured  # checked before gRPC starts: no gRPC log line either


def test_metrics_port_in_use_is_one_line_exit_1(busy_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--log-level", "error", "serve", "--port", "0", "--metrics-port", str(busy_port)]
    argv += ["--metrics-host", "127.0.0.1"]
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line == (
        f"cannot listen on 127.0.0.1:{busy_port} (--metrics-host/--metrics-port): Address already in use; "
        "is another process using that port?"
    )


@pytest.mark.parametrize("command", ["evaluate", "plan"])
def test_an_unreachable_server_names_the_address(
    command: str, closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{closed_port}"
    argv = [command, "--snapshot", GUIDE, "--server", target] + (["--run", RUN] if command == "plan" else [])
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"{target}: the sidecar did not answer") and "UNAVAILABLE" in line
    assert "repack-sidecar serve" in line


def test_health_of_an_unreachable_server(closed_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "--target", f"127.0.0.1:{closed_port}", "--timeout", "2"]) == 1
    assert one_error_line(capsys.readouterr().err).startswith(f"127.0.0.1:{closed_port}: the sidecar did not answer")


def test_missing_files_are_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--snapshot", str(tmp_path / "nope.json")]) == 2
    assert one_error_line(capsys.readouterr().err) == f"{tmp_path / 'nope.json'}: No such file or directory"
    assert main(["plan", "--snapshot", GUIDE, "--run", str(tmp_path)]) == 2
    assert "Is a directory" in one_error_line(capsys.readouterr().err)
