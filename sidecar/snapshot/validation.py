"""API-server validation of pod constraints that the snapshot carries (what a real cluster could
never hold, so a snapshot holding it is a caller's mistake, answered as InputError)."""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError


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
