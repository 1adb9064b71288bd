"""What ships: the package installs without a C compiler and then runs on the Python twins; the wheel
carries the CRDs; the image's build script (scripts/build-wheel-check.sh) fails without the kernels.
The kustomize manifests are tested in tests/test_manifests.py and tests/test_manifests_rbac.py."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_builds_without_a_compiler(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    pytest.importorskip("Cython")
    env = {**os.environ, "CC": "/bin/false", "CXX": "/bin/false"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".so")], "a kernel was built with no compiler?"
    assert "sidecar/data/guide-ascend.json" in names
    for crd in ("repack.volcano.sh_repackruns", "scheduling.volcano.sh_podgroups", "batch.volcano.sh_jobs"):
        assert f"sidecar/data/crd/{crd}.yaml" in names, "sandbox serve --load registers these CRDs"
    assert "sidecar/api/v1alpha1/service_pb2.pyi" in names
    assert "sidecar/py.typed" in names


def test_python_twins_answer_like_the_kernels() -> None:
    code = (
        "from sidecar.dispatch import kernels_built; assert not kernels_built();"
        "from sidecar.cli import main; raise SystemExit(main(['evaluate', '--snapshot', "
        "'sidecar/data/guide-ascend.json', '-o', 'json']))"
    )
    twin = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "REPACK_KERNELS": "python"},
    )
    assert twin.returncode == 0, twin.stderr
    default = subprocess.run(
        [sys.executable, "-m", "sidecar", "evaluate", "--snapshot", "sidecar/data/guide-ascend.json", "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert twin.stdout == default.stdout
