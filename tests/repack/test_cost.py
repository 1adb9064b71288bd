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
