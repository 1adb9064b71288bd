"""Builds the Cython kernels in ext/ into the sidecar package.

Every kernel has a pure-numpy twin, so the build is optional: without a C compiler (or with
REPACK_PURE_PYTHON=1) the package installs and runs on the twins. REPACK_REQUIRE_KERNELS=1 (the
image build, scripts/build-wheel-check.sh) turns that around: a kernel that does not compile -- no
compiler, no libc or Python headers, Cython missing -- fails the build instead of shipping the twins.
"""

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

KERNELS = {
    # module name inside the package : source in ext/
    "sidecar.snapshot._ledger": "ext/ledger.pyx",
    "sidecar.mirror._feasibility": "ext/feasibility.pyx",
    "sidecar.repack._receivers": "ext/receivers.pyx",
    "sidecar.repack._ranking": "ext/ranking.pyx",
    "sidecar.repack._cost": "ext/cost.pyx",
}


REQUIRE_KERNELS = os.environ.get("REPACK_REQUIRE_KERNELS") == "1"


class KernelsRequired(RuntimeError):
    """REPACK_REQUIRE_KERNELS=1 and a kernel cannot be built."""


class OptionalBuildExt(build_ext):
    """Skip kernels that fail to compile (the Python twins take over), unless REPACK_REQUIRE_KERNELS=1."""

    def run(self):
        try:
            super().run()
        except Exception as exc:
            if REQUIRE_KERNELS:
                raise KernelsRequired(f"REPACK_REQUIRE_KERNELS=1: Cython kernels not built ({exc})") from exc
            print(f"warning: Cython kernels not built ({exc}); using the Python twins", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            if REQUIRE_KERNELS:
                raise KernelsRequired(f"REPACK_REQUIRE_KERNELS=1: kernel {ext.name} not built ({exc})") from exc
            print(f"warning: kernel {ext.name} not built ({exc}); using its Python twin", file=sys.stderr)


def extensions():
    if os.environ.get("REPACK_PURE_PYTHON") == "1":
        if REQUIRE_KERNELS:
            raise KernelsRequired("REPACK_PURE_PYTHON=1 contradicts REPACK_REQUIRE_KERNELS=1")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE_KERNELS:
            raise KernelsRequired("REPACK_REQUIRE_KERNELS=1: Cython is missing") from None
        print("warning: Cython missing; using the Python twins", file=sys.stderr)
        return []
    from setuptools import Extension

    missing = [src for src in KERNELS.values() if not Path(src).exists()]
    if missing and REQUIRE_KERNELS:
        raise KernelsRequired(f"REPACK_REQUIRE_KERNELS=1: kernel sources missing: {', '.join(missing)}")
    flags = ["-O3", "-ffp-contract=off"]  # no fused multiply-add: kernels and twins agree bit for bit
    exts = [Extension(name, [src], extra_compile_args=flags) for name, src in KERNELS.items() if Path(src).exists()]
    # ext/volcano.pxd: the rules every kernel cimports (LessEqual, FutureIdle, receiver order, domain rule)
    return cythonize(exts, include_path=["ext"], compiler_directives={"language_level": "3"}, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
