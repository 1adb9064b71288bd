"""A round's candidate order: the Cython kernels against their numpy specifications, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.repack import ranking
from sidecar.repack.table import CandidateTable
from tests.plan_cases import normalised_scores

built = dispatch.load("sidecar.repack._ranking") is not None
needs_kernel = pytest.mark.skipif(not built, reason="the ranking kernel is not built")


@st.composite
def rounds(draw):  # type: ignore[no-untyped-def]
    c = draw(st.integers(1, 40))
    values = st.one_of(st.integers(0, 6).map(float), st.floats(0, 1e6, allow_nan=False))
    delta = draw(hnp.arrays(np.float64, (5, c), elements=values))
    live = np.array(sorted(draw(st.sets(st.integers(0, c - 1)))), np.intp)
    weights = draw(hnp.arrays(np.float64, 5, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])))
    tie_rank = np.array(draw(st.permutations(range(c))), np.int64)
    return delta, live, weights, tie_rank


def best(scores: np.ndarray, tie_rank: np.ndarray) -> int:  # type: ignore[type-arg]
    table = CandidateTable.__new__(CandidateTable)  # best() reads tie_rank only
    table.tie_rank = tie_rank
    return table.best(scores)


@needs_kernel
@settings(max_examples=400, deadline=None)
@given(rounds())
def test_kernel_scores_and_pick_agree_with_the_specification(case) -> None:  # type: ignore[no-untyped-def]
    """The kernel's first round (every live candidate scored) is round_scores bit for bit, and its
    pick is the Python pick's."""
    delta, live, weights, tie_rank = case
    alive = np.zeros(delta.shape[1], bool)
    alive[live] = True
    expected = ranking.round_scores(delta, live, weights)
    with dispatch.forced("twin"):
        expected_best = best(expected, tie_rank)
    with dispatch.forced("kernel"):
        got = ranking.RoundScores(delta, weights, alive, np.zeros(delta.shape[1], np.int64)).round(0).copy()
        got_best = best(got, tie_rank)
    assert got.tobytes() == expected.tobytes()
    assert got_best == expected_best


def test_scores_rank_like_the_normalised_sum() -> None:
    delta = np.array([[1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [10.0, 0.0, 5.0], [1.0, 1.0, 1.0], [2.0, 1.0, 3.0]])
    weights = np.array([1.0, 3.0, 1.0, 1.0, 1.0])
    live = np.arange(3, dtype=np.intp)
    normalised = normalised_scores(delta.T, tuple(weights.tolist()))
    scores = ranking.round_scores(delta, live, weights)
    assert np.argsort(scores).tolist() == np.argsort(normalised).tolist()
    assert np.allclose(scores - scores.min(), normalised - normalised.min())
    only = ranking.round_scores(delta, np.array([2], np.intp), weights)
    assert np.isinf(only[:2]).all() and only[2] == 0.0  # a single live candidate has no span
    assert best(np.full(3, np.inf), np.arange(3, dtype=np.int64)) == -1


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_incremental_round_scores_equal_a_fresh_computation_every_round(data) -> None:  # type: ignore[no-untyped-def]
    """Random rounds: candidates die, wait for a retry and come back, some get new costs (few
    distinct values, so extremes are shared, vanish and come back), some are skipped within a
    round; each round equals round_scores over the candidates in play, bit for bit, in both forms
    (the kernel's Rounds.update and its Python twin; the form is fixed when RoundScores is made)."""
    mode = data.draw(st.sampled_from(["kernel", "twin"] if built else ["twin"]))
    with dispatch.forced(mode):  # type: ignore[arg-type]
        _play_rounds(data)


def _play_rounds(data) -> None:  # type: ignore[no-untyped-def]
    from sidecar.repack.ranking import RoundScores

    c = data.draw(st.integers(1, 30))
    values = st.sampled_from([0.0, 1.0, 2.0, 3.0, 1000.0, 2500.0])
    delta = data.draw(hnp.arrays(np.float64, (5, c), elements=values))
    weights = data.draw(hnp.arrays(np.float64, 5, elements=st.sampled_from([0.0, 1.0, 3.0])))
    alive = np.ones(c, bool)
    retry_at = np.zeros(c, np.int64)
    tie_rank = np.array(data.draw(st.lists(st.integers(0, 4), min_size=c, max_size=c)), np.int64)
    tie = data.draw(st.sampled_from([0.0, 1e-12, 0.4, 1.5]))
    rounds = RoundScores(delta, weights, alive, retry_at, tie_rank, tie)
    for n_freed in range(data.draw(st.integers(1, 12))):
        changed = data.draw(st.lists(st.integers(0, c - 1), max_size=c, unique=True))
        for i in changed:
            delta[:, i] = data.draw(hnp.arrays(np.float64, 5, elements=values))
        rounds.changed(changed)
        for i in data.draw(st.lists(st.integers(0, c - 1), max_size=3)):
            if data.draw(st.booleans()):
                alive[i] = False
            else:
                retry_at[i] = n_freed + data.draw(st.integers(0, 2))
            rounds.touch(i)  # as the table tells the planner's RoundScores
        got = rounds.round(n_freed).copy()
        live = alive & (retry_at <= n_freed)
        expected = ranking.round_scores(delta, np.flatnonzero(live), weights)
        assert got.tobytes() == expected.tobytes()
        assert rounds.n_live == int(live.sum())
        _same_pick(rounds, tie_rank, tie)
        for i in data.draw(st.lists(st.integers(0, c - 1), max_size=3, unique=True)):
            rounds.skip(i)  # out for the rest of this round only
            _same_pick(rounds, tie_rank, tie)


def _same_pick(rounds: ranking.RoundScores, tie_rank: np.ndarray, tie: float) -> None:  # type: ignore[type-arg]
    """best() (the kernel's heap, or the Python pick) is the Python pick over the round's array."""
    with dispatch.forced("twin"):
        expected = ranking.pick(rounds.scores.copy(), tie_rank, tie)
    assert rounds.best() == expected
