"""One switch for every Cython kernel and its Python forms.

Each kernel in ``ext/*.pyx`` has a loop *twin* (the readable specification) and usually a
numpy *vectorised* form; tests run all three on the same inputs. Every dispatcher asks
:func:`mode` which one to run, so one ``forced(...)`` block, or ``REPACK_KERNELS=python`` in
the environment, switches all of them at once. A twin production never runs -- the kernel's
fallback is its numpy form -- lives beside its test (``tests/<package>/reference_*.py``); such a
dispatcher runs the numpy form under ``forced("twin")``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from typing import Any, Literal

Mode = Literal["kernel", "twin", "vectorised"]
MODES: tuple[Mode, ...] = ("kernel", "twin", "vectorised")

#: every compiled kernel module, each built from ext/<name>.pyx (see setup.py)
KERNEL_MODULES = (
    "sidecar.snapshot._ledger",
    "sidecar.mirror._feasibility",
    "sidecar.repack._receivers",
    "sidecar.repack._ranking",
    "sidecar.repack._cost",
)

_forced: Mode | None = None


def load(module: str) -> Any:
    """The compiled module, or None when it is not built or REPACK_KERNELS=python."""
    if os.environ.get("REPACK_KERNELS", "").lower() == "python":
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def kernels_built() -> bool:
    """Are all kernels compiled and enabled (metrics, logs and benchmarks report this)?"""
    return all(load(m) is not None for m in KERNEL_MODULES)


def mode(kernel: Any) -> Mode:
    """What a dispatcher whose compiled module is ``kernel`` (None if absent) should run now."""
    if _forced is None:
        return "vectorised" if kernel is None else "kernel"
    if _forced == "kernel" and kernel is None:
        raise RuntimeError("a Cython kernel was forced but is not built")
    return _forced


@contextlib.contextmanager
def forced(which: Mode) -> Iterator[None]:
    """Run every dispatch inside the block with one implementation."""
    global _forced
    if which not in MODES:
        raise ValueError(f"unknown kernel mode {which!r}; one of {', '.join(MODES)}")
    if which == "kernel" and not kernels_built():
        raise RuntimeError("the Cython kernels are not built")
    previous, _forced = _forced, which
    try:
        yield
    finally:
        _forced = previous
