"""Fit-error grouping: every failed node lands in exactly one group, and a group's reason list is
exactly each member's own (so two distinct reason lists can never share a group key)."""

from __future__ import annotations

import numpy as np
from builders import node, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.explain import _reasons_of, group_reasons
from sidecar.mirror.types import (
    P_AFFINITY,
    P_ANTI,
    P_EXISTING_ANTI,
    P_OK,
    S_OK,
    S_TAINT,
    T_LABEL,
    T_OK,
    T_SKEW,
    Evaluation,
    Subject,
)
from sidecar.snapshot.decode import decode

N_NODES = 12
TAINTS = [pb.Taint(key=f"k{j}", value=f"v{j}", effect="NoSchedule") for j in range(4)]


def _state():  # type: ignore[no-untyped-def]
    nodes = [node(f"n{i:02d}", taints=TAINTS[: i % 5]) for i in range(N_NODES)]
    return decode(snapshot(nodes, []))


STATE = _state()
N_RES = len(STATE.resources)


@st.composite
def evaluations(draw):  # type: ignore[no-untyped-def]
    # positions map to nodes through ``nodes`` (all of them, or a shuffled subset)
    nodes = np.array(draw(st.permutations(range(N_NODES))), np.intp)[: draw(st.integers(1, N_NODES))]
    n = nodes.size

    def arr(dtype, values):  # type: ignore[no-untyped-def]
        return draw(hnp.arrays(dtype, n, elements=st.sampled_from(values)))

    static = arr(np.int8, [S_OK, 1, 2, S_TAINT])
    taint_count = np.array([len(STATE.nodes[i].taints) for i in nodes])
    taint = np.array(
        [
            draw(st.integers(0, max(taint_count[i] - 1, 0))) if static[i] == S_TAINT and taint_count[i] else -1
            for i in range(n)
        ],
        np.int32,
    )
    static[(static == S_TAINT) & (taint < 0)] = S_OK
    ev = Evaluation(
        ok=arr(np.bool_, [False, False, True]),
        fits_idle=np.zeros(n, bool),
        first_fail=arr(np.int16, list(range(-1, N_RES))),
        pod_full=arr(np.bool_, [False, True]),
        static_code=static,
        ports=arr(np.bool_, [False, True]),
        inter=arr(np.int8, [P_OK, P_EXISTING_ANTI, P_AFFINITY, P_ANTI]),
        spread=arr(np.int8, [T_OK, T_SKEW, T_LABEL]),
    )
    return ev, taint, nodes


@settings(max_examples=300, deadline=None)
@given(evaluations())
def test_groups_partition_the_failed_nodes_by_their_own_reasons(case) -> None:  # type: ignore[no-untyped-def]
    ev, taint, nodes = case
    taint_set = np.array([len(n.taints) for n in STATE.nodes], np.int32)  # one taint set per count
    subj = Subject("p", "default", np.zeros(N_RES), pb.TaskProfile())
    groups = group_reasons(STATE, subj, ev, taint, taint_set, nodes)
    seen = np.concatenate([m for _, m in groups]) if groups else np.zeros(0, np.intp)
    assert sorted(seen.tolist()) == np.flatnonzero(~ev.ok).tolist()
    for reasons, members in groups:
        assert members.tolist() == sorted(members.tolist())
        for i in members:
            assert _reasons_of(STATE, int(i), ev, taint, nodes) == reasons
