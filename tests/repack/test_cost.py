"""Gang cost: the vectorised marginal of many candidates equals the per-candidate rule, bit for bit."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.repack.cost import GangState, GroupMoves, Pairs, marginal, marginal_many


class _Cand:
    def __init__(self, groups: list[GroupMoves]) -> None:
        self.groups = groups


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_marginal_many_is_marginal_for_every_candidate(data: st.DataObject) -> None:
    g = data.draw(st.integers(1, 6))
    running = np.array(data.draw(st.lists(st.integers(0, 6), min_size=g, max_size=g)), np.int64)
    min_member = np.array(data.draw(st.lists(st.integers(0, 6), min_size=g, max_size=g)), np.int64)
    usage = np.array(data.draw(st.lists(st.sampled_from([0.0, 1000.0, 2500.0, 8000.0]), min_size=g, max_size=g)))
    gang = GangState(running, min_member, usage, {}, [{} for _ in range(g)])
    moves = st.builds(
        GroupMoves,
        st.integers(0, g - 1),
        st.integers(1, 3),
        st.sampled_from([500.0, 1000.0, 3000.0]),
        st.just(Counter()),
    )
    cands = [_Cand(data.draw(st.lists(moves, min_size=1, max_size=3, unique_by=lambda m: m.group))) for _ in range(6)]
    for c in data.draw(st.lists(st.sampled_from(cands), max_size=3)):  # a plan so far
        for m in c.groups:
            gang.apply(m.group, m.pods, m.cards, m.roles)
    pairs = Pairs.build(gang, cands)
    which = np.array(data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=6)), np.intp)
    tried = data.draw(st.sampled_from(cands))
    with gang.trial(tried.groups):  # as CandidateTable.trial asks it
        many = marginal_many(gang, pairs, which)
        one = np.array([marginal(gang, cands[i].groups) for i in which.tolist()]).T
    assert many.tobytes() == np.ascontiguousarray(one).tobytes()


@st.composite
def tables(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    """A planning loop's candidate table on a random cluster of gangs (some with per-role
    minimums), with a plan so far and some candidates out of play."""
    from tests.plan_cases import GPU, Cluster

    n_groups = draw(st.integers(1, 5))
    cluster = Cluster()
    for k in range(8):
        cluster.node(f"n{k}")
    for g in range(n_groups):
        cluster.group(f"g{g}", draw(st.integers(0, 4)))
        if draw(st.integers(0, 3)) == 0:
            cluster.snap.pod_groups[-1].min_task_member["worker"] = draw(st.integers(0, 2))
    for p in range(draw(st.integers(2, 16))):
        where, g = draw(st.integers(0, 5)), draw(st.integers(0, n_groups - 1))
        cluster.pod(f"p{p}", f"n{where}", draw(st.sampled_from([0.5, 1, 2, 3])), f"g{g}")
        cluster.snap.tasks[-1].role = draw(st.sampled_from(["", "worker", "ps"]))
    return cluster.state(), GPU, draw(st.data())


@settings(max_examples=200, deadline=None)
@given(tables())
def test_trial_kernel_is_the_python_trial(case) -> None:  # type: ignore[no-untyped-def]
    """CandidateTable.trial in ext/cost.pyx and its Python twin give the same neighbours, deltas,
    old costs and node costs, bit for bit, and leave the gang state as they found it."""
    from sidecar import dispatch
    from sidecar.mirror.core import Mirror
    from sidecar.repack.planner import Planner
    from sidecar.repack.spec import validate
    from sidecar.repack.table import CandidateTable
    from tests.plan_cases import spec

    if dispatch.load("sidecar.repack._cost") is None:
        return
    state, resource, data = case
    planner = Planner(Mirror(state), validate(spec(resource)))
    prep = planner.prepare()
    if not prep.candidates:
        return
    rank = np.arange(state.n_nodes, dtype=np.int64)
    table = CandidateTable(state, planner.spec, planner.goal, prep.candidates, prep.gang, rank, prep.outcomes)
    gang = prep.gang
    cands = prep.candidates
    for c in data.draw(st.lists(st.sampled_from(cands), max_size=2, unique_by=id)):  # a plan so far
        for m in c.groups:
            gang.apply(m.group, m.pods, m.cards, m.roles)
    table.alive[:] = data.draw(st.lists(st.booleans(), min_size=len(cands), max_size=len(cands)))
    for i in range(len(cands)):
        before = (gang._moves_a.copy(), gang._cards_a.copy(), list(gang._moves), list(gang._cards))
        cost_before = table.node_cost.copy()
        with dispatch.forced("twin"):
            want = table.trial(i, gang)
        want_cost = table.node_cost.copy()
        table.node_cost[:] = cost_before
        with dispatch.forced("kernel"):
            got = table.trial(i, gang)
        assert got.others == want.others
        assert got.deltas.tobytes() == np.ascontiguousarray(want.deltas).tobytes()
        assert got.old_cost.tobytes() == want.old_cost.tobytes()
        assert table.node_cost.tobytes() == want_cost.tobytes()
        after = (gang._moves_a, gang._cards_a, gang._moves, gang._cards)
        assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
        table.node_cost[:] = cost_before
