"""The caller's deadline, checked between the steps of long work.

Every front door has its own clock (a gRPC deadline, an HTTP timeout, none on the command line);
the service only needs to know when to stop, so it takes this instead of a transport context.
"""

from __future__ import annotations

import time


class DeadlineExceeded(Exception):
    """The caller stopped waiting; raised between steps so no half-done answer goes out."""


class Deadline:
    """Seconds left when the request arrived, or ``None`` for no deadline (offline use)."""

    def __init__(self, remaining: float | None) -> None:
        self._at = None if remaining is None else time.monotonic() + remaining

    @classmethod
    def none(cls) -> Deadline:
        return cls(None)

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a deadline: for work with its own time limit."""
        return None if self._at is None else max(0.0, self._at - time.monotonic())

    def check(self, step: str) -> None:
        """Raise DeadlineExceeded naming the ``step`` that just finished, if time is up."""
        if self._at is not None and time.monotonic() > self._at:
            raise DeadlineExceeded(f"deadline exceeded after {step}")
