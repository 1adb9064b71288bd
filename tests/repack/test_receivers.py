"""Receiver rules 2-4: the Cython kernel, the loop that specifies the first choice
(reference_receivers.py) and the numpy order agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.repack import receivers
from sidecar.repack.receivers import ReceiverInput
from tests.repack import reference_receivers as reference


@st.composite
def receiver_inputs(draw):  # type: ignore[no-untyped-def]
    n, r = draw(st.integers(1, 25)), draw(st.integers(1, 4))
    u8 = st.integers(0, 1)
    small = st.integers(0, 3).map(float)
    return ReceiverInput(
        req=draw(hnp.arrays(np.float64, r, elements=small)),
        dims=np.array(draw(st.permutations(range(r)))[: draw(st.integers(0, r))], np.intp),
        free=draw(hnp.arrays(np.float64, (n, r), elements=small)),
        pod_count=draw(hnp.arrays(np.int64, n, elements=st.integers(0, 3))),
        pod_cap=draw(hnp.arrays(np.float64, n, elements=st.integers(0, 3).map(float))),
        static_ok=draw(hnp.arrays(np.uint8, n, elements=u8)),
        allowed=draw(hnp.arrays(np.uint8, n, elements=u8)),
        stays=draw(hnp.arrays(np.uint8, n, elements=u8)),
        capacity=draw(hnp.arrays(np.float64, n, elements=small)),
        cost=draw(hnp.arrays(np.float64, n, elements=small)),
        rank=np.array(draw(st.permutations(range(n))), np.int64),
        goal=draw(st.integers(0, r - 1)),
    )


@settings(max_examples=300, deadline=None)
@given(receiver_inputs())
def test_best_receiver_agrees(inp: ReceiverInput) -> None:
    spec = reference.best_receiver(inp)
    with dispatch.forced("twin"):
        assert receivers.best_receiver(inp) == spec
    with dispatch.forced("vectorised"):
        assert receivers.best_receiver(inp) == spec
    assert receivers.best_receiver_vectorised(inp) == spec
    if receivers.available():
        with dispatch.forced("kernel"):
            assert receivers.best_receiver(inp) == spec


@settings(max_examples=200, deadline=None)
@given(receiver_inputs())
def test_order_walks_the_key(inp: ReceiverInput) -> None:
    """The numpy order lists every given node once, each no worse than the next by the key."""
    nodes = np.flatnonzero(inp.allowed)
    left = inp.free[nodes, inp.goal] - inp.req[inp.goal]
    stays = inp.stays.astype(bool)
    walked = list(receivers.order(nodes, stays, inp.capacity, inp.cost, left, inp.rank))
    assert sorted(walked) == nodes.tolist()
    left_of = dict(zip(nodes.tolist(), left.tolist(), strict=True))
    keys = [
        reference.key(bool(stays[n]), float(inp.capacity[n]), float(inp.cost[n]), left_of[n], int(inp.rank[n]))
        for n in walked
    ]
    assert keys == sorted(keys)


def test_forced_kernel_is_the_kernel() -> None:
    if not receivers.available():
        pytest.skip("the receivers kernel is not built")
    with dispatch.forced("kernel"):
        assert receivers.kernel_in_use()
    with dispatch.forced("vectorised"):
        assert not receivers.kernel_in_use()
