"""The committed Go code (go/api/v1alpha1) matches proto/ (regenerate: go/scripts/codegen.sh).

Mirrors tests/project/test_codegen_drift.py for the Go side. The tools are pinned: protoc-gen-go and
protoc-gen-go-grpc by go/tools/go.mod (built from the module proxy), protoc by the test extra's
grpcio-tools. Without Go the test skips saying so, except under CI, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GO = ROOT / "go"
GENERATED = GO / "api" / "v1alpha1"


def require_go() -> None:
    """Skip the caller without a ``go`` command (Go >= 1.26 and the module proxy); fail under CI."""
    if shutil.which("go") is None:
        if os.environ.get("CI"):
            pytest.fail("go not found: CI must build the Go module (Go >= 1.26)")
        pytest.skip("go not found: the Go module needs Go >= 1.26 and the module proxy")


def test_generated_go_code_matches_the_protos(tmp_path: Path) -> None:
    require_go()
    proc = subprocess.run(
        [str(GO / "scripts" / "codegen.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    fresh = {p.name: p.read_text() for p in (tmp_path / "api" / "v1alpha1").iterdir()}
    committed = {p.name: p.read_text() for p in GENERATED.iterdir() if p.is_file()}
    assert sorted(fresh) == sorted(committed), "file set differs: run go/scripts/codegen.sh"
    for name, text in fresh.items():
        assert committed[name] == text, f"go/api/v1alpha1/{name} is stale: run go/scripts/codegen.sh"
