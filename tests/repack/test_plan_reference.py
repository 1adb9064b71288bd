"""Plans of the reference set (tests/repack/plan_reference.py) are exactly the recorded ones: a
refactor that changes any plan fails here; one meant to change plans regenerates the digests."""

from __future__ import annotations

import pytest

from tests.repack import plan_reference as ref


@pytest.mark.parametrize("case", ref.CASES, ids=lambda c: c.name)
def test_the_plan_is_the_recorded_one(case: ref.Case) -> None:
    if case.trace and not ref.traces_available():
        pytest.skip(f"{ref.TRACES} has no openb trace (set REPACK_TRACES)")
    expected = ref.recorded().get(case.name)
    assert expected is not None, f"{case.name} has no digest: run python -m tests.repack.plan_reference --write"
    assert ref.digest(case) == expected, f"the plan of {case.name} changed (python -m tests.repack.plan_reference)"
