"""Label selectors, node selector terms and tolerations: Kubernetes semantics, defined once.

Node-side checks are vectorised over all nodes through :class:`NodeLabels` (one interned code
column per label key); pod-side checks work on plain label dicts.

Requirements are parsed as apimachinery v0.34.1 ``labels.NewRequirement`` does (component-helpers
v0.34.1 ``nodeaffinity``; Kubernetes v1.34.1 scheduler libraries). What the API server already
rejects (an unknown operator, a ``matchFields`` key other than ``metadata.name``, and the checks of
:func:`sidecar.snapshot.decode.validate_profile`) is an ``InputError``. What it admits but
``NewRequirement`` refuses makes the requirement unparsable, and then:

- **node selector terms** (required node affinity; the preferred terms scoring reads too): the
  whole *term* matches no node (``LazyErrorNodeSelector``: the parse error is kept and the term
  never matches; other ORed terms still count). That covers a value that is not a valid label
  value (``NotIn ["a b"]`` too), ``Gt``/``Lt`` with a value that is not an int64 (``"bar"``,
  ``"1e3"``, ``10^309``), In/NotIn without values, Exists/DoesNotExist with values, an invalid key;
- **pod label selectors** (affinity terms, spread constraints, PDBs): ``LabelSelectorAsSelector``
  runs the same ``NewRequirement``; a selector that fails to parse selects no pod (the eviction
  API and the disruption controller skip such a selector). The API server rejects invalid values
  there on create, so this only matters for hand-written snapshots;
- the plain ``nodeSelector`` map goes through ``labels.SelectorFromSet`` (no validation): literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

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

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def valid_label_value(value: str) -> bool:
    """validation.IsValidLabelValue: empty, or at most 63 alphanumerics, '-', '_', '.' with
    alphanumeric ends."""
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


def valid_label_key(key: str) -> bool:
    """validation.IsQualifiedName: [DNS-subdomain prefix '/'] name (1-63 characters)."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign, decimal digits, within int64; else None."""
    if _INT64.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


@lru_cache(maxsize=4096)
def requirement_parses(key: str, operator: str, values: tuple[str, ...]) -> bool:
    """Would labels.NewRequirement accept it? (The operator is known: callers check it first.)"""
    if not valid_label_key(key) or not all(valid_label_value(v) for v in values):
        return False
    if operator in ("In", "NotIn"):
        return len(values) > 0
    if operator in ("Exists", "DoesNotExist"):
        return len(values) == 0
    return len(values) == 1 and parse_int64(values[0]) is not None  # Gt, Lt


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
            parsed = np.array([np.nan if (x := parse_int64(v)) is None else float(x) for v in values] + [np.nan])
            ints = self._ints[key] = parsed[codes]  # code -1 picks the trailing NaN
        return ints

    def requirement(self, req: pb.Requirement, path: str) -> Mask | None:
        """Nodes whose labels satisfy one requirement; None when it does not parse (see the
        module docstring: the term it belongs to then matches nothing)."""
        if req.operator not in NODE_OPS:
            raise InputError(f"{path}.operator", f'unknown operator "{req.operator}"')
        if not requirement_parses(req.key, req.operator, tuple(req.values)):
            return None
        codes, _, index = self.column(req.key)
        if req.operator in ("In", "NotIn"):
            ids = [index[v] for v in req.values if v in index]
            inside = np.isin(codes, ids) if ids else np.zeros(len(codes), bool)
            return inside if req.operator == "In" else ~inside
        if req.operator == "Exists":
            return codes >= 0
        if req.operator == "DoesNotExist":
            return codes < 0
        bound = int(req.values[0])
        ints = self._int_values(req.key)
        with np.errstate(invalid="ignore"):
            # float64 holds every int64 label exactly enough for a strict comparison with an int64
            # bound only when both are below 2**53; compare as Python ints beyond that.
            if abs(bound) < 2**53:
                fb = float(bound)
                return ints > fb if req.operator == "Gt" else ints < fb  # NaN (missing/non-integer) -> False
        return self._int_compare(req.key, bound, req.operator == "Gt")

    def _int_compare(self, key: str, bound: int, greater: bool) -> Mask:
        codes, values, _ = self.column(key)
        parsed = [parse_int64(v) for v in values]
        ok = np.array([x is not None and (x > bound if greater else x < bound) for x in parsed] + [False])
        out: Mask = ok[codes]
        return out

    def selector_term(self, term: pb.NodeSelectorTerm, path: str) -> Mask:
        """One nodeSelectorTerm: requirements ANDed; an empty term, or one with a requirement that
        does not parse, matches nothing (Kubernetes)."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(len(self), bool)
        out = np.ones(len(self), bool)
        for j, req in enumerate(term.match_expressions):
            mask = self.requirement(req, f"{path}.match_expressions[{j}]")
            if mask is None:
                return np.zeros(len(self), bool)
            out &= mask
        for j, req in enumerate(term.match_fields):
            mask = self._field(req, f"{path}.match_fields[{j}]")
            if mask is None:
                return np.zeros(len(self), bool)
            out &= mask
        return out

    def _field(self, req: pb.Requirement, path: str) -> Mask | None:
        if req.key != "metadata.name":
            raise InputError(f"{path}.key", f'unsupported field "{req.key}" (only metadata.name)')
        if req.operator not in ("In", "NotIn"):
            raise InputError(f"{path}.operator", f'"{req.operator}" is not valid for fields (In, NotIn)')
        if len(req.values) != 1:
            return None  # "must have one element": the term matches nothing (the API refuses it)
        inside = np.isin(np.array(self.names, dtype=object), list(req.values))
        return inside if req.operator == "In" else ~inside

    def node_selector(self, selector: Mapping[str, str]) -> Mask:
        out = np.ones(len(self), bool)
        for key, value in selector.items():
            codes, _, index = self.column(key)
            out &= codes == index.get(value, -2)
        return out


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
    """metav1.LabelSelector on a pod's labels (an empty selector matches everything; one that does
    not parse matches nothing, see the module docstring)."""
    for key, wanted in selector.match_labels.items():
        if labels.get(key) != wanted or not requirement_parses(key, "In", (wanted,)):
            return False
    for j, req in enumerate(selector.match_expressions):
        if req.operator not in LABEL_OPS:
            raise InputError(f"{path}.match_expressions[{j}].operator", f'unknown operator "{req.operator}"')
        if not requirement_parses(req.key, req.operator, tuple(req.values)):
            return False
        key_present = req.key in labels
        value = labels.get(req.key)
        if req.operator == "In":
            have = key_present and value in req.values
        elif req.operator == "NotIn":
            have = not key_present or value not in req.values
        elif req.operator == "Exists":
            have = key_present
        else:
            have = not key_present
        if not have:
            return False
    return True
