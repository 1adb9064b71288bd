"""``serve`` exits 0 after its drain whatever is still running: a worker the grace cut short may be
inside numpy's C++ code, where interpreter finalization would abort the process (exit -6 after
``stopped``). tests/native_exit.py explains the hazard and makes it certain instead of a race."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys

import pytest

from tests.native_exit import UNIQUE_HASH
from tests.server_process import ROOT, ServeProcess

GRACE = 0.5
#: generous for a loaded 2-core machine
MARGIN = 4.0
ABORT = "terminate called without an active exception"


def test_serve_exits_0_with_a_thread_inside_numpy_at_exit() -> None:
    with ServeProcess("--metrics-port", "-1", "--grace", str(GRACE), module="tests.native_exit") as serve:
        serve.proc.send_signal(signal.SIGTERM)
        took = serve.wait_exit(timeout=60)
    log = "\n".join(serve.lines[-20:])
    assert ABORT not in log
    assert serve.proc.returncode == 0, log
    assert serve.events("stopped"), log
    assert took <= GRACE + MARGIN, f"exit took {took:.1f} s after SIGTERM (--grace {GRACE})"


@pytest.mark.skipif(sys.platform != "linux", reason="tests/native_exit.py watches the thread in /proc")
@pytest.mark.skipif(sys.version_info >= (3, 14), reason="CPython 3.14 parks such a thread instead of ending it")
@pytest.mark.skipif(UNIQUE_HASH is None, reason="numpy < 2.3: np.unique has no C++ path to abort in")
def test_finalizing_with_a_thread_inside_numpy_aborts() -> None:
    """The hazard the test above guards against, shown: the same thread, and the process ends the
    ordinary way, by finalizing the interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.native_exit"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),  # no core file in the repository
    )
    assert proc.returncode == -signal.SIGABRT, proc.stderr
    assert ABORT in proc.stderr
