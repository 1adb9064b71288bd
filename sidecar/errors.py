"""Bad input, named by its field, so a caller can fix the request rather than read a traceback."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input at ``field`` (a path like ``tasks[17].node`` or ``spec.goals[0].resource``).

    Every front door maps it to its own "invalid argument" answer: INVALID_ARGUMENT over gRPC,
    exit code 2 on the command line, HTTP 400 on the extender, a failed condition on a RepackRun.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")
