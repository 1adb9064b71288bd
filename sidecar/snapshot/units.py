"""Volcano's resource units (pkg/scheduler/api/resource_info.go), defined once.

cpu is milli-cores, memory bytes, ``pods`` a plain count, every other scalar x1000.
Comparisons treat values within 0.1 as equal: :func:`less_equal`, the one Python form of Volcano's
``LessEqual`` (the kernels' form is ``less_equal`` in ``ext/volcano.pxd``, the same expression).
"""

from __future__ import annotations

from typing import overload

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

#: Resources that are always columns 0..2 of the resource axis.
BASE_RESOURCES: tuple[str, ...] = (CPU, MEMORY, PODS)
#: Resources never treated as a repack/fragmentation goal.
NON_SCALAR_GOALS = frozenset({CPU, MEMORY, PODS, EPHEMERAL_STORAGE})

#: Volcano's LessEqual tolerance (``l < r || |l - r| < minResource``).
TOLERANCE = 0.1


@overload
def less_equal(left: float, right: float, tolerance: float = TOLERANCE) -> bool: ...
@overload
def less_equal(left: F64, right: F64 | float, tolerance: float = TOLERANCE) -> Bools: ...
@overload
def less_equal(left: float, right: F64, tolerance: float = TOLERANCE) -> Bools: ...
def less_equal(left: float | F64, right: float | F64, tolerance: float = TOLERANCE) -> bool | Bools:
    """Volcano's ``LessEqual`` on one dimension: ``l < r || |l - r| < 0.1``, i.e. ``l - r < 0.1``
    (a request ``left`` fits ``right`` free). Floats or numpy arrays (elementwise, broadcasting).
    Every fit check in the package is this expression -- the kernels' ``less_equal`` in
    ``ext/volcano.pxd`` too -- so kernels and twins agree bit for bit."""
    return left - right < tolerance


#: Volcano stores every scalar resource other than cpu/memory/pods x1000.
SCALAR_FACTOR = 1000.0


def is_goal_resource(name: str) -> bool:
    """Extended/scalar resources (GPUs, NPUs, RDMA, ...) can be repack goals."""
    return name not in NON_SCALAR_GOALS and not name.startswith("hugepages-")


def to_user_units(name: str, value: float) -> float:
    """Volcano units -> the units a user writes in a manifest (cards, cores, bytes)."""
    if name == CPU:
        return value / 1000.0
    if name in (MEMORY, PODS):
        return value
    return value / SCALAR_FACTOR


def to_volcano_units(name: str, value: float) -> float:
    """Inverse of :func:`to_user_units`."""
    if name == CPU:
        return value * 1000.0
    if name in (MEMORY, PODS):
        return value
    return value * SCALAR_FACTOR


#: Quantities are int64 in Kubernetes and Volcano (milli-values for cpu and scalars): a value at or
#: over 2^63 Volcano units cannot come from a cluster, and would wrap when cast to int64.
MAX_QUANTITY = float(2**63)
