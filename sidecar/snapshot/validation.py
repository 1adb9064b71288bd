"""What a real cluster could never hold, so a snapshot holding it is a caller's mistake, answered
as InputError naming the field: API-server validation of pod constraints, quantities outside
int64, task columns of different lengths."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.snapshot.units import MAX_QUANTITY


def quantity(path: str, value: float) -> float:
    if not math.isfinite(value):
        raise InputError(path, f"quantity must be finite, got {value}")
    if value < 0:
        raise InputError(path, f"negative quantity {value:g}")
    if value >= MAX_QUANTITY:
        raise InputError(path, f"quantity {value:.4g} is not below 2^63 (int64 in Volcano units)")
    return value


def check_quantities(path: str, values: np.ndarray) -> None:
    """Every value finite, non-negative and below 2^63; ``path`` gets the first bad one's index."""
    bad = np.flatnonzero(~(values >= 0) | ~(values < MAX_QUANTITY))  # NaN fails both
    if bad.size:
        i = int(bad[0])
        quantity(f"{path}[{i}]", float(values[i]))


def check_totals(row: Callable[[int, str], str], matrix: np.ndarray, resources: tuple[str, ...], what: str) -> None:
    """Sums over rows stay below 2^63 in every column (pods' +inf excepted), so no int64 sum of any
    subset (a node's load, a cluster's allocation) can wrap; names the row where a total passes it."""
    finite = np.where(np.isfinite(matrix), matrix, 0.0)
    over = np.flatnonzero(finite.sum(axis=0) >= MAX_QUANTITY)
    if over.size:
        j = int(over[0])
        i = int(np.argmax(np.cumsum(finite[:, j]) >= MAX_QUANTITY))
        raise InputError(row(i, resources[j]), f'the total {what} of "{resources[j]}" reaches 2^63 Volcano units here')


#: TaskColumns' per-task columns: every one holds one entry per column task
_REQUIRED_COLUMNS = ("uid", "name", "namespace", "node", "status", "pod_group", "priority", "profile")
#: per-task columns that may also be left empty (nonzero_cpu and nonzero_memory only together)
_OPTIONAL_COLUMNS = ("role", "nonzero_cpu", "nonzero_memory")


def column_count(cols: pb.TaskColumns) -> int:
    """How many column tasks there are: the longest column, which every required column must
    match (an optional one may be empty). A short column would otherwise shift or drop values."""
    lengths = {f: len(getattr(cols, f)) for f in _REQUIRED_COLUMNS + _OPTIONAL_COLUMNS}
    lengths.update({f"requests[{j}].values": len(c.values) for j, c in enumerate(cols.requests)})
    longest = max(lengths, key=lambda f: lengths[f])
    n = lengths[longest]
    if n == 0:
        return 0
    for f, got in lengths.items():
        optional = f in _OPTIONAL_COLUMNS and got == 0
        if got != n and not optional:
            wanted = f"0 or {n}" if f in _OPTIONAL_COLUMNS else str(n)
            raise InputError(
                f"task_columns.{f}", f"{got} entries, expected {wanted} (one per task: task_columns.{longest} has {n})"
            )
    if (lengths["nonzero_cpu"] == 0) != (lengths["nonzero_memory"] == 0):
        empty = "nonzero_cpu" if lengths["nonzero_cpu"] == 0 else "nonzero_memory"
        raise InputError(
            f"task_columns.{empty}", f"0 entries, expected {n} (nonzero_cpu and nonzero_memory go together)"
        )
    return n


def validate_profile(profile: pb.TaskProfile, path: str) -> None:
    """What the API server refuses in a pod spec and the scheduler would trip on, as InputError
    naming the field (kubernetes v1.36.1 pkg/apis/core/validation/validation.go): a matchFields
    In/NotIn without exactly one value, Gt/Lt without exactly one value, an empty topologyKey in a
    pod (anti-)affinity term or a topology spread constraint, maxSkew below 1.

    Checked once per distinct profile when a snapshot is decoded, and for inline Filter/Prioritize
    tasks; what the API server admits but the scheduler cannot parse (an invalid label value, a
    non-integer Gt bound) is not an error: the mirror's selectors make that term match nothing.
    A required node affinity with zero terms ("must have at least one node selector term") cannot
    be stated in this contract: an empty ``required_node_affinity`` means none.
    """
    if not (
        profile.required_node_affinity
        or profile.preferred_node_affinity
        or profile.pod_affinity
        or profile.pod_anti_affinity
        or profile.preferred_pod_affinity
        or profile.preferred_pod_anti_affinity
        or profile.topology_spread_constraints
    ):
        return  # most profiles carry none of what is checked
    terms = [(f"{path}.required_node_affinity[{i}]", t) for i, t in enumerate(profile.required_node_affinity)]
    terms += [
        (f"{path}.preferred_node_affinity[{i}].preference", t.preference)
        for i, t in enumerate(profile.preferred_node_affinity)
    ]
    for where, term in terms:
        for j, req in enumerate(term.match_fields):
            if req.operator in ("In", "NotIn") and len(req.values) != 1:
                raise InputError(
                    f"{where}.match_fields[{j}].values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
        for j, req in enumerate(term.match_expressions):
            if req.operator in ("Gt", "Lt") and len(req.values) != 1:
                raise InputError(
                    f"{where}.match_expressions[{j}].values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
    pod_terms = [(f"{path}.pod_affinity[{i}]", t) for i, t in enumerate(profile.pod_affinity)]
    pod_terms += [(f"{path}.pod_anti_affinity[{i}]", t) for i, t in enumerate(profile.pod_anti_affinity)]
    pod_terms += [
        (f"{path}.preferred_pod_affinity[{i}].term", w.term) for i, w in enumerate(profile.preferred_pod_affinity)
    ]
    pod_terms += [
        (f"{path}.preferred_pod_anti_affinity[{i}].term", w.term)
        for i, w in enumerate(profile.preferred_pod_anti_affinity)
    ]
    for where, pod_term in pod_terms:
        if not pod_term.topology_key:
            raise InputError(f"{where}.topology_key", "can not be empty")
    for i, c in enumerate(profile.topology_spread_constraints):
        if not c.topology_key:
            raise InputError(f"{path}.topology_spread_constraints[{i}].topology_key", "can not be empty")
        if c.max_skew < 1:
            raise InputError(
                f"{path}.topology_spread_constraints[{i}].max_skew", f"must be greater than zero, got {c.max_skew}"
            )
