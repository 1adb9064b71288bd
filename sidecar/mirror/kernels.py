"""Hot loops of the mirror core: Cython kernels (ext/feasibility.pyx) and their Python twins.

The twins below are the specification: plain loops that say exactly what is computed. The
kernels must return identical results (tests/test_mirror_kernels.py, hypothesis). Dispatch
picks the kernel when it is built, unless REPACK_KERNELS=python.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.snapshot.units import TOLERANCE

F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]


def _load() -> Any:
    if os.environ.get("REPACK_KERNELS", "").lower() == "python":
        return None
    try:
        from sidecar.mirror import _feasibility  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _feasibility


_K = _load()


_FORCE: str | None = None


def available() -> bool:
    return _K is not None


@contextlib.contextmanager
def forced(mode: str) -> Iterator[None]:
    """Run every dispatch with one implementation: "kernel", "twin" (the loop spec) or "vectorised"."""
    global _FORCE
    if mode not in ("kernel", "twin", "vectorised"):
        raise ValueError(mode)
    if mode == "kernel" and _K is None:
        raise RuntimeError("the Cython feasibility kernels are not built")
    previous, _FORCE = _FORCE, mode
    try:
        yield
    finally:
        _FORCE = previous


# -- first insufficient resource ---------------------------------------------------------------


def first_insufficient_twin(req: F64, free: F64, dims: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
    """For each node, the first resource in ``dims`` order with req - free >= 0.1, or -1.

    Volcano's LessEqual: l <= r  iff  l < r or |l - r| < 0.1, i.e. l - r < 0.1.
    """
    out = np.full(free.shape[0], -1, np.int16)
    for n in range(free.shape[0]):
        for d in dims:
            if req[d] - free[n, d] >= TOLERANCE:
                out[n] = d
                break
    return out


def first_insufficient(
    req: F64, free: F64, dims: npt.NDArray[np.intp], *, use_kernel: bool | None = None
) -> npt.NDArray[np.int16]:
    if use_kernel is None and _FORCE == "twin":
        return first_insufficient_twin(req, free, dims)
    if _pick(use_kernel):
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
    """numpy form of the twin, used when the kernel is not built (same result)."""
    if dims.size == 0:
        return np.full(free.shape[0], -1, np.int16)
    bad = (req[dims][None, :] - free[:, dims]) >= TOLERANCE
    any_bad = bad.any(axis=1)
    return np.where(any_bad, dims[bad.argmax(axis=1)], -1).astype(np.int16)


# -- feasible node counts per task class --------------------------------------------------------


def feasible_counts_twin(
    class_req: F64,
    class_dims: U8,
    class_static: I32,
    static_ok: U8,
    class_dynamic: I32,
    dynamic_ok: U8,
    free: F64,
    pod_room: U8,
) -> npt.NDArray[np.int64]:
    """Per task class: how many nodes pass the node-only checks, the class's dynamic mask (if
    any), the pod-count check and resource fit on the class's checked dimensions."""
    counts = np.zeros(class_req.shape[0], np.int64)
    for c in range(class_req.shape[0]):
        total = 0
        for n in range(free.shape[0]):
            if not pod_room[n] or not static_ok[class_static[c], n]:
                continue
            if class_dynamic[c] >= 0 and not dynamic_ok[class_dynamic[c], n]:
                continue
            if all(not class_dims[c, r] or class_req[c, r] - free[n, r] < TOLERANCE for r in range(free.shape[1])):
                total += 1
        counts[c] = total
    return counts


def feasible_counts_vectorised(
    class_req: F64,
    class_dims: U8,
    class_static: I32,
    static_ok: U8,
    class_dynamic: I32,
    dynamic_ok: U8,
    free: F64,
    pod_room: U8,
) -> npt.NDArray[np.int64]:
    counts = np.zeros(class_req.shape[0], np.int64)
    room = pod_room.astype(bool)
    for c in range(class_req.shape[0]):
        ok = room & static_ok[class_static[c]].astype(bool)
        if class_dynamic[c] >= 0:
            ok &= dynamic_ok[class_dynamic[c]].astype(bool)
        dims = np.flatnonzero(class_dims[c])
        if dims.size:
            ok &= ((class_req[c, dims][None, :] - free[:, dims]) < TOLERANCE).all(axis=1)
        counts[c] = int(ok.sum())
    return counts


def feasible_counts(
    class_req: F64,
    class_dims: U8,
    class_static: I32,
    static_ok: U8,
    class_dynamic: I32,
    dynamic_ok: U8,
    free: F64,
    pod_room: U8,
    *,
    use_kernel: bool | None = None,
) -> npt.NDArray[np.int64]:
    args = (class_req, class_dims, class_static, static_ok, class_dynamic, dynamic_ok, free, pod_room)
    if use_kernel is None and _FORCE == "twin":
        return feasible_counts_twin(*args)
    if _pick(use_kernel):
        counts = np.empty(class_req.shape[0], np.int64)
        c = [np.ascontiguousarray(a) for a in args]
        _K.feasible_counts(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], TOLERANCE, counts)
        return counts
    return feasible_counts_vectorised(*args)


# -- the planner's first receiver choice ----------------------------------------------------------


def best_receiver_twin(
    req: F64,
    dims: npt.NDArray[np.intp],
    free: F64,
    pod_count: npt.NDArray[np.int64],
    pod_cap: F64,
    static_ok: U8,
    allowed: U8,
    stays: U8,
    cost: F64,
    rank: npt.NDArray[np.int64],
    goal: int,
) -> int:
    """The receiver a pod with only node-level constraints goes to first: among allowed nodes
    that pass the node-only checks, the pod count and resource fit, the best by (stays occupied
    anyway, higher cost to empty later, least goal capacity left, name rank); -1 if none."""
    best, best_key = -1, (0, 0.0, 0.0, 0)
    for n in range(free.shape[0]):
        if not allowed[n] or not static_ok[n] or pod_count[n] >= pod_cap[n]:
            continue
        if any(req[d] - free[n, d] >= TOLERANCE for d in dims):
            continue
        key = (-int(stays[n]), -(0.0 if stays[n] else float(cost[n])), float(free[n, goal] - req[goal]), int(rank[n]))
        if best < 0 or key < best_key:
            best, best_key = n, key
    return best


def best_receiver_kernel_in_use() -> bool:
    """The planner takes its fast path only with the compiled kernel; otherwise it keeps its
    vectorised Python path (the loop twin above is a specification, far too slow to run)."""
    return _pick(None)


def best_receiver(
    req: F64,
    dims: npt.NDArray[np.intp],
    free: F64,
    pod_count: npt.NDArray[np.int64],
    pod_cap: F64,
    static_ok: U8,
    allowed: U8,
    stays: U8,
    cost: F64,
    rank: npt.NDArray[np.int64],
    goal: int,
    *,
    use_kernel: bool = True,
) -> int:
    args = (req, dims, free, pod_count, pod_cap, static_ok, allowed, stays, cost, rank)
    if not use_kernel:
        return best_receiver_twin(*args, goal)
    if _K is None:
        raise RuntimeError("the Cython feasibility kernels are not built")
    return int(_K.best_receiver(*[np.ascontiguousarray(a) for a in args], goal, TOLERANCE))


def _pick(use_kernel: bool | None) -> bool:
    if use_kernel is None:
        if _FORCE is not None:
            return _FORCE == "kernel"
        return _K is not None
    if use_kernel and _K is None:
        raise RuntimeError("the Cython feasibility kernels are not built")
    return use_kernel
