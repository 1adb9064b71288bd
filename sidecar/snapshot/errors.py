"""Input errors that name the offending field, so a caller can fix its snapshot."""

from __future__ import annotations


class SnapshotError(ValueError):
    """Bad input. ``field`` is a path like ``tasks[17].node``; the server maps this to INVALID_ARGUMENT."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")
