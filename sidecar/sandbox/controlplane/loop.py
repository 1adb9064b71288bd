"""A periodic background worker whose ``cycle`` tests can also call directly (deterministic steps)."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class Loop:
    """Calls ``cycle`` every ``period`` seconds on a daemon thread until ``stop``."""

    name = "controlplane"

    def __init__(self, period: float) -> None:
        self.period = period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one cycle at a time: the thread's and a test's never interleave

    def run_once(self) -> int:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def cycle(self) -> int:
        """One pass now (what the thread does each period); returns how many objects it changed."""
        with self._lock:
            return self.run_once()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"controlplane-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.cycle()
            except Exception:  # a bad object must not stop the component; the next cycle retries
                log.exception("%s cycle failed", self.name)
