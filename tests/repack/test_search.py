"""The node-level search: the Cython kernel against the loop that specifies it (reference_search.py)
on random inputs, the kernel against the general Search on real Simulation states, and a hand case
that needs backtracking."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sidecar import dispatch
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.core import Mirror
from sidecar.repack import greedy, planner, receivers, search
from sidecar.repack.search import PodsInput
from sidecar.repack.spec import validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState
from tests.plan_cases import Cluster, spec
from tests.repack import reference_search as reference

needs_kernel = pytest.mark.skipif(not receivers.available(), reason="the receivers kernel is not built")


@st.composite
def pods_inputs(draw):  # type: ignore[no-untyped-def]
    """Few nodes with little room, so searches backtrack and budgets run out."""
    n, r, t = draw(st.integers(1, 7)), draw(st.integers(1, 3)), draw(st.integers(1, 5))
    small = st.integers(0, 4).map(float)
    u8 = st.integers(0, 1)
    req = draw(hnp.arrays(np.float64, (t, r), elements=small))
    alloc = draw(hnp.arrays(np.float64, (n, r), elements=st.integers(0, 8).map(float)))
    used = np.minimum(draw(hnp.arrays(np.float64, (n, r), elements=small)), alloc)
    releasing = np.minimum(draw(hnp.arrays(np.float64, (n, r), elements=st.integers(0, 1).map(float))), used)
    pipelined = draw(hnp.arrays(np.float64, (n, r), elements=st.integers(0, 1).map(float)))
    n_static = draw(st.integers(1, 3))
    return PodsInput(
        req=req,
        fit=draw(hnp.arrays(np.uint8, (t, r), elements=u8)),
        static_row=np.array(draw(st.lists(st.integers(0, n_static - 1), min_size=t, max_size=t)), np.intp),
        static_ok=draw(hnp.arrays(np.uint8, (n_static, n), elements=u8)),
        alloc=alloc,
        used=used,
        releasing=releasing,
        pipelined=pipelined,
        future=alloc - used + releasing - pipelined,
        pod_count=draw(hnp.arrays(np.int64, n, elements=st.integers(0, 3))),
        pod_cap=draw(hnp.arrays(np.float64, n, elements=st.integers(0, 5).map(float))),
        allowed=draw(hnp.arrays(np.uint8, n, elements=u8)),
        stays=draw(hnp.arrays(np.uint8, n, elements=u8)),
        capacity=draw(hnp.arrays(np.float64, n, elements=st.integers(0, 2).map(float))),
        cost=draw(hnp.arrays(np.float64, n, elements=st.integers(0, 2).map(float))),
        rank=np.array(draw(st.permutations(range(n))), np.int64),
        goal=draw(st.integers(0, r - 1)),
        budget=draw(st.integers(0, 12)),
    )


@st.composite
def spread_inputs(draw, n_pods: int, n_nodes: int):  # type: ignore[no-untyped-def]
    """Random spread rules over few domains, so skews bind and minimums move as pods land."""
    n_rules = draw(st.integers(1, 3))
    n_domains = [draw(st.integers(1, 4)) for _ in range(n_rules)]
    counts = [draw(hnp.arrays(np.int64, d, elements=st.integers(0, 3))) for d in n_domains]
    codes = np.array([[draw(st.integers(-1, d - 1)) for _ in range(n_nodes)] for d in n_domains], np.int32).reshape(
        n_rules, n_nodes
    )
    domains = [np.array(sorted(draw(st.sets(st.integers(0, d - 1)))), np.int32) for d in n_domains]
    pod_rules = [sorted(draw(st.sets(st.integers(0, n_rules - 1)))) for _ in range(n_pods)]
    return search.RulesInput(
        counts=np.concatenate(counts),
        count_off=np.cumsum([0, *n_domains]).astype(np.intp),
        codes=codes,
        code_row=np.arange(n_rules, dtype=np.intp),
        domains=np.concatenate(domains).astype(np.int32),
        domain_off=np.cumsum([0] + [d.size for d in domains]).astype(np.intp),
        eligible=draw(hnp.arrays(np.uint8, (2, n_nodes), elements=st.integers(0, 1))),
        eligible_row=np.array([draw(st.integers(0, 1)) for _ in range(n_rules)], np.intp),
        self_match=draw(hnp.arrays(np.int64, n_rules, elements=st.integers(0, 1))),
        max_skew=draw(hnp.arrays(np.int64, n_rules, elements=st.integers(1, 2))),
        zero_min=draw(hnp.arrays(np.uint8, n_rules, elements=st.integers(0, 1))),
        missing_ok=draw(hnp.arrays(np.uint8, n_rules, elements=st.integers(0, 1))),
        member=draw(hnp.arrays(np.uint8, (n_pods, n_rules), elements=st.integers(0, 1))),
        pod_rules=np.array([r for rs in pod_rules for r in rs], np.intp),
        pod_rule_off=np.cumsum([0] + [len(rs) for rs in pod_rules]).astype(np.intp),
    )


@needs_kernel
@settings(max_examples=400, deadline=None)
@given(st.data())
def test_kernel_agrees_with_the_reference(data: st.DataObject) -> None:
    inp = data.draw(pods_inputs())
    if data.draw(st.booleans()):
        spread = data.draw(spread_inputs(inp.req.shape[0], inp.future.shape[0]))
        inp = dataclasses.replace(inp, rules=spread)
    before = {name: getattr(inp, name).copy() for name in ("used", "future", "pod_count")}
    if inp.rules is not None:
        before["counts"] = inp.rules.counts.copy()
    stuck_reference: set[int] = set()
    stuck_kernel: set[int] = set()
    expected = reference.place_pods(inp, stuck_reference)
    with dispatch.forced("kernel"):
        got = search.place_pods(inp, stuck_kernel)
    assert got == expected
    assert stuck_kernel == stuck_reference
    for name, value in before.items():
        now = inp.rules.counts if name == "counts" else getattr(inp, name)  # type: ignore[union-attr]
        assert np.array_equal(now, value), f"{name} was written"


def backtracking_case(budget: int) -> PodsInput:
    """Two 3-card pods; node 0 is the tighter fit for the first (both stay occupied, so rule 4
    decides), but only node 0 has the cpu the second needs -- so the first must go to node 1.
    Resources: [gpu, cpu]."""
    alloc = np.array([[3.0, 20.0], [4.0, 5.0]])
    zeros = np.zeros_like(alloc)
    return PodsInput(
        req=np.array([[3.0, 1.0], [3.0, 10.0]]),
        fit=np.ones((2, 2), np.uint8),
        static_row=np.zeros(2, np.intp),
        static_ok=np.ones((1, 2), np.uint8),
        alloc=alloc,
        used=zeros.copy(),
        releasing=zeros.copy(),
        pipelined=zeros.copy(),
        future=alloc.copy(),
        pod_count=np.zeros(2, np.int64),
        pod_cap=np.full(2, 110.0),
        allowed=np.ones(2, np.uint8),
        stays=np.ones(2, np.uint8),
        capacity=alloc[:, 0].copy(),
        cost=np.zeros(2),
        rank=np.arange(2, dtype=np.int64),
        goal=0,
        budget=budget,
    )


@pytest.mark.parametrize("form", ["reference", "kernel"])
def test_backtracks_to_the_next_receiver_within_the_budget(form: str) -> None:
    if form == "kernel" and not receivers.available():
        pytest.skip("the receivers kernel is not built")
    place = reference.place_pods if form == "reference" else search.place_pods
    with dispatch.forced("kernel" if form == "kernel" else "vectorised"):
        # node 0 for the first pod (tightest), stuck; node 1 for it, then node 0: three tries
        assert place(backtracking_case(3)) == [1, 0]
        assert place(backtracking_case(2)) is None


@needs_kernel
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(6, 40),
    st.floats(0.5, 0.95),
    st.integers(0, 100_000),
    st.sampled_from([4, 8]),
    st.sampled_from([0.0, 0.5, 1.0]),
)
def test_node_level_search_matches_the_general_search(
    nodes: int, fill: float, seed: int, cards: int, spread: float
) -> None:
    """On the first round of real plans (some with pods spread over hosts): for every candidate
    the kernel takes, its receivers are the ones the Simulation-based Search finds (or both fail,
    with the same stuck pods)."""
    opts = SynthOptions(nodes=nodes, fill=fill, seed=seed, cards_per_node=cards, spread=spread)
    assert_kernel_searches_like_the_filter(decode(synth(opts)))


def assert_kernel_searches_like_the_filter(state: ClusterState) -> None:
    """First round of a plan on ``state``: every candidate the kernel takes gets the receivers
    the Simulation-based Search finds (or both fail, with the same stuck pods)."""
    plan = planner.Planner(Mirror(state), validate(spec()))
    prep = plan.prepare()
    if not prep.candidates:
        return
    run = greedy.GreedyRun(plan, prep, None, False)
    assert run.node_level is not None
    sim, recv = run.sim, run.receivers
    for i, c in enumerate(run.table.cands):
        if not run.node_level.simple[i]:
            continue
        was = bool(recv.allowed[c.node])
        recv.allowed[c.node] = False
        stuck: set[int] = set()
        fast = run.node_level.place(i, stuck)
        mark = sim.checkpoint()
        for t in c.pods:
            sim.remove(int(t))
        general = search.Search(plan.mirror, sim, recv, c.pods)
        slow = list(general.targets) if general.place(0) else None
        sim.rollback(mark)
        recv.allowed[c.node] = was
        assert fast == slow, f"candidate {state.node_names[c.node]}"
        if slow is None:
            assert {s.task for s in general.stuck} == {int(c.pods[k]) for k in stuck}


@st.composite
def rule_clusters(draw):  # type: ignore[no-untyped-def]
    """Small clusters whose pods carry every kind of domain rule: one-way anti-affinity (by host
    or zone, to pods of another app), spread by zone or host with minDomains, nodes without the
    zone label, releasing pods that count for anti-affinity but not for spread."""
    c = Cluster()
    n_nodes = draw(st.integers(3, 8))
    for k in range(n_nodes):
        zone = draw(st.sampled_from(["z1", "z2", "z3", None]))
        c.node(f"n{k}", 4, **({"zone": zone} if zone else {}))
    for g in range(draw(st.integers(1, 4))):
        c.group(f"g{g}", 1)
    for p in range(draw(st.integers(2, 16))):
        app = draw(st.sampled_from(["a", "b", "c"]))
        profile: dict = {"labels": {"app": app}}  # type: ignore[type-arg]
        kind = draw(st.sampled_from(["none", "anti", "spread", "both"]))
        key = draw(st.sampled_from(["kubernetes.io/hostname", "zone"]))
        if kind in ("anti", "both"):
            other = draw(st.sampled_from(["a", "b", "c"]))
            term = {"labelSelector": {"matchLabels": {"app": other}}, "topologyKey": key}
            profile["podAntiAffinity"] = [term]
        if kind in ("spread", "both"):
            profile["topologySpreadConstraints"] = [
                {
                    "maxSkew": draw(st.integers(1, 2)),
                    "topologyKey": draw(st.sampled_from(["kubernetes.io/hostname", "zone"])),
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                    "minDomains": draw(st.sampled_from([0, 0, 4])),
                }
            ]
        status = draw(st.sampled_from([pb.Task.Running, pb.Task.Running, pb.Task.Releasing]))
        node = f"n{draw(st.integers(0, n_nodes - 1))}"
        group = f"g{draw(st.integers(0, len(c.snap.pod_groups) - 1))}"
        c.pod(f"p{p}", node, draw(st.sampled_from([1, 1, 2])), group, status=status, **profile)
    return c.state()


@needs_kernel
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_clusters())
def test_node_level_search_matches_the_general_search_on_every_rule(state: ClusterState) -> None:
    assert_kernel_searches_like_the_filter(state)
