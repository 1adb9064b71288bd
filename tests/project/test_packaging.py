"""What ships: the package installs without a C compiler and then runs on the Python twins; the wheel
carries the CRDs; the image's build script (scripts/build-wheel-check.sh) fails without the kernels.
The kustomize manifests are tested in tests/project/test_manifests.py and tests/project/test_manifests_rbac.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from sidecar import dispatch

ROOT = Path(__file__).resolve().parents[2]


#: two ways a kernel fails to compile: no compiler at all, or (the image's old defect: gcc without
#: libc6-dev) a compiler that finds no libc headers
BROKEN_TOOLCHAINS = {
    "no-compiler": {"CC": "/bin/false", "CXX": "/bin/false"},
    "no-libc-headers": {"CFLAGS": "-nostdinc -I/nonexistent"},
}
SCRIPT = ROOT / "scripts" / "build-wheel-check.sh"
_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "*.so", "out", "tests"
)


def source_copy(where: Path) -> Path:
    """The source tree without build leftovers: an in-tree build/ could hand a stale kernel to the wheel."""
    src = where / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    return src


@pytest.mark.parametrize("toolchain", sorted(BROKEN_TOOLCHAINS))
def test_wheel_builds_without_a_compiler(tmp_path: Path, toolchain: str) -> None:
    """Without REPACK_REQUIRE_KERNELS the package still builds (and then runs on the twins)."""
    pytest.importorskip("setuptools")
    pytest.importorskip("Cython")
    env = {**os.environ, **BROKEN_TOOLCHAINS[toolchain]}
    env.pop("REPACK_REQUIRE_KERNELS", None)
    src = source_copy(tmp_path)
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
            str(tmp_path / "wheels"),
            str(src),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".so")], "a kernel was built with no compiler?"
    assert "sidecar/data/guide-ascend.json" in names
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


# -- the image's build stage (scripts/build-wheel-check.sh, run by the Dockerfile) ---------------------
@pytest.fixture(scope="module")
def image_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, float]]:
    """scripts/build-wheel-check.sh run once per toolchain, concurrently, each on its own source copy and
    into its own clean venv: the working toolchain, and each broken one. (returncode, output, seconds)."""
    pytest.importorskip("setuptools")
    pytest.importorskip("Cython")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the kernels cannot be built")
    started: dict[str, tuple[subprocess.Popen[str], float]] = {}
    for name, extra in {"working": {}, **BROKEN_TOOLCHAINS}.items():
        where = tmp_path_factory.mktemp(name)
        env = {**os.environ, **extra, "PYTHON": sys.executable, "PIP_WHEEL_ARGS": "--no-build-isolation"}
        env.pop("REPACK_PURE_PYTHON", None)
        proc = subprocess.Popen(
            ["sh", str(SCRIPT), str(where / "wheels"), str(where / "venv"), str(source_copy(where))],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        started[name] = (proc, time.monotonic())
    done = {}
    for name, (proc, t0) in started.items():
        out, _ = proc.communicate(timeout=900)
        done[name] = (proc.returncode, out, time.monotonic() - t0)
    return done


@pytest.mark.slow
def test_the_image_build_ships_the_compiled_kernels(image_builds: dict[str, tuple[int, str, float]]) -> None:
    """The wheel carries every kernel's .so and, installed in a clean venv, kernels_built() is True."""
    code, out, seconds = image_builds["working"]
    assert code == 0, out[-4000:]
    assert (
        f"carries {len(dispatch.KERNEL_MODULES)} kernels" in out
        and "kernels_built() is True" in out
        and out.rstrip().endswith("ok")
    ), out[-2000:]
    print(f"build-wheel-check (wheel + clean venv): {seconds:.0f} s")


@pytest.mark.slow
@pytest.mark.parametrize("toolchain", sorted(BROKEN_TOOLCHAINS))
def test_the_image_build_fails_without_the_kernels(
    image_builds: dict[str, tuple[int, str, float]], toolchain: str
) -> None:
    """REPACK_REQUIRE_KERNELS=1 turns a kernel that does not compile into a failed build, before any wheel."""
    code, out, _ = image_builds[toolchain]
    assert code != 0, out[-2000:]
    assert "REPACK_REQUIRE_KERNELS=1: kernel sidecar." in out, out[-4000:]
    assert f"carries {len(dispatch.KERNEL_MODULES)} kernels" not in out


def test_the_dockerfile_runs_the_checked_build() -> None:
    """One image for both containers, built by the script above on a base with the C toolchain and the
    libc headers; the base comes from one ARG (pin it by digest: see the Dockerfile)."""
    docker = (ROOT / "Dockerfile").read_text()
    lines = [ln.strip() for ln in docker.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    froms = [ln for ln in lines if ln.startswith("FROM ")]
    assert froms == ["FROM ${PYTHON_IMAGE} AS build", "FROM ${PYTHON_IMAGE}"], froms
    (base,) = [ln for ln in lines if ln.startswith("ARG PYTHON_IMAGE=")]
    image = base.split("=", 1)[1]
    assert image.startswith("python:3.11-slim")
    if "@" in image:
        digest = image.split("@", 1)[1]
        assert digest.startswith("sha256:") and len(digest) == 71, digest
    (apt,) = [ln for ln in lines if "apt-get install" in ln]
    assert "libc6-dev" in apt.split() or "build-essential" in apt.split(), apt
    assert any("scripts/build-wheel-check.sh" in ln and ln.startswith("RUN ") for ln in lines)
    assert "COPY --from=build /opt/venv /opt/venv" in lines
    assert any(ln.startswith("USER 65532") for ln in lines), "the uid the manifests run as"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "build", "**/__pycache__", "**/*.so"} <= set(ignored), ignored
