"""One definition of "this node holds the goal resource" (sidecar/snapshot/holding.py), and its users
agree on it: fragmentation's occupied nodes, the planner's receivers (rule 1: never re-light an idle
node; its kernels read the same ``allowed`` array), the exact planner's receivers and Execute's
question (``holding_node_names``).

Before issue 36 the users disagreed: fragmentation left out Pipelined and Releasing tasks, the
planner and the exact planner counted Pipelined ones as holding, the watcher counted Releasing ones.
On a node whose only goal pod was Pipelined the planner moved a pod there -- re-lighting it, the
fragment only moved ("25% -> 25%", RepackRecommended) -- while Execute would not have suggested it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.repack import exact
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.planner import Planner
from sidecar.repack.receivers import Receivers
from sidecar.repack.spec import validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.holding import HOLDING_STATUSES, holding_node_names, holding_nodes, holding_statuses, holds
from sidecar.snapshot.state import ClusterState
from tests.plan_cases import GPU, Cluster, explanation, moves, plan, reason, spec

STATUSES = sorted(ts.VALID)


def test_the_status_rule() -> None:
    """Volcano's Used minus Releasing: every placed status but Pipelined, Releasing and the terminated."""
    assert {ts.PENDING, ts.ALLOCATED, ts.BINDING, ts.BOUND, ts.RUNNING, ts.UNKNOWN} == HOLDING_STATUSES
    column = np.array(STATUSES, np.int32)
    assert holding_statuses(column).tolist() == [holds(s) for s in STATUSES]
    assert not holds(0)  # STATUS_UNSPECIFIED is no status


def test_execute_form_reads_both_task_forms_and_skips_a_uid() -> None:
    """``holding_node_names`` over a decoded snapshot: the same nodes from rows and columns; a
    node whose only goal pod is skipped holds nothing."""
    snap = synth(SynthOptions(nodes=10, fill=0.5, seed=4))
    state, rows = decode(snap), decode(to_rows(snap))
    names = holding_node_names(state, GPU)
    assert names == holding_node_names(rows, GPU)
    assert holding_node_names(state, "example.com/none") == set()
    g = state.resource(GPU)
    on = np.bincount(state.task_node[(state.task_req[:, g] > 0) & (state.task_node >= 0)], minlength=state.n_nodes)
    lone = next(n for n in range(state.n_nodes) if on[n] == 1)
    (t,) = np.flatnonzero((state.task_node == lone) & (state.task_req[:, g] > 0))
    assert holding_node_names(state, GPU, skip=[state.task_uid[t]]) == names - {state.node_names[lone]}


def users(state: ClusterState, resource: str = GPU) -> dict[str, list[bool]]:
    """Each user's verdict per node: does it hold ``resource``?"""
    g = state.resource(resource)
    planner = Planner(Mirror(state), validate(spec(resource)))
    prep = planner.prepare()
    providing = state.node_alloc[:, g] > 0.1
    out = {"definition": holding_nodes(state, g).tolist()}
    # fragmentation: occupied = providing and holding, so every non-providing node counts as holding
    # here only when the definition says so; compared on the providing nodes below
    frag = fragmentation(state, resource)
    assert frag.occupied_nodes == int((providing & holding_nodes(state, g)).sum())
    if prep.candidates is not None:  # every occupied node is a candidate or explained
        occupied = {c.node for c in prep.candidates} | set(prep.outcomes)
        out["fragmentation"] = [n in occupied if providing[n] else out["definition"][n] for n in range(state.n_nodes)]
    rank = np.arange(state.n_nodes, dtype=np.int64)
    none = np.zeros(state.n_nodes, bool)
    out["receivers"] = Receivers(
        planner.mirror, Simulation(state), g, none, np.zeros(state.n_nodes), rank
    ).allowed.tolist()
    model = exact.Model(planner, [], max_pairs=None)
    out["exact"] = np.isin(np.arange(state.n_nodes), model.receivers).tolist()
    names = holding_node_names(state, resource)
    out["execute"] = [name in names for name in state.node_names]
    return out


def assert_agree(state: ClusterState) -> None:
    verdicts = users(state)
    expected = verdicts.pop("definition")
    for user, verdict in verdicts.items():
        assert verdict == expected, user


@st.composite
def states(draw: st.DrawFn) -> ClusterState:
    """Synthetic clusters whose tasks take every status (placed ones keep their node: a Pipelined
    task's node is its nomination), some Binding ones refused by the ledger, and nodes all of whose
    tasks share one status (only Pipelined or only Releasing pods: where the users disagreed)."""
    opts = SynthOptions(
        nodes=draw(st.integers(2, 24)),
        fill=draw(st.floats(0.1, 0.95)),
        seed=draw(st.integers(0, 100_000)),
        cards_per_node=draw(st.sampled_from([4, 8])),
    )
    snap = synth(opts)
    cols = snap.task_columns
    n = len(cols.status)
    k = draw(st.integers(0, n))
    for i in draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)) if n else []:
        cols.status[i] = draw(st.sampled_from(STATUSES))
    uniform = draw(st.dictionaries(st.integers(0, opts.nodes - 1), st.sampled_from(STATUSES)))
    for i in range(n):
        if cols.node[i] in uniform:
            cols.status[i] = uniform[cols.node[i]]
    return decode(snap)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_the_users_agree_on_random_states(state: ClusterState) -> None:
    assert_agree(state)


def only_goal_pod(status: int) -> Cluster:
    """a's 2-card pod can go nowhere but ``lone``, whose only goal pod is in ``status``; b and c are
    full and unmovable (another scheduler)."""
    return (
        Cluster()
        .node("a")
        .node("b")
        .node("c")
        .node("lone")
        .group("ja", 1)
        .group("jb", 1)
        .group("jl", 1)
        .pod("p1", "a", 2, group="ja")
        .pod("q", "b", 7, group="jb", scheduler="default-scheduler")
        .pod("r", "c", 7, group="jb", scheduler="default-scheduler")
        .pod("l", "lone", 2, group="jl", status=status)
    )


@pytest.mark.parametrize("status", [pb.Task.Pipelined, pb.Task.Releasing], ids=["Pipelined", "Releasing"])
def test_a_node_whose_only_goal_pod_is_pipelined_or_releasing_holds_nothing(status: int) -> None:
    """The regression: every user says ``lone`` holds nothing, so the plan does not re-light it (with a
    Pipelined pod the planner used to move p1 there: "25% -> 25%", RepackRecommended)."""
    state = only_goal_pod(status).state()
    lone = state.node("lone")
    verdicts = users(state)
    assert all(not v[lone] for v in verdicts.values()), verdicts
    assert_agree(state)
    status_ = plan(state)
    assert moves(status_) == []
    assert explanation(status_, "a")[0] == "NoReceiver"
    assert reason(status_) == "InsufficientImprovement"


def test_execute_agrees() -> None:
    """Execute's two questions, on the regression's snapshots and a synthetic one with Pipelined and
    Releasing pods: which nodes may receive a replacement, and which planned nodes are freed now."""
    from sidecar.watcher.execute.placement import receivers
    from sidecar.watcher.execute.result import freed_now

    mixed = to_rows(synth(SynthOptions(nodes=12, fill=0.7, seed=3)))
    for k, task in enumerate(mixed.tasks):
        if k % 3 == 0:
            task.status = pb.Task.Releasing if k % 2 else pb.Task.Pipelined  # type: ignore[assignment]
    snaps = [only_goal_pod(pb.Task.Pipelined).snap, only_goal_pod(pb.Task.Releasing).snap, mixed]
    for snap in snaps:
        state = decode(snap)
        held = holding_node_names(state, GPU)
        providing = {n.name for n in snap.nodes if n.allocatable.get(GPU, 0) > 0}
        assert set(receivers(snap, GPU, [], "")) == held | (set(state.node_names) - providing)
        assert set(freed_now(snap, state.node_names, GPU)) == set(state.node_names) - held
