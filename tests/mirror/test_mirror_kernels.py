"""Differential tests: Cython kernels == the reference loops (the spec, reference_kernels.py) == numpy
forms, on random inputs, and the whole mirror answers the same through each dispatch mode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.mirror import kernels
from sidecar.mirror.core import Mirror
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from tests.mirror import reference_kernels as reference

MODES = ["twin", "vectorised"] + (["kernel"] if kernels.available() else [])
quantity = st.one_of(st.integers(-2000, 64_000).map(float), st.floats(-5, 5, allow_nan=False))


@st.composite
def fit_inputs(draw):  # type: ignore[no-untyped-def]
    n_nodes, n_res = draw(st.integers(1, 30)), draw(st.integers(1, 6))
    req = draw(hnp.arrays(np.float64, n_res, elements=quantity))
    free = draw(hnp.arrays(np.float64, (n_nodes, n_res), elements=quantity))
    dims = np.array(draw(st.permutations(range(n_res)))[: draw(st.integers(0, n_res))], np.intp)
    return req, free, dims


@settings(max_examples=300, deadline=None)
@given(fit_inputs())
def test_first_insufficient_agrees(args) -> None:  # type: ignore[no-untyped-def]
    req, free, dims = args
    spec = reference.first_insufficient(req, free, dims)
    np.testing.assert_array_equal(kernels.first_insufficient_vectorised(req, free, dims), spec)
    if kernels.available():
        with dispatch.forced("kernel"):
            np.testing.assert_array_equal(kernels.first_insufficient(req, free, dims), spec)


@st.composite
def class_inputs(draw):  # type: ignore[no-untyped-def]
    n_nodes, n_res, n_cls = draw(st.integers(1, 25)), draw(st.integers(1, 4)), draw(st.integers(1, 8))
    n_static, n_dyn = draw(st.integers(1, 3)), draw(st.integers(0, 3))
    u8 = st.integers(0, 1)
    return kernels.ClassMasks(
        draw(hnp.arrays(np.float64, (n_cls, n_res), elements=quantity)),
        draw(hnp.arrays(np.uint8, (n_cls, n_res), elements=u8)),
        draw(hnp.arrays(np.int32, n_cls, elements=st.integers(0, n_static - 1))),
        draw(hnp.arrays(np.uint8, (n_static, n_nodes), elements=u8)),
        draw(hnp.arrays(np.int32, n_cls, elements=st.integers(-1, n_dyn - 1))),
        draw(hnp.arrays(np.uint8, (n_dyn, n_nodes), elements=u8)),
        draw(hnp.arrays(np.float64, (n_nodes, n_res), elements=quantity)),
        draw(hnp.arrays(np.uint8, n_nodes, elements=u8)),
    )


@settings(max_examples=300, deadline=None)
@given(class_inputs())
def test_feasible_counts_agree(masks: kernels.ClassMasks) -> None:
    spec = reference.feasible_counts(masks)
    np.testing.assert_array_equal(kernels.feasible_counts_vectorised(masks), spec)
    if kernels.available():
        with dispatch.forced("kernel"):
            np.testing.assert_array_equal(kernels.feasible_counts(masks), spec)


def _answers(m: Mirror, tasks: list[int]) -> list[object]:
    out: list[object] = []
    for task in tasks:
        verdict = m.prioritize(m.subject_for_task(task))
        assert verdict.scores is not None
        out.append(
            (
                verdict.filter.feasible.tolist(),
                verdict.filter.fits_idle.tolist(),
                sorted((tuple(r), tuple(g.tolist())) for r, g in verdict.filter.groups),
                verdict.scores.total.tolist(),
            )
        )
    out.append(m.feasible_counts(np.arange(m.state.n_tasks)).tolist())
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), fill=st.floats(0.2, 0.95), nodes=st.integers(4, 40))
def test_mirror_answers_the_same_through_every_implementation(seed: int, fill: float, nodes: int) -> None:
    state = decode(synth(SynthOptions(nodes=nodes, fill=fill, seed=seed)))
    rng = np.random.default_rng(seed)
    tasks = [int(x) for x in rng.choice(state.n_tasks, size=min(6, state.n_tasks), replace=False)]
    results = {}
    for mode in MODES:
        with dispatch.forced(mode):
            results[mode] = _answers(Mirror(state), tasks)
    for mode in MODES[1:]:
        assert results[mode] == results["twin"], mode


def test_forced_kernel_without_build_is_an_error() -> None:
    if kernels.available():
        pytest.skip("kernels are built")
    with pytest.raises(RuntimeError), dispatch.forced("kernel"):
        pass
