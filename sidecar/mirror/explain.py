"""Volcano's fit-error wording and status codes, per-node check results turned into grouped
reason lists, and the FitErrors histogram a pod's failure prints (:func:`fit_message`).

The reasons for a node are exactly what Volcano would print: checks after a final failure (a
resource, a node-only check, the pod's own required affinity) are not shown, every other failure
is recorded and the later checks still run (Volcano v1.14.1 ``predicates.go``: the loop stops only
when ``util.ShouldAbort`` — UnschedulableAndUnresolvable or Error). Nodes are grouped by the results
the wording depends on, so each distinct reason list is built once.

:data:`REASONS` is the one table of wording and status code. A node group's code
(:func:`failure_code`) is UnschedulableAndUnresolvable when any of its reasons is (Volcano's
``FitErrors.GetUnschedulableAndUnresolvableNodes``): moving other pods cannot help such a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from sidecar.mirror.types import (
    P_AFFINITY,
    P_ANTI,
    P_EXISTING_ANTI,
    P_OK,
    S_AFFINITY,
    S_OK,
    S_UNSCHEDULABLE,
    T_LABEL,
    T_SKEW,
    Evaluation,
    FilterResult,
    Subject,
)
from sidecar.snapshot.state import ClusterState

# Status codes, numbered as the contract's FailureCode enum (service.proto).
UNSPECIFIED: Final = 0
UNSCHEDULABLE: Final = 1  # api.Unschedulable: other pods moving may free the node
UNRESOLVABLE: Final = 2  # api.UnschedulableAndUnresolvable: nothing placed elsewhere helps

# Wording and code, one row per reason (Volcano v1.14.1 pkg/scheduler/api/unschedule_info.go and
# actions/allocate; kubernetes v1.34.1 pkg/scheduler/framework/plugins/*). A row with ``{}`` is
# a template: the reason names a resource or a taint.
REASONS: Final[dict[str, tuple[str, int]]] = {
    "insufficient": ("Insufficient {}", UNSCHEDULABLE),  # allocate's resource check
    "pod_number": ("node(s) pod number exceeded", UNSCHEDULABLE),
    "unschedulable": ("node(s) were unschedulable", UNRESOLVABLE),  # NodeUnschedulable
    "node_affinity": ("node(s) didn't match Pod's node affinity/selector", UNRESOLVABLE),
    # TaintToleration names the first untolerated taint (kubernetes v1.34.1 tainttoleration.go;
    # 1.35 dropped the key and value: "node(s) had untolerated taint(s)", PR #134740)
    "taint": ("node(s) had untolerated taint {{{}: {}}}", UNRESOLVABLE),
    "ports": ("node(s) didn't have free ports for the requested pod ports", UNSCHEDULABLE),
    "affinity": ("node(s) didn't match pod affinity rules", UNRESOLVABLE),
    "anti_affinity": ("node(s) didn't match pod anti-affinity rules", UNSCHEDULABLE),
    "existing_anti_affinity": ("node(s) didn't satisfy existing pods anti-affinity rules", UNSCHEDULABLE),
    "spread_label": ("node(s) didn't match pod topology spread constraints (missing required label)", UNRESOLVABLE),
    "spread": ("node(s) didn't match pod topology spread constraints", UNSCHEDULABLE),
}

INSUFFICIENT = REASONS["insufficient"][0]
POD_NUMBER = REASONS["pod_number"][0]
NODE_UNSCHEDULABLE = REASONS["unschedulable"][0]
NODE_AFFINITY = REASONS["node_affinity"][0]
TAINT = REASONS["taint"][0]
PORTS = REASONS["ports"][0]
AFFINITY = REASONS["affinity"][0]
ANTI_AFFINITY = REASONS["anti_affinity"][0]
EXISTING_ANTI_AFFINITY = REASONS["existing_anti_affinity"][0]
SPREAD_LABEL = REASONS["spread_label"][0]
SPREAD = REASONS["spread"][0]

_CODE_OF_TEXT = {text: code for text, code in REASONS.values() if "{}" not in text}
#: the fixed beginning of each template's reasons, and their code
_CODE_OF_PREFIX = tuple((text.split("{", 1)[0], code) for text, code in REASONS.values() if "{}" in text)
_STATIC = {S_UNSCHEDULABLE: NODE_UNSCHEDULABLE, S_AFFINITY: NODE_AFFINITY}
_INTER = {P_AFFINITY: AFFINITY, P_ANTI: ANTI_AFFINITY, P_EXISTING_ANTI: EXISTING_ANTI_AFFINITY}

Groups = list[tuple[list[str], npt.NDArray[np.intp]]]


def taint_reason(key: str, value: str) -> str:
    """TaintToleration's reason for a node whose first untolerated taint is ``key=value``."""
    return TAINT.format(key, value)


def reason_code(reason: str) -> int:
    code = _CODE_OF_TEXT.get(reason)
    if code is not None:
        return code
    return next((code for prefix, code in _CODE_OF_PREFIX if reason.startswith(prefix)), UNSPECIFIED)


def failure_code(reasons: Sequence[str]) -> int:
    """A node's code: UnschedulableAndUnresolvable if any reason is, else Unschedulable."""
    return max((reason_code(r) for r in reasons), default=UNSPECIFIED)


def resource_name(state: ClusterState, subj: Subject, first_fail: int) -> str:
    n_res = len(state.resources)
    return state.resources[first_fail] if first_fail < n_res else subj.unknown_resources[first_fail - n_res]


def group_reasons(state: ClusterState, subj: Subject, ev: Evaluation) -> Groups:
    """Failed positions grouped by their reason list (vectorised: one decode per distinct list).

    Groups come in ascending order of (first failing resource, pod count, node-only code, taint
    named, ports, inter-pod code, spread code).
    """
    idx = np.flatnonzero(~ev.ok)
    if idx.size == 0:
        return []
    # Only what the reasons show goes into the key: checks after a final failure are dropped.
    res_fail = ev.first_fail[idx] >= 0
    static_fail = ~res_fail & (ev.static_code[idx] != S_OK)
    final = res_fail | static_fail
    affinity_fail = ~final & (ev.inter[idx] == P_AFFINITY)
    columns = [
        ev.first_fail[idx].astype(np.intp) + 1,
        np.where(res_fail, 0, ev.pod_full[idx]),
        np.where(res_fail, 0, ev.static_code[idx]),
        np.where(res_fail, 0, ev.taint[idx].astype(np.intp) + 1),
        np.where(final, 0, ev.ports[idx]),
        np.where(final, 0, ev.inter[idx]),
        np.where(final | affinity_fail, 0, ev.spread[idx]),
    ]
    # Each column's radix is its own largest value + 1, so distinct rows get distinct keys
    # (ravel_multi_index refuses a product that would overflow) and keys sort row-wise.
    key = np.ravel_multi_index(columns, tuple(int(c.max()) + 1 for c in columns))
    order = np.argsort(key, kind="stable")  # positions stay ascending within a group
    starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]])
    groups = []
    for members in np.split(idx[order], starts[1:]):
        groups.append((_reasons_of(state, subj, int(members[0]), ev), members))
    return groups


def _reasons_of(state: ClusterState, subj: Subject, i: int, ev: Evaluation) -> list[str]:
    """Volcano's reason list for position ``i``: allocate's resource check alone, else the
    predicates in order, stopping after an UnschedulableAndUnresolvable one."""
    if ev.first_fail[i] >= 0:
        return [INSUFFICIENT.format(resource_name(state, subj, int(ev.first_fail[i])))]
    reasons = [POD_NUMBER] if ev.pod_full[i] else []
    sc = int(ev.static_code[i])
    if sc != S_OK:
        reasons.append(_STATIC[sc] if sc in _STATIC else ev.taints[int(ev.taint[i])])
        return reasons
    if ev.ports[i]:
        reasons.append(PORTS)
    inter = int(ev.inter[i])
    if inter != P_OK:
        reasons.append(_INTER[inter])
        if inter == P_AFFINITY:
            return reasons
    if ev.spread[i] == T_LABEL:
        reasons.append(SPREAD_LABEL)
    elif ev.spread[i] == T_SKEW:
        reasons.append(SPREAD)
    return reasons


def fit_message(result: FilterResult, wanted: int) -> str:
    """Volcano's FitErrors histogram: "3/5 nodes are unavailable: 1 Insufficient cpu, 2 ...".

    Empty when every requested node is feasible.
    """
    counts: dict[str, int] = {}
    failed = 0
    for reasons, members in result.groups:
        failed += len(members)
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + len(members)
    if not failed:
        return ""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"{failed}/{wanted} nodes are unavailable: {', '.join(parts)}."
