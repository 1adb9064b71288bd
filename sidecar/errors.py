"""Bad input, named by its field, so a caller can fix the request rather than read a traceback."""

from __future__ import annotations

import re

#: Longest piece of user input an error message quotes; longer ones keep their head and an ellipsis.
MAX_QUOTED = 128
#: Most UTF-8 bytes kept of a field path or of a problem. gRPC sends the message percent-encoded
#: in a trailer (a non-ASCII byte takes three) and a trailer over 8-16 KiB reaches clients as
#: RESOURCE_EXHAUSTED instead of the error, so a whole message stays within about 3 KiB.
MAX_PART = 512
ELLIPSIS = "…"

#: a double-quoted piece longer than MAX_QUOTED (how messages quote names; anything else
#: unquoted is covered by MAX_PART — apostrophes in prose make single quotes ambiguous)
_QUOTED = re.compile(rf'"([^"]{{{MAX_QUOTED + 1},}})"')


def clip(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` cut to ``limit`` characters, the cut marked by an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _clip_bytes(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - len(ELLIPSIS.encode())].decode(errors="ignore") + ELLIPSIS


def bounded(text: str) -> str:
    """``text`` with every quoted piece over MAX_QUOTED characters clipped, and at most MAX_PART
    bytes long, so an error quoting a 20 KB name still fits any transport's error channel."""
    if len(text) <= MAX_QUOTED:
        return text
    quoted = _QUOTED.sub(lambda m: f'"{_clip_bytes(clip(m.group(1)), 2 * MAX_QUOTED)}"', text)
    return _clip_bytes(quoted, MAX_PART)


class InputError(ValueError):
    """Bad input at ``field`` (a path like ``tasks[17].node`` or ``spec.goals[0].resource``).

    Every front door maps it to its own "invalid argument" answer: INVALID_ARGUMENT over gRPC,
    exit code 2 on the command line, HTTP 400 on the extender, a failed condition on a RepackRun.
    Quoted input in ``field`` and ``problem`` is clipped (:func:`bounded`).
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = bounded(field)
        self.problem = bounded(problem)
        super().__init__(f"{self.field}: {self.problem}")
