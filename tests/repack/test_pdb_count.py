"""PodDisruptionBudgets matched once per selector through the pod index agree with the rule read
pod by pod (policy/v1: the PDB's namespace, its selector on the pod's labels; a null selector
matches nothing, an empty one everything), on random clusters and random selectors."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.mirror.core import Mirror
from sidecar.mirror.selectors import label_selector_matches
from sidecar.repack.limits import count_pdbs
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.snapshot.decode import decode
from tests.builders import node, snapshot, task

KEYS, VALUES, NAMESPACES = ["app", "tier", "team"], ["a", "b", "c"], ["ns-1", "ns-2"]


def groups() -> list[pb.PodGroup]:
    return [pb.PodGroup(namespace=ns, name="pg", min_member=1) for ns in NAMESPACES]


labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@st.composite
def selectors(draw: st.DrawFn) -> pb.LabelSelector | None:
    if draw(st.integers(0, 9)) == 0:
        return None  # a PDB without a selector
    sel = pb.LabelSelector(
        match_labels=draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2))
    )
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        values = (
            draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True))
            if op in ("In", "NotIn")
            else []
        )
        sel.match_expressions.add(key=draw(st.sampled_from(KEYS)), operator=op, values=values)
    return sel


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    pods=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(NAMESPACES), labels_st), min_size=1, max_size=24),
    pdbs=st.lists(st.tuples(st.sampled_from(NAMESPACES), selectors()), max_size=6),
)
def test_pdbs_counted_per_selector_agree_with_the_pod_by_pod_rule(
    pods: list[tuple[int, str, dict[str, str]]], pdbs: list[tuple[str, pb.LabelSelector | None]]
) -> None:
    tasks = []
    for i, (where, ns, labels) in enumerate(pods):
        t = task(f"p{i}", f"n{where}", 1, ns=ns, pod_group="pg")
        t.profile.labels.update(labels)
        tasks.append(t)
    snap = snapshot([node(f"n{k}") for k in range(4)] + [node("spare")], tasks, groups())
    for k, (ns, sel) in enumerate(pdbs):
        pdb = snap.pdbs.add(namespace=ns, name=f"pdb-{k}", disruptions_allowed=100)
        if sel is not None:
            pdb.selector.CopyFrom(sel)
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    planner = Planner(Mirror(state), run)
    cands = planner.prepare().candidates or []
    assert cands or len({where for where, _, _ in pods}) <= -(-len(pods) // 8), "fragmented: some node is a candidate"
    for c in cands:
        c.pdbs.clear()
    count_pdbs(state, cands, planner.mirror.predicates.index.matching_profiles)
    for c in cands:
        expected: Counter[int] = Counter()
        for p, pdb in enumerate(state.pdbs):
            for t in map(int, c.pods):
                ns = state.namespaces[state.task_namespace[t]]
                labels = state.profiles[state.task_profile[t]].labels
                if pdb.HasField("selector") and ns == pdb.namespace and label_selector_matches(pdb.selector, labels):
                    expected[p] += 1
        assert c.pdbs == expected


def test_a_pdb_with_match_expressions_only_counts_the_pods_it_selects() -> None:
    """In/Exists narrow through the label index, NotIn/DoesNotExist are judged by the selector rule."""
    pods = [task(n, "n0", 1, ns=ns, pod_group="pg") for n, ns in (("a", "ns-1"), ("b", "ns-1"), ("c", "ns-2"))]
    for t, labels in zip(pods, [{"app": "a"}, {"app": "b", "tier": "x"}, {"app": "a"}], strict=True):
        t.profile.labels.update(labels)
    snap = snapshot([node("n0"), node("n1")], [*pods, task("big", "n1", 2, ns="ns-1", pod_group="pg")], groups())
    sel = pb.LabelSelector()
    sel.match_expressions.add(key="app", operator="In", values=["a", "b"])
    sel.match_expressions.add(key="tier", operator="DoesNotExist")
    snap.pdbs.add(namespace="ns-1", name="p", disruptions_allowed=5, selector=sel)
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    planner = Planner(Mirror(state), run)
    cands = planner.prepare().candidates or []
    n0 = next(c for c in cands if state.node_names[c.node] == "n0")
    assert n0.pdbs == Counter({0: 1}), "only a: b has a tier, c is in another namespace"
