"""Hot loops of the mirror core: Cython kernels (ext/feasibility.pyx) and their numpy forms.

Without the kernels the numpy forms below run. The loops that specify both -- what is computed,
plainly -- never run in production, so they live beside their test
(tests/mirror/reference_kernels.py), which compares the three on random inputs (hypothesis).
:mod:`sidecar.dispatch` picks the implementation for every kernel at once; ``forced("twin")``
runs the numpy forms here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar import dispatch
from sidecar.snapshot.units import TOLERANCE, less_equal

F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]


_K = dispatch.load("sidecar.mirror._feasibility")


def available() -> bool:
    return _K is not None


def kernel() -> Any | None:
    """The compiled ``_feasibility`` module while it is in use (built, not switched off), else None:
    the one place it is loaded; other modules ask here (``Simulation.relocate``)."""
    return _K if dispatch.mode(_K) == "kernel" else None


# -- first insufficient resource ---------------------------------------------------------------


def first_insufficient(req: F64, free: F64, dims: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
    if dispatch.mode(_K) == "kernel":
        out = np.empty(free.shape[0], np.int16)
        _K.first_insufficient(
            np.ascontiguousarray(req, np.float64),
            np.ascontiguousarray(free, np.float64),
            np.ascontiguousarray(dims, np.intp),
            TOLERANCE,
            out,
        )
        return out
    return first_insufficient_vectorised(req, free, dims)


def first_insufficient_vectorised(req: F64, free: F64, dims: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
    """For each node, the first resource in ``dims`` order whose request does not fit (Volcano's
    LessEqual fails: req - free >= 0.1), or -1; used when the kernel is not built."""
    if dims.size == 0:
        return np.full(free.shape[0], -1, np.int16)
    bad = ~less_equal(req[dims][None, :], free[:, dims])
    any_bad = bad.any(axis=1)
    return np.where(any_bad, dims[bad.argmax(axis=1)], -1).astype(np.int16)


# -- feasible node counts per task class --------------------------------------------------------


@dataclass(frozen=True)
class ClassMasks:
    """Task classes against every node: one row per class, node masks shared between classes."""

    class_req: F64  # [C, R]
    class_dims: U8  # [C, R] dimensions LessEqual compares
    class_static: I32  # [C] -> row of static_ok
    static_ok: U8  # [S, N] node-only checks passed
    class_dynamic: I32  # [C] -> row of dynamic_ok, -1 = none
    dynamic_ok: U8  # [D, N] pod-level checks passed
    free: F64  # [N, R] FutureIdle
    pod_room: U8  # [N]

    @property
    def n_classes(self) -> int:
        return int(self.class_req.shape[0])

    def select(self, classes: npt.NDArray[np.intp]) -> ClassMasks:
        """The same masks for a subset of the classes (benchmarks time the twin on a sample)."""
        return replace(
            self,
            class_req=np.ascontiguousarray(self.class_req[classes]),
            class_dims=np.ascontiguousarray(self.class_dims[classes]),
            class_static=np.ascontiguousarray(self.class_static[classes]),
            class_dynamic=np.ascontiguousarray(self.class_dynamic[classes]),
        )


def feasible_counts_vectorised(m: ClassMasks) -> npt.NDArray[np.int64]:
    """Per task class: how many nodes pass the node-only checks, the class's dynamic mask (if
    any), the pod-count check and resource fit on the class's checked dimensions."""
    counts = np.zeros(m.n_classes, np.int64)
    room = m.pod_room.astype(bool)
    for c in range(m.n_classes):
        ok = room & m.static_ok[m.class_static[c]].astype(bool)
        if m.class_dynamic[c] >= 0:
            ok &= m.dynamic_ok[m.class_dynamic[c]].astype(bool)
        dims = np.flatnonzero(m.class_dims[c])
        if dims.size:
            ok &= less_equal(m.class_req[c, dims][None, :], m.free[:, dims]).all(axis=1)
        counts[c] = int(ok.sum())
    return counts


def feasible_counts(m: ClassMasks) -> npt.NDArray[np.int64]:
    if dispatch.mode(_K) != "kernel":
        return feasible_counts_vectorised(m)
    counts = np.empty(m.n_classes, np.int64)
    c = np.ascontiguousarray
    _K.feasible_counts(
        c(m.class_req),
        c(m.class_dims),
        c(m.class_static),
        c(m.static_ok),
        c(m.class_dynamic),
        c(m.dynamic_ok),
        c(m.free),
        c(m.pod_room),
        TOLERANCE,
        counts,
    )
    return counts
