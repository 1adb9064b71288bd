"""Bounded, TTL'd cache of decoded snapshots, so a session is uploaded and decoded once.

Service state rather than transport: every front door shares the sessions the service holds.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot.state import ClusterState


@dataclass
class Session:
    id: str
    state: ClusterState
    expires_at: float  # wall clock (time.time())
    #: wall clock when the snapshot behind it was taken in (for a session's age)
    opened_at: float = 0.0
    #: built on first Filter/Prioritize and reused; calls on one session take the lock.
    mirror: Mirror | None = None
    simulation: Simulation | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class SessionCache:
    """LRU over at most ``capacity`` sessions; each expires ``ttl`` seconds after it was opened."""

    def __init__(self, capacity: int, ttl: float, clock: Callable[[], float] = time.time) -> None:
        if capacity < 1 or ttl <= 0:
            raise ValueError("capacity must be >= 1 and ttl > 0")
        self._capacity = capacity
        self._ttl = ttl
        self._clock = clock
        self._items: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, state: ClusterState, ttl: float | None = None) -> Session:
        ttl = self._ttl if not ttl or ttl <= 0 else min(ttl, self._ttl * 10)
        now = self._clock()
        session = Session(uuid.uuid4().hex, state, now + ttl, opened_at=now)
        with self._lock:
            self._expire()
            self._items[session.id] = session
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return session

    def publish(
        self, name: str, state: ClusterState, ttl: float | None = None, *, opened_at: float | None = None
    ) -> Session:
        """Replace (atomically) the session called ``name``: readers get the old one or the new one.
        ``opened_at`` (default now) keeps a re-published session's age and expiry."""
        ttl = self._ttl if not ttl or ttl <= 0 else ttl
        now = self._clock() if opened_at is None else opened_at
        session = Session(name, state, now + ttl, opened_at=now)
        with self._lock:
            self._expire()
            self._items[name] = session
            self._items.move_to_end(name)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return session

    def get(self, session_id: str) -> Session | None:
        with self._lock:
            self._expire()
            session = self._items.get(session_id)
            if session is not None:
                self._items.move_to_end(session_id)
            return session

    def close(self, session_id: str) -> bool:
        with self._lock:
            return self._items.pop(session_id, None) is not None

    def sweep(self) -> int:
        """Drop expired sessions now (a timer calls this); returns how many went."""
        with self._lock:
            before = len(self._items)
            self._expire()
            return before - len(self._items)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._items)

    def _expire(self) -> None:
        now = self._clock()
        for sid in [sid for sid, s in self._items.items() if s.expires_at <= now]:
            del self._items[sid]
