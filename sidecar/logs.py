"""structlog setup: JSON lines in the container, readable console lines in a terminal."""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TextIO

import structlog


class _CurrentStderr:
    """Writes to whatever sys.stderr is now (test runners and the CLI swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` as a log event: a numpy RuntimeWarning (or any Python warning) is
    one JSON line like every other, not two raw lines that break a JSON log reader."""
    structlog.get_logger("py.warnings").warning(
        "python_warning", category=category.__name__, message=str(message), filename=filename, lineno=lineno
    )


def configure(fmt: str = "auto", level: str = "info") -> None:
    """``fmt`` is json, console or auto (console on a TTY, JSON otherwise)."""
    json_out = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json_out else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    warnings.showwarning = _log_warning
