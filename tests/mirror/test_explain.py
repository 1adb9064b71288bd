"""Fit-error grouping: every failed node lands in exactly one group, and a group's reason list is
exactly each member's own (so two distinct reason lists can never share a group key)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.explain import (
    UNRESOLVABLE,
    UNSCHEDULABLE,
    _reasons_of,
    failure_code,
    group_reasons,
    reason_code,
    taint_reason,
)
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
from tests.builders import node, snapshot

N_NODES = 12


def _state():  # type: ignore[no-untyped-def]
    return decode(snapshot([node(f"n{i:02d}") for i in range(N_NODES)], []))


STATE = _state()
N_RES = len(STATE.resources)
TAINTS = (taint_reason("gpu", "y"), taint_reason("maintenance", ""), taint_reason("a", "b"))


@st.composite
def evaluations(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, N_NODES))

    def arr(dtype, values):  # type: ignore[no-untyped-def]
        return draw(hnp.arrays(dtype, n, elements=st.sampled_from(values)))

    static_code = arr(np.int8, [S_OK, 1, 2, S_TAINT])
    which = arr(np.int32, list(range(len(TAINTS))))  # which taint a TaintToleration failure names
    ev = Evaluation(
        ok=arr(np.bool_, [False, False, True]),
        fits_idle=np.zeros(n, bool),
        first_fail=arr(np.int16, list(range(-1, N_RES + 2))),  # N_RES + j: the j-th unknown resource
        pod_full=arr(np.bool_, [False, True]),
        static_code=static_code,
        ports=arr(np.bool_, [False, True]),
        inter=arr(np.int8, [P_OK, P_EXISTING_ANTI, P_AFFINITY, P_ANTI]),
        spread=arr(np.int8, [T_OK, T_SKEW, T_LABEL]),
        taint=np.where(static_code == S_TAINT, which, -1).astype(np.int32),
        taints=TAINTS,
    )
    return ev


@settings(max_examples=300, deadline=None)
@given(evaluations())
def test_groups_partition_the_failed_nodes_by_their_own_reasons(ev) -> None:  # type: ignore[no-untyped-def]
    subj = Subject("p", "default", np.zeros(N_RES), pb.TaskProfile(), unknown_resources=("x.io/a", "y.io/b"))
    groups = group_reasons(STATE, subj, ev)
    seen = np.concatenate([m for _, m in groups]) if groups else np.zeros(0, np.intp)
    assert sorted(seen.tolist()) == np.flatnonzero(~ev.ok).tolist()
    keys = [tuple(reasons) for reasons, _ in groups]
    assert len(set(keys)) == len(keys)  # one group per distinct reason list
    for reasons, members in groups:
        assert members.tolist() == sorted(members.tolist())
        for i in members:
            assert _reasons_of(STATE, subj, int(i), ev) == reasons
        # every reason is in the table (a draw may fail a node with no failing check: no reasons)
        assert failure_code(reasons) in ((UNSCHEDULABLE, UNRESOLVABLE) if reasons else (0,))


def test_explain_codes_are_the_contracts_failure_codes() -> None:
    assert service_pb2.FailureCode.Value("UNSCHEDULABLE") == UNSCHEDULABLE
    assert service_pb2.FailureCode.Value("UNSCHEDULABLE_AND_UNRESOLVABLE") == UNRESOLVABLE
    assert service_pb2.FailureCode.Value("FAILURE_CODE_UNSPECIFIED") == 0


def test_templated_reasons_take_their_rows_code() -> None:
    """Reasons that name a resource or a taint are coded by their template's row."""
    assert reason_code("Insufficient nvidia.com/gpu") == UNSCHEDULABLE
    assert reason_code("node(s) had untolerated taint {gpu: y}") == UNRESOLVABLE
    assert reason_code(taint_reason("node.kubernetes.io/not-ready", "")) == UNRESOLVABLE
    assert reason_code("node(s) pod number exceeded") == UNSCHEDULABLE
    assert reason_code("something else") == 0
