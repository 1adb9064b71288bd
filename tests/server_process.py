"""A real ``repack-sidecar serve`` in a subprocess, for the tests that need its signals and exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]


class ServeProcess:
    """``serve`` on free ports (read back from its JSON log); ``lines`` collects that log. ``module``
    is what ``python -m`` runs: ``sidecar``, or a test module that wraps its command line."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 60.0, module: str = "sidecar"
    ) -> None:
        cmd = [sys.executable, "-m", module, "--log-format", "json", "serve", "--port", "0", *args]
        environ = {**os.environ, **(env or {})}
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environ
        )
        self.lines: list[str] = []
        self._serving = threading.Event()
        self.target = ""
        threading.Thread(target=self._read, daemon=True).start()
        if not self._serving.wait(timeout):
            self.kill()
            raise RuntimeError("serve did not start:\n" + "\n".join(self.lines[-20:]))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "serving":
                self.target = event["address"]
                self._serving.set()

    def events(self, name: str) -> list[dict[str, object]]:
        out = []
        for line in list(self.lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == name:
                out.append(event)
        return out

    def wait_exit(self, timeout: float) -> float:
        """Seconds until the process exited (raises subprocess.TimeoutExpired after ``timeout``)."""
        start = time.monotonic()
        self.proc.wait(timeout)
        return time.monotonic() - start

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()
