"""The Cython ledger kernel and its numpy twin agree on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.snapshot import ledger, taskstatus

STATUSES = sorted(taskstatus.VALID)

needs_kernel = pytest.mark.skipif(ledger._K is None, reason="Cython kernel not built (pure-Python install)")


@st.composite
def columns(draw):  # type: ignore[no-untyped-def]
    n_nodes = draw(st.integers(1, 12))
    n_tasks = draw(st.integers(0, 60))
    n_res = draw(st.integers(1, 5))
    node = draw(hnp.arrays(np.int32, n_tasks, elements=st.integers(-1, n_nodes - 1)))
    status = draw(hnp.arrays(np.int32, n_tasks, elements=st.sampled_from(STATUSES)))
    req = draw(hnp.arrays(np.float64, (n_tasks, n_res), elements=st.integers(0, 64_000).map(float)))
    alloc = draw(hnp.arrays(np.float64, (n_nodes, n_res), elements=st.integers(0, 256_000).map(float)))
    return node, status, req, alloc


@needs_kernel
@settings(max_examples=200, deadline=None)
@given(columns())
def test_kernel_matches_twin(cols) -> None:  # type: ignore[no-untyped-def]
    node, status, req, alloc = cols
    with dispatch.forced("kernel"):
        a = ledger.build_ledger(node, status, req, alloc)
    with dispatch.forced("twin"):
        b = ledger.build_ledger(node, status, req, alloc)
    for field in ("used", "releasing", "pipelined", "idle", "future_idle"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_twin_works_without_kernel() -> None:
    node = np.array([0, 0, 1, -1], np.int32)
    status = np.array([32, 4, 64, 1], np.int32)
    req = np.array([[1.0], [2.0], [3.0], [9.0]])
    with dispatch.forced("twin"):
        out = ledger.build_ledger(node, status, req, np.array([[10.0], [10.0]]))
    np.testing.assert_array_equal(out.used[:, 0], [1.0, 3.0])
    np.testing.assert_array_equal(out.future_idle[:, 0], [10 - 1 - 2, 10 - 3 + 3])
