"""Properties of every plan on random clusters, checked independently of the planner's code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar import dispatch
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.holding import goal_tasks, holding_nodes
from tests.plan_cases import GPU, spec


@st.composite
def runs(draw):  # type: ignore[no-untyped-def]
    snap = synth(
        SynthOptions(
            nodes=draw(st.integers(4, 30)),
            fill=draw(st.floats(0.2, 0.9)),
            seed=draw(st.integers(0, 100_000)),
            cards_per_node=draw(st.sampled_from([4, 8])),
            spread=draw(st.sampled_from([0.0, 0.0, 0.5])),
        )
    )
    fields: dict = {}  # type: ignore[type-arg]
    pgs = [f"{pg.namespace}/{pg.name}" for pg in snap.pod_groups]
    scope: dict = {}  # type: ignore[type-arg]
    if pgs and draw(st.booleans()):
        excluded = draw(st.lists(st.sampled_from(pgs), max_size=max(1, len(pgs) // 3), unique=True))
        scope["podGroups"] = {
            "include": {"selector": {"matchLabels": {"repack.volcano.sh/eligible": "true"}}},
            "exclude": {"names": excluded, "selector": {"matchLabels": {"repack.volcano.sh/protected": "true"}}},
        }
    if draw(st.booleans()):
        scope["nodes"] = {
            "include": {
                "selector": {
                    "matchExpressions": [
                        {
                            "key": "accelerator-pool",
                            "operator": "In",
                            "values": draw(
                                st.lists(st.sampled_from(["pool-a", "pool-b", "pool-c"]), min_size=1, unique=True)
                            ),
                        }
                    ]
                }
            }
        }
    if scope:
        fields["scope"] = scope
    budget: dict = {}  # type: ignore[type-arg]
    if draw(st.booleans()):
        budget["podGroups"] = draw(st.integers(1, 6))
    if draw(st.booleans()):
        budget["resources"] = {GPU: draw(st.integers(1, 24))}
    if budget:
        fields["maxPerRun"] = budget
    return snap, fields


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_every_plan_keeps_the_rules(run) -> None:  # type: ignore[no-untyped-def]
    snap, fields = run
    state = decode(snap)
    rs = validate(spec(**fields))
    result = Planner(Mirror(state), rs).plan()
    g = state.resource(GPU)
    pg_ok = rs.scope.pod_group_mask(state)
    node_ok = rs.scope.node_mask(state)
    freed = set(result.freed)
    moved_groups = set()
    moved_cards = 0.0
    for m in result.moves:
        prof = state.profiles[state.task_profile[m.task]]
        pg = int(state.task_pod_group[m.task])
        assert prof.scheduler_name == "volcano", "moved a pod of another scheduler"
        assert pg >= 0 and pg_ok[pg], "moved a PodGroup-less or out-of-scope pod"
        assert m.source in freed and node_ok[m.source], "moved a pod off a node that is not emptied / in scope"
        assert m.target not in freed and m.target != m.source, "received on a node being emptied"
        moved_groups.add(pg)
        moved_cards += state.task_req[m.task, g]
    if rs.max_pod_groups is not None:
        assert len(moved_groups) <= rs.max_pod_groups
    if rs.max_resource is not None:
        assert moved_cards <= rs.max_resource + 0.1

    # Independent replay through the mirror core, in plan order.
    mirror = Mirror(state)
    sim = Simulation(state)
    holds_goal = goal_tasks(state, g)
    holding = holding_nodes(state, g)
    emptied: set[int] = set()
    k = 0
    for node in result.freed:
        emptied.add(node)
        leaving = [m for m in result.moves[k:] if m.source == node]
        assert [m.source for m in result.moves[k : k + len(leaving)]] == [node] * len(leaving)
        on_node = set(np.flatnonzero(holds_goal & (state.task_node == node)).tolist())
        assert {m.task for m in leaving} == on_node, "a freed node keeps goal-resource pods"
        for m in leaving:
            sim.remove(m.task)
        for m in leaving:
            assert holding[m.target], "re-lit a node whose goal resource was idle"
            assert m.target not in emptied
            verdict = mirror.filter(mirror.subject_for_task(m.task), sim=sim)
            assert verdict.feasible[m.target], (
                f"mirror rejects {state.task_name[m.task]} -> {state.node_names[m.target]}"
            )
            sim.place(m.task, m.target)
        k += len(leaving)
    assert k == len(result.moves)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_kernel_fast_path_plans_exactly_like_the_python_path(run) -> None:  # type: ignore[no-untyped-def]
    if not dispatch.kernels_built():
        pytest.skip("the Cython kernels are not built")
    snap, fields = run
    state = decode(snap)
    fast = Planner(Mirror(state), validate(spec(**fields))).plan()
    with dispatch.forced("vectorised"):
        slow = Planner(Mirror(state), validate(spec(**fields))).plan()
    assert fast.moves == slow.moves and fast.freed == slow.freed
