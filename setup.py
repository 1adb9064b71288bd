"""Builds the Cython kernels in ext/ into the sidecar package.

Every kernel has a pure-numpy twin, so the build is optional: without a C compiler (or with
REPACK_PURE_PYTHON=1) the package installs and runs on the twins.
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


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
