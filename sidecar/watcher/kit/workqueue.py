"""client-go's work queue, for RepackRun names.

A name is queued at most once however many events ask for it; a name added while it is being
processed is processed again afterwards, never twice at once; a name that failed comes back
after its own exponential backoff (``add_rate_limited``) until ``forget`` resets it. A name
waits for at most one delayed add, the earliest asked for (client-go's delaying queue): every
reconcile asks to come back at its next deadline, and those requests do not pile up.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque

from sidecar.watcher.kit.informer import Backoff


class WorkQueue:
    def __init__(self, backoff: Backoff | None = None) -> None:
        self.backoff = backoff or Backoff(initial=0.5, cap=60.0)
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()  # queued, or to be queued again once processed
        self._processing: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []  # (due, tiebreak, name); stale entries skipped
        self._due: dict[str, float] = {}  # name -> the one delayed add it waits for
        self._order = itertools.count()
        self._failures: dict[str, int] = {}
        self._woken = False

    def add(self, name: str) -> None:
        with self._cond:
            if name in self._dirty:
                return
            self._dirty.add(name)
            if name not in self._processing:
                self._queue.append(name)
                self._cond.notify()

    def add_after(self, name: str, delay: float) -> None:
        if delay <= 0:
            self.add(name)
            return
        with self._cond:
            due = time.monotonic() + delay
            if self._due.get(name, float("inf")) <= due:
                return  # an earlier delayed add is pending: it covers this one
            self._due[name] = due
            heapq.heappush(self._delayed, (due, next(self._order), name))
            self._cond.notify()

    def add_rate_limited(self, name: str) -> float:
        """Queue ``name`` again after its backoff (which grows with each failure); returns the delay."""
        with self._cond:
            self._failures[name] = self._failures.get(name, 0) + 1
            delay = self.backoff.delay(self._failures[name])
        self.add_after(name, delay)
        return delay

    def forget(self, name: str) -> None:
        with self._cond:
            self._failures.pop(name, None)

    def failures(self, name: str) -> int:
        with self._cond:
            return self._failures.get(name, 0)

    def get(self, timeout: float) -> str | None:
        """The next name to process (mark it ``done`` after), or None after ``timeout`` or a ``wake``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote()
                if self._queue:
                    name = self._queue.popleft()
                    self._dirty.discard(name)
                    self._processing.add(name)
                    return name
                now = time.monotonic()
                if self._woken or now >= deadline:
                    self._woken = False
                    return None
                left = deadline - now
                if self._delayed:
                    left = min(left, self._delayed[0][0] - now)
                self._cond.wait(max(0.0, left))

    def done(self, name: str) -> None:
        with self._cond:
            self._processing.discard(name)
            if name in self._dirty:
                self._queue.append(name)
                self._cond.notify()

    def wake(self) -> None:
        """Make the current or next ``get`` return None at once (the worker then checks whether to stop)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def clear(self) -> None:
        """Drop everything queued or delayed (leadership lost: the next leader starts from the cache)."""
        with self._cond:
            self._queue.clear()
            self._dirty.clear()
            self._delayed.clear()
            self._due.clear()
            self._failures.clear()
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue) + len(self._due)

    def _promote(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, name = heapq.heappop(self._delayed)
            if self._due.get(name) != due:
                continue  # replaced by an earlier add
            del self._due[name]
            if name not in self._dirty:
                self._dirty.add(name)
                if name not in self._processing:
                    self._queue.append(name)
