"""A process that ends with a thread inside numpy's C++ code, for the exit tests.

``python -m tests.native_exit [ARGS]`` starts a daemon thread that spends its life inside numpy's
hash-based unique (numpy >= 2.3: ``np.unique`` releases the GIL in C++ and takes it back in a
destructor, ``np::raii::SaveThreadState``), as a Plan's worker cut short by ``--grace`` may be
(the repack planner's fragmentation step calls ``np.unique``). With ARGS it then runs
``repack-sidecar ARGS`` in this process; without, it just returns.

Either way, if the interpreter is finalized, an object that only finalization drops (a module
of ``sys.modules`` nothing else refers to) holds it until that thread is gone. CPython before
3.14 ends a daemon thread that asks for the GIL during finalization with ``pthread_exit``;
unwinding out of the noexcept destructor calls ``std::terminate``: "terminate called without an
active exception", SIGABRT (exit -6). The wait makes that certain instead of a race with the end
of the process (python/cpython#87135).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

UNIQUE_HASH: Callable[..., Any] | None
try:  # the C++ function behind ``np.unique`` (numpy >= 2.3), called directly: no copy of the input first
    from numpy._core._multiarray_umath import _unique_hash as UNIQUE_HASH
except ImportError:
    UNIQUE_HASH = None


def _inside_numpy(native_id: list[int], ready: threading.Event) -> None:
    # few distinct values: ~0.1 s of hashing a call, and between calls the GIL is held for
    # microseconds only, so the thread asks for it back from inside the C++ code, not elsewhere
    values = np.random.default_rng(0).integers(0, 100, 20_000_000, dtype=np.int8)
    unique = UNIQUE_HASH or np.unique
    native_id.append(threading.get_native_id())
    ready.set()
    while True:
        unique(values)


class _HoldFinalization:
    """Dropped with its module when finalization clears ``sys.modules``: CPython has begun
    finalizing by then, so a thread asking for the GIL is ended rather than given it."""

    def __init__(self, native_id: list[int]) -> None:
        self.native_id = native_id

    def __del__(self, _stat: Callable[[str], Any] = os.stat, _sleep: Callable[[float], None] = time.sleep) -> None:
        for _ in range(2000):  # until the thread is gone (or 20 s)
            try:
                _stat(f"/proc/self/task/{self.native_id[0]}")
            except OSError:
                return
            _sleep(0.01)


def start() -> None:
    native_id: list[int] = []
    ready = threading.Event()
    threading.Thread(target=_inside_numpy, args=(native_id, ready), name="inside-numpy", daemon=True).start()
    ready.wait(30)
    time.sleep(0.02)  # inside the first call
    holder = types.ModuleType("tests_native_exit_holder")
    holder.hold = _HoldFinalization(native_id)
    sys.modules[holder.__name__] = holder


if __name__ == "__main__":
    start()
    if len(sys.argv) > 1:
        from sidecar.cli import main

        sys.exit(main(sys.argv[1:]))
