from __future__ import annotations

from sidecar.service.sessions import SessionCache
from sidecar.snapshot.decode import decode
from tests.builders import guide_twenty_nodes


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


def test_sweep_drops_expired_sessions_and_counts_them() -> None:
    clock = Clock()
    cache = SessionCache(capacity=4, ttl=10, clock=clock)
    state = decode(guide_twenty_nodes())
    short, long = cache.open(state, ttl=5), cache.open(state, ttl=20)
    assert cache.sweep() == 0
    clock.now += 6
    assert cache.sweep() == 1
    assert cache.get(short.id) is None and cache.get(long.id) is not None
    clock.now += 20
    assert cache.sweep() == 1 and cache.sweep() == 0


def test_the_server_sweeps_expired_sessions_on_a_timer(make_server) -> None:  # type: ignore[no-untyped-def]
    """No call after OpenSession: the session still goes (its state is freed) and repack_sessions falls."""
    import gc
    import time
    import weakref

    import grpc
    from prometheus_client import REGISTRY

    from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc

    srv = make_server(session_ttl_seconds=0.4)
    with grpc.insecure_channel(srv.target) as channel:
        reply = service_pb2_grpc.RepackStub(channel).OpenSession(
            service_pb2.OpenSessionRequest(snapshot=guide_twenty_nodes()), timeout=30
        )
    assert REGISTRY.get_sample_value("repack_sessions") == 1
    state = weakref.ref(srv.running.service.session(reply.session_id).state)  # no strong reference here
    end = time.monotonic() + 20
    while time.monotonic() < end and (state() is not None or REGISTRY.get_sample_value("repack_sessions") != 0):
        time.sleep(0.05)
        gc.collect()
    assert state() is None, "the expired session's state is still referenced"
    assert REGISTRY.get_sample_value("repack_sessions") == 0
