"""sidecar/heap.py: the collector pause nests, overlaps across threads and restores the caller's
setting; decode and the planner run under it and leave the collector as they found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from sidecar import heap
from sidecar.errors import InputError
from sidecar.snapshot.decode import decode
from tests.plan_cases import Cluster, moves, plan


@pytest.fixture(params=[True, False], ids=["enabled", "disabled"])
def setting(request: pytest.FixtureRequest) -> Iterator[bool]:
    (gc.enable if request.param else gc.disable)()
    try:
        yield request.param
    finally:
        gc.enable()


def test_nested_pauses_restore_the_setting_when_the_outer_ends(setting: bool) -> None:
    with heap.collection_paused():
        assert not gc.isenabled()
        with heap.collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is still active
    assert gc.isenabled() is setting


def test_overlapping_pauses_in_threads_keep_the_collector_off_until_the_last_ends(setting: bool) -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with heap.collection_paused():
            entered.set()
            release.wait(10)
            seen.append(gc.isenabled())

    with heap.collection_paused():
        thread = threading.Thread(target=other)
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the thread's pause outlives this one
    release.set()
    thread.join(10)
    assert seen == [False]
    assert gc.isenabled() is setting


def test_decode_and_plan_leave_the_collector_as_they_found_it(setting: bool) -> None:
    """Whether they succeed or refuse the input."""
    cluster = Cluster().node("a").node("b").group("g", 1).pod("p", "a", 4, "g").pod("q", "b", 2, "g")
    status = plan(cluster)
    assert gc.isenabled() is setting
    assert moves(status) == [("q", "b", "a")]
    cluster.snap.nodes[0].name = ""
    with pytest.raises(InputError):
        decode(cluster.snap)
    assert gc.isenabled() is setting
