"""DaemonPool: the server's worker threads, never joined at exit (``serve`` asks ``idle_after``)."""

from __future__ import annotations

import threading

import pytest

from sidecar.metricsport import DaemonPool


def test_shutdown_cancels_queued_work_and_idle_after_tells_a_busy_worker() -> None:
    pool = DaemonPool(1, "t")
    started, release = threading.Event(), threading.Event()

    def work() -> bool:
        started.set()
        return release.wait(30)

    running = pool.submit(work)
    assert started.wait(5)
    queued = pool.submit(lambda: 1)
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    assert not pool.idle_after(0.05)  # the worker is still inside abandoned work
    release.set()
    assert running.result(5) is True
    assert pool.idle_after(5)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: 2)


def test_an_idle_pool_ends_its_workers_on_shutdown() -> None:
    pool = DaemonPool(3, "t")
    assert pool.submit(lambda: 7).result(5) == 7
    pool.shutdown(wait=False)
    assert pool.idle_after(5)
