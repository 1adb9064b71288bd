"""DaemonPool: the server's worker threads, never joined at exit (``serve`` ends the process
without finalizing it: sidecar/cli/commands.py)."""

from __future__ import annotations

import threading
import time

import pytest

from sidecar.metricsport import DaemonPool


def _ended(name: str, timeout: float) -> bool:
    """Whether every thread of the pool called ``name`` ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for thread in [t for t in threading.enumerate() if t.name.startswith(f"{name}-")]:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(t.name.startswith(f"{name}-") for t in threading.enumerate())


def test_shutdown_cancels_queued_work_and_leaves_a_busy_worker_running() -> None:
    pool = DaemonPool(1, "pool-busy")
    started, release = threading.Event(), threading.Event()

    def work() -> bool:
        started.set()
        return release.wait(30)

    running = pool.submit(work)
    assert started.wait(5)
    queued = pool.submit(lambda: 1)
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    assert not _ended("pool-busy", 0.05)  # the worker is still inside abandoned work
    release.set()
    assert running.result(5) is True
    assert _ended("pool-busy", 5)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: 2)


def test_an_idle_pool_ends_its_workers_on_shutdown() -> None:
    pool = DaemonPool(3, "pool-idle")
    assert pool.submit(lambda: 7).result(5) == 7
    pool.shutdown(wait=False)
    assert _ended("pool-idle", 5)
