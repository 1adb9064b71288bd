"""Statement semantics: cumulative tentative moves, exact rollback."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar import dispatch
from sidecar.mirror.simulation import Simulation
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from tests.mirror_cases import mirror, n, t


def _snapshot_of(sim: Simulation) -> tuple[object, ...]:
    ports = {k: dict(v) for k, v in sim.ports().items() if v}
    return (
        sim.used.tobytes(),
        sim.releasing.tobytes(),
        sim.pipelined.tobytes(),
        sim.pod_count.tobytes(),
        sim.node_of.tobytes(),
        sim.status.tobytes(),
        ports,
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 1000),
    steps=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=25),
    keep=st.integers(0, 25),
)
def test_rollback_restores_exactly(seed: int, steps: list[tuple[int, int]], keep: int) -> None:
    state = decode(synth(SynthOptions(nodes=12, fill=0.7, seed=seed)))
    sim = Simulation(state)
    marks = []
    images = []
    for k, (a, b) in enumerate(steps):
        if k == keep:
            marks.append(sim.checkpoint())
            images.append(_snapshot_of(sim))
        task = a % state.n_tasks
        node = b % state.n_nodes
        if sim.on_node()[task]:
            sim.move(task, node)
        elif sim.node_of[task] < 0:
            sim.place(task, node)
    base = _snapshot_of(Simulation(state))
    if marks:
        sim.rollback(marks[0])
        assert _snapshot_of(sim) == images[0]
    sim.rollback(0)
    assert _snapshot_of(sim) == base


def test_a_later_check_sees_earlier_moves() -> None:
    m = mirror([n("a", 8), n("b", 8), n("c", 8)], [t("x", "a", 4), t("y", "a", 4), t("z", "c", 6)])
    sim = Simulation(m.state)
    x = m.state.task_uid.index("default/x")
    y = m.state.task_uid.index("default/y")
    sim.move(x, m.state.node("b"))
    result = m.filter(m.subject_for_task(y), sim=sim)
    feasible = [m.state.node_names[i] for i in np.flatnonzero(result.feasible)]
    assert feasible == ["a", "b"]  # b holds 4 after x arrived: y (4) still fits; c holds 6
    sim.move(y, m.state.node("b"))
    z = m.state.task_uid.index("default/z")
    after = m.filter(m.subject_for_task(z), sim=sim)
    assert [m.state.node_names[i] for i in np.flatnonzero(after.feasible)] == ["a", "c"]
    sim.rollback(0)
    assert sim.node_of[x] == m.state.node("a")


def test_moved_pods_constraints_count_against_each_other() -> None:
    anti = {
        "podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]
    }
    m = mirror(
        [n("a"), n("b"), n("c")],
        [t("w0", "a", 1, labels={"app": "web"}, **anti), t("w1", "b", 1, labels={"app": "web"}, **anti)],
    )
    sim = Simulation(m.state)
    w0, w1 = (m.state.task_uid.index(f"default/w{i}") for i in (0, 1))
    sim.move(w0, m.state.node("c"))
    result = m.filter(m.subject_for_task(w1), sim=sim)
    # w0 now sits on c, so c is closed to w1; a (left by w0) and b (w1's own node) are open.
    assert [m.state.node_names[i] for i in np.flatnonzero(result.feasible)] == ["a", "b"]
    # w1's own term matches w0 too, and Kubernetes checks the pod's own anti-affinity first.
    assert result.reasons()[m.state.node("c")] == ["node(s) didn't match pod anti-affinity rules"]


def test_ports_follow_moves() -> None:
    port = {"hostPorts": [{"port": 9000}]}
    m = mirror([n("a"), n("b")], [t("p0", "a", **port), t("p1", "b", **port)])
    sim = Simulation(m.state)
    p0 = m.state.task_uid.index("default/p0")
    p1 = m.state.task_uid.index("default/p1")
    assert not m.filter(m.subject_for_task(p1), sim=sim).feasible[m.state.node("a")]
    sim.remove(p0)
    assert m.filter(m.subject_for_task(p1), sim=sim).feasible[m.state.node("a")]
    sim.rollback(0)
    assert not m.filter(m.subject_for_task(p1), sim=sim).feasible[m.state.node("a")]


# volcano v1.14.1 pkg/scheduler/api/node_info.go (AddTask refuses a Binding task that does not
# fit Idle; the refused task is not in the NodeInfo, so no pod count, port or affinity sees it)
def test_refused_binding_task_is_not_on_its_node_for_pods_ports_and_affinity() -> None:
    from sidecar.api.v1alpha1 import snapshot_pb2 as pb
    from tests.mirror_cases import check

    port = [{"port": 8080}]
    anti = [{"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]
    tasks = [
        t("big", "a", cpu=30_000),
        # Binding, asks 4 cpu with only 2 idle: refused
        t("late", "a", cpu=4000, status=pb.Task.Binding, labels={"app": "x"}, hostPorts=port),
    ]
    m = mirror([n("a", pods=2)], tasks)
    late = m.state.task_name.index("late")
    assert m.state.ledger.refused.tolist() == [False, True]
    assert m.state.ledger.used[0, 0] == 30_000
    sim = Simulation(m.state)
    assert not sim.on_node()[late] and sim.pod_count[0] == 1 and not sim.ports()
    # a pod with the same port, anti-affinity to app=x and a pod slot still fits
    probe = t("probe", cpu=1000, hostPorts=port, podAntiAffinity=anti)
    assert check(m, probe) == {"a": []}
    # the planner may still move it: remove changes nothing on the node, rollback restores it
    mark = sim.checkpoint()
    before = _snapshot_of(sim)
    sim.remove(late)
    assert sim.node_of[late] == -1 and sim.used[0, 0] == 30_000 and sim.pod_count[0] == 1
    sim.place(late, 0)
    assert sim.on_node()[late] and sim.pod_count[0] == 2
    sim.rollback(mark)
    assert _snapshot_of(sim) == before and not sim.on_node()[late]


def test_a_binding_task_that_fits_idle_is_counted_like_any_other() -> None:
    from sidecar.api.v1alpha1 import snapshot_pb2 as pb

    m = mirror([n("a")], [t("b", "a", cpu=2000, status=pb.Task.Binding)])
    assert not m.state.ledger.refused.any()
    assert Simulation(m.state).pod_count[0] == 1 and m.state.ledger.used[0, 0] == 2000


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 1000),
    picks=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=8),
    mode=st.sampled_from(["kernel", "twin"] if dispatch.kernels_built() else ["twin"]),
)
def test_relocate_is_remove_then_place_bit_for_bit(seed: int, picks: list[tuple[int, int]], mode: str) -> None:
    """The planner's committed bulk move (kernel and twin) equals removing each task, then placing
    each, in order."""
    state = decode(synth(SynthOptions(nodes=12, fill=0.7, seed=seed)))
    one, bulk = Simulation(state), Simulation(state)
    placed = [int(x) for x in np.flatnonzero(one.on_node())]
    tasks = list(dict.fromkeys(placed[a % len(placed)] for a, _ in picks)) if placed else []
    targets = [b % state.n_nodes for _, b in picks][: len(tasks)]
    for task in tasks:
        one.remove(task)
    for task, node in zip(tasks, targets, strict=True):
        one.place(task, node)
    one.commit()
    with dispatch.forced(mode):  # type: ignore[arg-type]
        bulk.relocate(np.array(tasks, np.intp), targets)
    assert _snapshot_of(bulk) == _snapshot_of(one)
    assert bulk.idle().tobytes() == one.idle().tobytes()
    assert bulk.future_idle().tobytes() == one.future_idle().tobytes()


def test_relocate_refuses_an_open_statement_and_host_ports() -> None:
    state = decode(synth(SynthOptions(nodes=6, fill=0.7, seed=1)))
    sim = Simulation(state)
    task = int(np.flatnonzero(sim.on_node())[0])
    mark = sim.checkpoint()
    sim.remove(task)
    with pytest.raises(RuntimeError, match="committed"):
        sim.relocate(np.array([task], np.intp), [0])
    sim.rollback(mark)
    m = mirror([n("a"), n("b")], [t("p0", "a", hostPorts=[{"port": 9000}])])
    p0 = m.state.task_uid.index("default/p0")
    with pytest.raises(ValueError, match="host ports"):
        Simulation(m.state).relocate(np.array([p0], np.intp), [m.state.node("b")])
