"""ruff and mypy --strict stay clean (they are part of the test extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "tool,args",
    [
        ("ruff", ["check", "sidecar", "tests", "bench", "realcluster", "setup.py"]),
        ("ruff", ["format", "--check", "sidecar", "tests", "bench", "realcluster"]),
        ("mypy", ["sidecar", "realcluster"]),
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_tool_is_clean(tool: str, args: list[str]) -> None:
    exe = shutil.which(tool) or str(Path(sys.executable).parent / tool)
    if not Path(exe).exists():
        pytest.skip(f"{tool} not installed (pip install '.[test]')")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
