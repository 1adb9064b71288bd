"""The mirror against Volcano's compiled code on a fixed set of random clusters (bench.fidelity).

``volcano-oracle`` (go/plugin/fidelity, built with the real control plane) answers with Volcano
v1.14.1's allocate predicate and node order; the mirror reads the same Kubernetes objects and the
same random volcano-scheduler.conf. Every (task, node) pair must agree on feasibility, failure
code, reasons and score, and every fifth cluster's score per node-order function — or fall in one
of the differences docs/fidelity.md lists under "Known differences (Volcano v1.14.1)", each recognised by
what it looks like (``bench.fidelity.known``). A disagreement of any other shape fails: it is new,
and must be fixed (with a regression test citing the upstream file) or documented.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import fidelity as F

SEEDS = range(1, 171)  # ~5,000 pairs, ~15 s


@pytest.fixture(scope="module")
def pool(volcano_oracle: Path) -> Iterator[F.OraclePool]:
    with F.OraclePool(volcano_oracle) as p:
        yield p


def test_the_mirror_answers_as_volcanos_compiled_code(pool: F.OraclePool) -> None:
    tally = F.Tally()
    F.run_seeds(SEEDS, pool, tally, plugins_every=5)
    assert tally.pairs >= 4000
    assert tally.checked["feasibility"] == tally.agree["feasibility"] == tally.pairs
    assert tally.checked["score"] == tally.agree["score"] > 500
    plugins = {c for c in tally.checked if c.startswith("score:")}
    assert len(plugins) == 9, plugins  # every node-order function, alone, somewhere in the set
    assert not tally.unexplained, "\n".join(tally.unexplained[:10])


def test_the_generator_covers_what_the_issue_lists() -> None:
    """The random clusters hold every kind of input the comparison is meant to cover."""
    text = "\n".join(str(F.gen_case(seed).objects) + F.gen_case(seed).conf.text() for seed in SEEDS)
    for needle in (
        "deletionTimestamp",  # Releasing
        "'Succeeded'",
        "matchLabelKeys",
        "minDomains",
        "nodeTaintsPolicy",
        "namespaceSelector",
        "preferredDuringSchedulingIgnoredDuringExecution",
        "'NoExecute'",
        "'Gt'",
        "hostPort",
        "binpack.resources.nvidia.com/gpu",
        "leastrequested.weight",
        "predicate.PodAffinityEnable: false",
    ):
        assert needle in text, needle


def test_known_differences_are_recognised_by_shape() -> None:
    v = {"feasible": False, "code": 2, "reasons": ["Insufficient pods"]}
    m = {"feasible": False, "code": 2, "reasons": ["Insufficient nvidia.com/gpu"]}
    assert F.known("reasons", v, m) is not None
    m = {"feasible": False, "code": 2, "reasons": ["Insufficient cpu"]}
    assert F.known("reasons", v, m) is None  # cpu is always named first: a real disagreement
    v = {"feasible": False, "code": 3, "reasons": ["node(s) had untolerated taint {a: b}"]}
    m = {"feasible": False, "code": 3, "reasons": ["node(s) were unschedulable"]}
    assert F.known("reasons", v, m) is not None
    assert F.known("score", v, m) is None and F.known("feasibility", v, m) is None
    m = {"feasible": False, "code": 2, "reasons": ["node(s) pod number exceeded"]}
    assert F.known("code", v, m) is None
    # without an UnschedulableAndUnresolvable failure Volcano reports every failure, in any order
    ports, anti = (
        "node(s) didn't have free ports for the requested pod ports",
        "node(s) didn't match pod anti-affinity rules",
    )
    v = {"feasible": False, "code": 2, "reasons": [ports]}
    m = {"feasible": False, "code": 2, "reasons": [anti, ports]}
    assert F.known("reasons", v, m) is None
    # with one, Volcano may stop before a failure the mirror reports, or reach one the mirror did not
    label = "node(s) didn't match pod topology spread constraints (missing required label)"
    affinity = "node(s) didn't match pod affinity rules"
    v = {"feasible": False, "code": 3, "reasons": [label]}
    assert F.known("reasons", v, {"feasible": False, "code": 3, "reasons": [anti, label]}) is not None
    assert F.known("reasons", v, {"feasible": False, "code": 3, "reasons": [affinity]}) is not None
    v = {"feasible": False, "code": 3, "reasons": [affinity]}
    assert F.known("reasons", v, {"feasible": False, "code": 3, "reasons": [label]}) is None
