"""Volcano's fit-error wording, and per-node check results turned into grouped reason lists.

The reasons for a node are exactly what Volcano would print: checks after a final failure
(resources, a node-only check, InterPodAffinity) are not shown. Nodes are grouped by the
results the wording depends on, so each distinct reason list is built once.
"""

from __future__ import annotations

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
    Subject,
)
from sidecar.snapshot.state import ClusterState

INSUFFICIENT = "Insufficient {}"
POD_NUMBER = "node(s) pod number exceeded"
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TAINT = "node(s) had untolerated taint {{{}: {}}}"
PORTS = "node(s) didn't have free ports for the requested pod ports"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"

_INTER = {P_EXISTING_ANTI: EXISTING_ANTI_AFFINITY, P_AFFINITY: AFFINITY, P_ANTI: ANTI_AFFINITY}

Groups = list[tuple[list[str], npt.NDArray[np.intp]]]


def group_reasons(
    state: ClusterState,
    subj: Subject,
    ev: Evaluation,
    taint: npt.NDArray[np.int32],
    taint_set: npt.NDArray[np.int32],
    nodes: npt.NDArray[np.intp],
) -> Groups:
    """Failed positions grouped by their reason list (vectorised: one decode per distinct list).

    ``ev`` holds per-position results, ``taint`` the first untolerated taint per position,
    ``taint_set`` each node's taint-set id and ``nodes`` maps positions to node indices.
    Groups come in ascending order of (first failing resource, pod count, node-only code,
    ports, inter-pod code, spread code, taint).
    """
    idx = np.flatnonzero(~ev.ok)
    if idx.size == 0:
        return []
    if subj.unknown_resources:
        return [([INSUFFICIENT.format(subj.unknown_resources[0])], idx)]
    # Only what the reasons show goes into the key: checks after a final failure are dropped.
    res_fail = ev.first_fail[idx] >= 0
    static_fail = ~res_fail & (ev.static_code[idx] != S_OK)
    inter_fail = ~res_fail & ~static_fail & (ev.inter[idx] != P_OK)
    shown_taint = static_fail & (taint[idx] >= 0)
    columns = [
        ev.first_fail[idx].astype(np.intp) + 1,
        np.where(res_fail, 0, ev.pod_full[idx]),
        np.where(res_fail, 0, ev.static_code[idx]),
        np.where(res_fail | static_fail, 0, ev.ports[idx]),
        np.where(res_fail | static_fail, 0, ev.inter[idx]),
        np.where(res_fail | static_fail | inter_fail, 0, ev.spread[idx]),
        np.where(shown_taint, taint_set[nodes[idx]], 0),  # the taint, by (taint set, position)
        np.where(shown_taint, taint[idx] + 1, 0),
    ]
    # Each column's radix is its own largest value + 1, so distinct rows get distinct keys
    # (ravel_multi_index refuses a product that would overflow) and keys sort row-wise.
    key = np.ravel_multi_index(columns, tuple(int(c.max()) + 1 for c in columns))
    order = np.argsort(key, kind="stable")  # positions stay ascending within a group
    starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]])
    groups = []
    for members in np.split(idx[order], starts[1:]):
        groups.append((_reasons_of(state, int(members[0]), ev, taint, nodes), members))
    return groups


def _reasons_of(
    state: ClusterState, i: int, ev: Evaluation, taint: npt.NDArray[np.int32], nodes: npt.NDArray[np.intp]
) -> list[str]:
    if ev.first_fail[i] >= 0:
        return [INSUFFICIENT.format(state.resources[ev.first_fail[i]])]
    reasons = [POD_NUMBER] if ev.pod_full[i] else []
    sc = ev.static_code[i]
    if sc != S_OK:
        if sc == S_UNSCHEDULABLE:
            reasons.append(UNSCHEDULABLE)
        elif sc == S_AFFINITY:
            reasons.append(NODE_AFFINITY)
        else:
            t = state.nodes[int(nodes[i])].taints[taint[i]]
            reasons.append(TAINT.format(t.key, t.value))
        return reasons
    if ev.ports[i]:
        reasons.append(PORTS)
    if ev.inter[i] != P_OK:
        reasons.append(_INTER[int(ev.inter[i])])
        return reasons
    if ev.spread[i] == T_LABEL:
        reasons.append(SPREAD_LABEL)
    elif ev.spread[i] == T_SKEW:
        reasons.append(SPREAD)
    return reasons
