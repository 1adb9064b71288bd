"""What a real cluster could never hold, so a snapshot holding it is a caller's mistake, answered
as InputError naming the field: API-server validation of pod constraints, quantities outside
int64, task columns of different lengths."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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
    totals = matrix.sum(axis=0)  # entries are validated finite, but for pods' +inf
    over = np.flatnonzero((totals >= MAX_QUANTITY) & (totals < np.inf))
    if over.size:
        j = int(over[0])
        i = int(np.argmax(np.cumsum(matrix[:, j]) >= MAX_QUANTITY))
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
                f"task_columns.{f}",
                f"has {got} entries, expected {wanted} (one per task: task_columns.{longest} has {n})",
            )
    if (lengths["nonzero_cpu"] == 0) != (lengths["nonzero_memory"] == 0):
        empty = "nonzero_cpu" if lengths["nonzero_cpu"] == 0 else "nonzero_memory"
        raise InputError(
            f"task_columns.{empty}", f"has 0 entries, expected {n} (nonzero_cpu and nonzero_memory go together)"
        )
    return n


_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPS = (*_LABEL_OPS, "Gt", "Lt")
_WHEN_UNSATISFIABLE = ("", "DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("", "Honor", "Ignore")
_TOLERATION_OPS = ("", "Equal", "Exists")


def _one_of(path: str, value: str, allowed: tuple[str, ...], what: str, *, hint: bool = True) -> None:
    if value not in allowed:
        listed = f" ({', '.join(a for a in allowed if a)})" if hint else ""
        raise InputError(path, f'unknown {what} "{value}"{listed}')


def validate_label_selector(selector: pb.LabelSelector, path: str) -> None:
    """Operators a metav1.LabelSelector may use (the mirror evaluates nothing else)."""
    for j, req in enumerate(selector.match_expressions or ()):
        if req.operator not in _LABEL_OPS:
            _one_of(f"{path}.match_expressions[{j}].operator", req.operator, _LABEL_OPS, "operator", hint=False)


def _validate_node_term(term: pb.NodeSelectorTerm, where: str) -> None:
    for j, req in enumerate(term.match_fields or ()):
        if req.key != "metadata.name":
            raise InputError(f"{where}.match_fields[{j}].key", f'unsupported field "{req.key}" (only metadata.name)')
        if req.operator not in ("In", "NotIn"):
            raise InputError(
                f"{where}.match_fields[{j}].operator", f'"{req.operator}" is not valid for fields (In, NotIn)'
            )
        if len(req.values) != 1:
            raise InputError(
                f"{where}.match_fields[{j}].values",
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
    for j, req in enumerate(term.match_expressions or ()):
        _one_of(f"{where}.match_expressions[{j}].operator", req.operator, _NODE_OPS, "operator", hint=False)
        if req.operator in ("Gt", "Lt") and len(req.values) != 1:
            raise InputError(
                f"{where}.match_expressions[{j}].values",
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )


def _validate_pod_term(term: pb.PodAffinityTerm, where: str) -> None:
    if not term.topology_key:
        raise InputError(f"{where}.topology_key", "can not be empty")
    if term.label_selector.match_expressions:
        validate_label_selector(term.label_selector, f"{where}.label_selector")
    if term.namespace_selector.match_expressions:
        validate_label_selector(term.namespace_selector, f"{where}.namespace_selector")


def _validate_weighted_terms(weighted: Sequence[pb.WeightedPodAffinityTerm], path: str) -> None:
    for i, w in enumerate(weighted):
        _validate_weight(f"{path}[{i}].weight", w.weight)
        _validate_pod_term(w.term, f"{path}[{i}].term")


def _validate_weight(path: str, weight: int) -> None:
    if not 1 <= weight <= 100:
        raise InputError(path, f"must be in the range 1-100, got {weight}")


def validate_tolerations(tolerations: Sequence[pb.Toleration], path: str) -> None:
    """core validation's toleration rules the mirror relies on (same wording as its own check)."""
    for i, t in enumerate(tolerations or ()):
        if t.operator not in _TOLERATION_OPS:
            _one_of(f"{path}[{i}].operator", t.operator, _TOLERATION_OPS, "operator")
        if t.operator == "Exists" and t.value:
            raise InputError(f"{path}[{i}].value", "must be empty with operator Exists")
        if not t.key and t.operator != "Exists":
            raise InputError(f"{path}[{i}].key", "an empty key needs operator Exists")


def validate_profile(profile: pb.TaskProfile, path: str) -> None:
    """What the API server refuses in a pod spec and the scheduler would trip on, as InputError
    naming the field (kubernetes v1.34.1 pkg/apis/core/validation/validation.go): a matchFields
    In/NotIn without exactly one value, Gt/Lt without exactly one value, an empty topologyKey in a
    pod (anti-)affinity term or a topology spread constraint, maxSkew below 1, an unknown
    operator, whenUnsatisfiable or inclusion policy, a preferred term's weight outside 1-100, a
    matchFields key other than metadata.name, tolerations the API refuses. Found here, the error
    names the profile's field; found later by the mirror, it could only name the question asked.

    Checked once per distinct profile when a snapshot is decoded, and for inline Filter/Prioritize
    tasks; what the API server admits but the scheduler cannot parse (an invalid label value, a
    non-integer Gt bound) is not an error: the mirror's selectors make that term match nothing.
    A required node affinity with zero terms ("must have at least one node selector term") cannot
    be stated in this contract: an empty ``required_node_affinity`` means none.

    Each repeated field is tested for emptiness before it is iterated (iterating an empty
    protobuf container costs an IndexError) and a path is formatted only for a term that is
    there: a 100k-task snapshot holds thousands of profiles, most with none of these.
    """
    if profile.tolerations:
        validate_tolerations(profile.tolerations, f"{path}.tolerations")
    if profile.required_node_affinity:
        for i, term in enumerate(profile.required_node_affinity):
            _validate_node_term(term, f"{path}.required_node_affinity[{i}]")
    if profile.preferred_node_affinity:
        for i, preferred in enumerate(profile.preferred_node_affinity):
            _validate_node_term(preferred.preference, f"{path}.preferred_node_affinity[{i}].preference")
            _validate_weight(f"{path}.preferred_node_affinity[{i}].weight", preferred.weight)
    if profile.pod_affinity:
        for i, pod_term in enumerate(profile.pod_affinity):
            _validate_pod_term(pod_term, f"{path}.pod_affinity[{i}]")
    if profile.pod_anti_affinity:
        for i, pod_term in enumerate(profile.pod_anti_affinity):
            _validate_pod_term(pod_term, f"{path}.pod_anti_affinity[{i}]")
    if profile.preferred_pod_affinity:
        _validate_weighted_terms(profile.preferred_pod_affinity, f"{path}.preferred_pod_affinity")
    if profile.preferred_pod_anti_affinity:
        _validate_weighted_terms(profile.preferred_pod_anti_affinity, f"{path}.preferred_pod_anti_affinity")
    if profile.topology_spread_constraints:
        for i, c in enumerate(profile.topology_spread_constraints):
            where = f"{path}.topology_spread_constraints[{i}]"
            _one_of(f"{where}.when_unsatisfiable", c.when_unsatisfiable, _WHEN_UNSATISFIABLE, "whenUnsatisfiable")
            _one_of(f"{where}.node_affinity_policy", c.node_affinity_policy, _POLICIES, "policy")
            _one_of(f"{where}.node_taints_policy", c.node_taints_policy, _POLICIES, "policy")
            validate_label_selector(c.label_selector, f"{where}.label_selector")
            if not c.topology_key:
                raise InputError(f"{where}.topology_key", "can not be empty")
            if c.max_skew < 1:
                raise InputError(f"{where}.max_skew", f"must be greater than zero, got {c.max_skew}")


def validate_pdbs(pdbs: Sequence[pb.PodDisruptionBudget]) -> None:
    """Names, selector operators and a non-negative disruptionsAllowed (the disruption controller
    never writes less than 0), so the planner's budget checks read only sane values."""
    seen: dict[tuple[str, str], int] = {}
    for i, pdb in enumerate(pdbs):
        if not pdb.namespace:
            raise InputError(f"pdbs[{i}].namespace", "missing")
        if not pdb.name:
            raise InputError(f"pdbs[{i}].name", "missing")
        first = seen.setdefault((pdb.namespace, pdb.name), i)
        if first != i:
            raise InputError(
                f"pdbs[{i}].name",
                f'duplicate PodDisruptionBudget "{pdb.namespace}/{pdb.name}" (first at pdbs[{first}])',
            )
        if pdb.disruptions_allowed < 0:
            raise InputError(f"pdbs[{i}].disruptions_allowed", f"negative value {pdb.disruptions_allowed}")
        validate_label_selector(pdb.selector, f"pdbs[{i}].selector")
