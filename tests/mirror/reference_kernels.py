"""The specifications of the mirror's hot loops (sidecar/mirror/kernels.py): plain loops that say
exactly what the Cython kernels (ext/feasibility.pyx) and the numpy forms compute. Production never
runs them (without the kernels the numpy forms run), so they live here, beside their test
(test_mirror_kernels.py compares all three on random inputs)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.mirror.kernels import ClassMasks
from sidecar.snapshot.units import less_equal

F64 = npt.NDArray[np.float64]


def first_insufficient(req: F64, free: F64, dims: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
    """For each node, the first resource in ``dims`` order whose request does not fit, or -1.

    Volcano's LessEqual: l <= r  iff  l < r or |l - r| < 0.1, i.e. l - r < 0.1.
    """
    out = np.full(free.shape[0], -1, np.int16)
    for n in range(free.shape[0]):
        for d in dims:
            if not less_equal(float(req[d]), float(free[n, d])):
                out[n] = d
                break
    return out


def feasible_counts(m: ClassMasks) -> npt.NDArray[np.int64]:
    """Per task class: how many nodes pass the node-only checks, the class's dynamic mask (if
    any), the pod-count check and resource fit on the class's checked dimensions."""
    counts = np.zeros(m.n_classes, np.int64)
    for c in range(m.n_classes):
        total = 0
        for n in range(m.free.shape[0]):
            if not m.pod_room[n] or not m.static_ok[m.class_static[c], n]:
                continue
            if m.class_dynamic[c] >= 0 and not m.dynamic_ok[m.class_dynamic[c], n]:
                continue
            if all(
                not m.class_dims[c, r] or less_equal(float(m.class_req[c, r]), float(m.free[n, r]))
                for r in range(m.free.shape[1])
            ):
                total += 1
        counts[c] = total
    return counts
