from __future__ import annotations

from builders import guide_twenty_nodes

from sidecar.service.sessions import SessionCache
from sidecar.snapshot.decode import decode


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ttl_expiry_and_lru_bound() -> None:
    clock = Clock()
    cache = SessionCache(capacity=2, ttl=10, clock=clock)
    state = decode(guide_twenty_nodes())
    a = cache.open(state)
    b = cache.open(state)
    assert cache.get(a.id) is not None  # a is now most recently used
    c = cache.open(state)  # evicts b, the least recently used
    assert cache.get(b.id) is None
    assert cache.get(a.id) is not None and cache.get(c.id) is not None
    clock.now += 10.5
    assert cache.get(a.id) is None and len(cache) == 0


def test_per_session_ttl_is_capped_and_close_is_idempotent() -> None:
    clock = Clock()
    cache = SessionCache(capacity=4, ttl=10, clock=clock)
    s = cache.open(decode(guide_twenty_nodes()), ttl=10_000)
    assert s.expires_at == clock.now + 100  # at most 10x the server default
    assert cache.close(s.id) and not cache.close(s.id)
