"""A one-line progress display on stderr, only when stderr is a terminal (logs and pipes stay clean).

Long commands (``snapshot from-trace``, ``python -m bench.report``) would otherwise be silent for
minutes. No dependency: one carriage-return line, redrawn at most a few times a second.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``update(done, total)`` redraws ``label: 42% (420/1000) 12 s``; ``step(text)`` shows a phase name."""

    def __init__(self, label: str, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label = label
        self.start = time.monotonic()
        self._last = 0.0
        self._width = 0
        self._phase = ""

    def _draw(self, text: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        line = f"{self.label}: {text} {now - self.start:.0f} s"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def update(self, done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 100.0
        self._draw(f"{self._phase} {pct:3.0f}% ({done:,}/{total:,})".lstrip())

    def step(self, text: str) -> None:
        """A new phase: shown at once, and in front of the percentages that follow."""
        self._phase = text
        self._draw(text, force=True)

    def close(self) -> None:
        """Clear the line so the next output starts clean."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
