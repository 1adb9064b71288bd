"""Node order from resources: Volcano's binpack and Kubernetes' noderesources scorers.

Pure functions over candidate rows; :mod:`sidecar.mirror.scoring` feeds them the ledger.

* **binpack** (volcano v1.14.1 pkg/scheduler/plugins/binpack/binpack.go, BinPackingScore):
  over the resources the task requests (> 0) that carry a weight (cpu and memory always),
  ``sum_r(w_r x (req_r + used_r) / alloc_r) / sum_r w_r``. A resource the node lacks
  (allocatable 0) or with weight 0 scores 0 but its weight stays in the sum; if
  ``req_r + used_r > alloc_r`` for any of them, the **whole node** scores 0
  (ResourceBinPackingScore returns an error since v1.8.0, commit 8944bfd7b; v1.7 and earlier
  zeroed only that resource). ``used`` is Volcano's node Used: Releasing included, Pipelined not.
* **LeastAllocated / MostAllocated** (kubernetes pkg/scheduler/framework/plugins/noderesources,
  least_allocated.go, most_allocated.go; Volcano nodeorder builds them with cpu and memory, equal
  weights): integer arithmetic on Kubernetes' *non-zero* requests: the node's NonZeroRequested
  (each pod's non-zero cpu/memory) plus the pod's own; a resource with allocatable 0 is left
  out of the weighted mean.
* **BalancedAllocation** (balanced_allocation.go, resource_allocation.go at Kubernetes v1.34.1):
  ``int64((1 - std) x 100)`` over the fractions (requested + the pod) / allocatable, each capped
  at 1: two fractions -> ``|f0 - f1| / 2``, more -> population std, fewer -> 0 (so 100).
  Raw requests (useRequested: no non-zero defaults; pod overhead is part of the request);
  resources cpu, memory, nvidia.com/gpu (Volcano's nodeorder; weights ignored); a resource with
  allocatable 0 on the node, or an extended resource the pod does not request, is left out.
  A best-effort pod (every configured resource requested 0) scores 0 on every node (Volcano's
  nodeorder calls Score without PreScore; Score finds no PreScore state and returns 0 for it).
  Kubernetes 1.36 changed the formula to ``50 + (50 + with - without) // 2`` (PR #135573; see
  docs/fidelity.md, "Older and newer releases").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from sidecar.snapshot.units import BASE_RESOURCES, PODS

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
MAX_SCORE = 100
#: Volcano nodeorder: NodeResourcesFitArgs LeastAllocated cpu 50 / memory 50, MostAllocated 1 / 1
LEAST_WEIGHTS = (50, 50)
MOST_WEIGHTS = (1, 1)


def binpack(
    req: F64, used: F64, alloc: F64, resources: Sequence[str], weights: Mapping[str, int], plugin_weight: int
) -> F64:
    """Volcano's BinPackingScore per candidate row (``used``/``alloc`` are [n, R] rows)."""
    n = used.shape[0]
    score = np.zeros(n)
    overflow = np.zeros(n, bool)
    weight_sum = 0
    for r, name in enumerate(resources):
        if name == PODS:
            continue  # Volcano's Resreq has no pods dimension (MaxTaskNum)
        request = float(req[r])
        w = weights.get(name)
        if request == 0 or w is None:
            continue
        weight_sum += w
        cap = alloc[:, r]
        if w == 0:
            continue
        final = request + used[:, r]
        has = cap > 0
        overflow |= has & (final > cap)
        score += np.where(has & (final <= cap), final * w / np.where(has, cap, 1.0), 0.0)
    if weight_sum > 0:
        score /= weight_sum
    out: F64 = np.where(overflow, 0.0, score * float(MAX_SCORE * plugin_weight))
    return out


def _int_div(a: I64, b: I64) -> I64:
    """Go's int64 division truncates toward zero; every operand here is non-negative."""
    return np.where(b > 0, a // np.maximum(b, 1), 0)


def _weighted(per: I64, cap: I64, weights: tuple[int, int]) -> F64:
    """Kubernetes' weighted mean of per-resource scores, resources with allocatable 0 left out."""
    w = np.where(cap > 0, np.array(weights, np.int64)[None, :], 0)
    total = (per * w).sum(axis=1)
    wsum = w.sum(axis=1)
    return _int_div(total, wsum).astype(float)


def fit_scores(node_nonzero: F64, pod_nonzero: F64, alloc: F64) -> tuple[F64, F64]:
    """(LeastAllocated, MostAllocated) per row from [n, 2] (cpu, memory) non-zero requests."""
    cap = np.rint(alloc).astype(np.int64)
    want = np.rint(node_nonzero + pod_nonzero[None, :]).astype(np.int64)
    least = np.where(want > cap, 0, _int_div((cap - want) * MAX_SCORE, cap))
    most = _int_div(np.minimum(want, cap) * MAX_SCORE, cap)
    return _weighted(least, cap, LEAST_WEIGHTS), _weighted(most, cap, MOST_WEIGHTS)


def _balance(fractions: F64) -> I64:
    """BalancedAllocation's score per column of ``fractions`` [k, n] (NaN = left out)."""
    valid = ~np.isnan(fractions)
    count = valid.sum(axis=0)
    cols = np.arange(fractions.shape[1])
    first = fractions[valid.argmax(axis=0), cols]
    last = fractions[fractions.shape[0] - 1 - valid[::-1].argmax(axis=0), cols]
    mean = np.nansum(fractions, axis=0) / np.maximum(count, 1)
    spread = np.sqrt(np.nansum((fractions - mean) ** 2, axis=0) / np.maximum(count, 1))
    std = np.where(count == 2, np.abs(first - last) / 2, np.where(count > 2, spread, 0.0))
    out: I64 = np.floor((1 - std) * MAX_SCORE).astype(np.int64)  # int64() truncation, std <= 1
    return out


def balanced(requested: F64, pod_req: F64, alloc: F64, columns: Sequence[tuple[str, int]]) -> F64 | None:
    """BalancedAllocation per row; None when the pod is best effort (the plugin is skipped).

    ``requested`` [n, R]: the node's raw requested sum (every pod on it, pipelined included);
    ``columns``: (name, column) of the configured resources present on the resource axis.
    """
    n = requested.shape[0]
    if all(pod_req[r] == 0 for _, r in columns):
        return None
    with_pod = []
    for name, r in columns:
        pod = float(pod_req[r])
        if name not in BASE_RESOURCES and pod == 0:
            continue  # an extended resource the pod does not request is left out
        cap = alloc[:, r]
        has = cap > 0
        safe = np.where(has, cap, 1.0)
        with_pod.append(np.where(has, np.minimum((requested[:, r] + pod) / safe, 1.0), np.nan))
    if not with_pod:
        return np.full(n, float(MAX_SCORE))
    out: F64 = _balance(np.vstack(with_pod)).astype(float)
    return out
