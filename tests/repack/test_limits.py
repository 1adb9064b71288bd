"""Budget-aware order: the per-group counting in Budgets.value_order equals the plain definition."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.repack.cost import GroupMoves
from sidecar.repack.limits import Budgets


def reference_unlock(cands: list[list[int]], touched: np.ndarray, live: list[int]) -> list[float]:  # type: ignore[type-arg]
    """For each live k: the live candidates j != k sharing an untouched group with k whose
    untouched groups all are k's (the definition in value_order's docstring)."""
    new = [frozenset(g for g in cands[i] if not touched[g]) for i in live]
    out = []
    for k, groups in enumerate(new):
        out.append(float(sum(1 for j in range(len(live)) if j != k and new[j] & groups and new[j] <= groups)))
    return out


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_value_order_counts_unlocked_candidates_as_defined(data: st.DataObject) -> None:
    n_groups = data.draw(st.integers(1, 6))
    # group ids 64 apart share value_order's 64-bit signature bit: only its exact test tells them apart
    stride = data.draw(st.sampled_from([1, 64]))
    cands = data.draw(
        st.lists(
            st.lists(st.integers(0, n_groups - 1).map(lambda g: g * stride), min_size=1, max_size=3, unique=True),
            min_size=1,
            max_size=16,
        )
    )
    flags = data.draw(st.lists(st.integers(0, 1), min_size=n_groups, max_size=n_groups))
    touched_moves = np.zeros(n_groups * stride, np.int64)
    touched_moves[np.arange(n_groups) * stride] = flags
    live = sorted(data.draw(st.sets(st.integers(0, len(cands) - 1), min_size=1)))
    start = np.zeros(len(cands) + 1, np.intp)
    np.cumsum([len(gs) for gs in cands], out=start[1:])
    table = SimpleNamespace(
        cands=[SimpleNamespace(groups=[GroupMoves(g, 1, 1000.0, Counter()) for g in gs]) for gs in cands],
        pairs=SimpleNamespace(start=start, group=np.array([g for gs in cands for g in gs], np.intp)),
        tie_rank=np.arange(len(cands), dtype=np.int64),
    )
    budgets = Budgets.__new__(Budgets)
    budgets.table, budgets.gang = table, SimpleNamespace(moves=touched_moves)  # type: ignore[assignment]
    scores = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(live), max_size=len(live))))
    ranks = budgets.value_order(np.array(live, np.intp), scores)
    unlock = np.array(reference_unlock(cands, touched_moves > 0, live))
    spent = np.array([len({g for g in cands[i] if not touched_moves[g]}) for i in live], np.float64)
    per_unit = (1.0 + unlock) / np.maximum(spent, 1.0)
    order = np.lexsort((np.arange(len(cands))[live], scores, -per_unit, spent > 0))
    expected = np.empty(len(live))
    expected[order] = np.arange(len(live))
    assert ranks.tolist() == expected.tolist()
