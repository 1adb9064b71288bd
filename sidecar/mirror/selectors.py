"""Label selectors, node selector terms and tolerations: Kubernetes semantics, defined once.

Node-side checks are vectorised over all nodes through :class:`NodeLabels` (one interned code
column per label key); pod-side checks work on plain label dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError

Mask = npt.NDArray[np.bool_]

LABEL_OPS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
NODE_OPS = LABEL_OPS | {"Gt", "Lt"}
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
UNSCHEDULABLE_TAINT = pb.Taint(key="node.kubernetes.io/unschedulable", effect=NO_SCHEDULE)


class NodeLabels:
    """Label columns over the nodes, built on first use of each key."""

    def __init__(self, nodes: Sequence[pb.Node]) -> None:
        self._nodes = nodes
        self._cols: dict[str, tuple[npt.NDArray[np.int32], list[str], dict[str, int]]] = {}
        self._ints: dict[str, npt.NDArray[np.float64]] = {}
        self.names = [n.name for n in nodes]

    def __len__(self) -> int:
        return len(self._nodes)

    def column(self, key: str) -> tuple[npt.NDArray[np.int32], list[str], dict[str, int]]:
        """(codes, values, index): codes[i] is the index of node i's value for ``key``, -1 if absent."""
        col = self._cols.get(key)
        if col is None:
            values: list[str] = []
            index: dict[str, int] = {}
            codes = np.full(len(self._nodes), -1, np.int32)
            for i, node in enumerate(self._nodes):
                v = node.labels.get(key)
                if v is not None:
                    c = index.get(v)
                    if c is None:
                        c = index[v] = len(values)
                        values.append(v)
                    codes[i] = c
            col = self._cols[key] = (codes, values, index)
        return col

    def has(self, key: str) -> Mask:
        return self.column(key)[0] >= 0

    def _int_values(self, key: str) -> npt.NDArray[np.float64]:
        ints = self._ints.get(key)
        if ints is None:
            codes, values, _ = self.column(key)
            parsed = np.array([np.nan if (x := _parse_int(v)) is None else float(x) for v in values] + [np.nan])
            ints = self._ints[key] = parsed[codes]  # code -1 picks the trailing NaN
        return ints

    def requirement(self, req: pb.Requirement, path: str, *, node_ops: bool = True) -> Mask:
        """Nodes whose labels satisfy one requirement."""
        allowed = NODE_OPS if node_ops else LABEL_OPS
        if req.operator not in allowed:
            raise InputError(f"{path}.operator", f'unknown operator "{req.operator}"')
        codes, _, index = self.column(req.key)
        if req.operator in ("In", "NotIn"):
            ids = [index[v] for v in req.values if v in index]
            inside = np.isin(codes, ids) if ids else np.zeros(len(codes), bool)
            return inside if req.operator == "In" else ~inside
        if req.operator == "Exists":
            return codes >= 0
        if req.operator == "DoesNotExist":
            return codes < 0
        if len(req.values) != 1 or _parse_int(req.values[0]) is None:
            raise InputError(f"{path}.values", f"{req.operator} needs exactly one integer value")
        bound = float(int(req.values[0]))
        ints = self._int_values(req.key)
        with np.errstate(invalid="ignore"):
            return ints > bound if req.operator == "Gt" else ints < bound  # NaN (missing/non-integer) -> False

    def selector_term(self, term: pb.NodeSelectorTerm, path: str) -> Mask:
        """One nodeSelectorTerm: requirements ANDed; an empty term matches nothing (Kubernetes)."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(len(self), bool)
        out = np.ones(len(self), bool)
        for j, req in enumerate(term.match_expressions):
            out &= self.requirement(req, f"{path}.match_expressions[{j}]")
        for j, req in enumerate(term.match_fields):
            out &= self._field(req, f"{path}.match_fields[{j}]")
        return out

    def _field(self, req: pb.Requirement, path: str) -> Mask:
        if req.key != "metadata.name":
            raise InputError(f"{path}.key", f'unsupported field "{req.key}" (only metadata.name)')
        if req.operator not in ("In", "NotIn"):
            raise InputError(f"{path}.operator", f'"{req.operator}" is not valid for fields (In, NotIn)')
        inside = np.isin(np.array(self.names, dtype=object), list(req.values))
        return inside if req.operator == "In" else ~inside

    def node_selector(self, selector: Mapping[str, str]) -> Mask:
        out = np.ones(len(self), bool)
        for key, value in selector.items():
            codes, _, index = self.column(key)
            out &= codes == index.get(value, -2)
        return out


def _parse_int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def node_affinity_mask(labels: NodeLabels, profile: pb.TaskProfile, path: str = "profile") -> Mask:
    """nodeSelector AND (required terms ORed): what NodeAffinity's Filter accepts."""
    out = labels.node_selector(profile.node_selector)
    if profile.required_node_affinity:
        any_term = np.zeros(len(labels), bool)
        for i, term in enumerate(profile.required_node_affinity):
            any_term |= labels.selector_term(term, f"{path}.required_node_affinity[{i}]")
        out &= any_term
    return out


def tolerates(toleration: pb.Toleration, taint: pb.Taint) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return toleration.value == taint.value
    return False


def first_untolerated(
    taints: Sequence[pb.Taint],
    tolerations: Sequence[pb.Toleration],
    effects: tuple[str, ...] = (NO_SCHEDULE, NO_EXECUTE),
) -> pb.Taint | None:
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def check_tolerations(tolerations: Sequence[pb.Toleration], path: str) -> None:
    for i, t in enumerate(tolerations):
        if t.operator not in ("", "Equal", "Exists"):
            raise InputError(f"{path}[{i}].operator", f'unknown operator "{t.operator}" (Equal, Exists)')
        if t.operator == "Exists" and t.value:
            raise InputError(f"{path}[{i}].value", "must be empty with operator Exists")
        if not t.key and t.operator != "Exists":
            raise InputError(f"{path}[{i}].key", "an empty key needs operator Exists")


def label_selector_matches(selector: pb.LabelSelector, labels: Mapping[str, str], path: str = "selector") -> bool:
    """metav1.LabelSelector on a pod's labels (an empty selector matches everything)."""
    for key, wanted in selector.match_labels.items():
        if labels.get(key) != wanted:
            return False
    for j, req in enumerate(selector.match_expressions):
        key_present = req.key in labels
        value = labels.get(req.key)
        if req.operator == "In":
            have = key_present and value in req.values
        elif req.operator == "NotIn":
            have = not key_present or value not in req.values
        elif req.operator == "Exists":
            have = key_present
        elif req.operator == "DoesNotExist":
            have = not key_present
        else:
            raise InputError(f"{path}.match_expressions[{j}].operator", f'unknown operator "{req.operator}"')
        if not have:
            return False
    return True
