"""Builds the Cython kernels in ext/ into the sidecar package, and ships the CRDs with it.

Every kernel has a pure-numpy twin, so the build is optional: without a C compiler (or with
REPACK_PURE_PYTHON=1) the package installs and runs on the twins. manifests/crd stays the one
source of the CRDs (kubectl apply -k uses it); the build copies them to sidecar/data/crd so
``repack-sidecar sandbox serve --load`` finds them in an installed wheel.
"""

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

CRDS = Path(__file__).resolve().parent / "manifests" / "crd"

KERNELS = {
    # module name inside the package : source in ext/
    "sidecar.snapshot._ledger": "ext/ledger.pyx",
    "sidecar.mirror._feasibility": "ext/feasibility.pyx",
    "sidecar.repack._receivers": "ext/receivers.pyx",
}


class OptionalBuildExt(build_ext):
    """Skip kernels that fail to compile; the Python twins take over."""

    def run(self):
        try:
            super().run()
        except Exception as exc:
            print(f"warning: Cython kernels not built ({exc}); using the Python twins", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"warning: kernel {ext.name} not built ({exc}); using its Python twin", file=sys.stderr)


class BuildPyWithCrds(build_py):
    """Copy manifests/crd/*_*.yaml into the built package (editable installs read manifests/ directly)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        out = Path(self.build_lib) / "sidecar" / "data" / "crd"
        out.mkdir(parents=True, exist_ok=True)
        for crd in sorted(CRDS.glob("*_*.yaml")):
            shutil.copyfile(crd, out / crd.name)


def extensions():
    if os.environ.get("REPACK_PURE_PYTHON") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython missing; using the Python twins", file=sys.stderr)
        return []
    from setuptools import Extension

    exts = [Extension(name, [src], extra_compile_args=["-O3"]) for name, src in KERNELS.items() if Path(src).exists()]
    return cythonize(exts, compiler_directives={"language_level": "3"}, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithCrds})
