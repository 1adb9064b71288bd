"""Snapshot validation (every error names its field) and the row/column equivalence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import Limits, decode
from sidecar.snapshot.forms import to_rows
from tests.builders import GPU, node, snapshot, task


def base() -> pb.Snapshot:
    return snapshot(
        [node("n-0"), node("n-1")],
        [task("a", "n-0", 1, pod_group="pg"), task("b", "n-1", 2, pod_group="pg")],
        [pb.PodGroup(namespace="default", name="pg", min_member=1)],
    )


def columns() -> pb.Snapshot:
    return synth(SynthOptions(nodes=8, fill=0.5, seed=5))


MALFORMED = [
    # (id, mutate, expected field prefix, words in the message)
    (
        "negative request",
        lambda s: s.tasks[0].requests.__setitem__("cpu", -5),
        'tasks[0].requests["cpu"]',
        "negative quantity",
    ),
    ("nan request", lambda s: s.tasks[0].requests.__setitem__(GPU, math.nan), f'tasks[0].requests["{GPU}"]', "finite"),
    (
        "negative allocatable",
        lambda s: s.nodes[1].allocatable.__setitem__(GPU, -8000),
        f'nodes[1].allocatable["{GPU}"]',
        "negative quantity",
    ),
    (
        "infinite allocatable",
        lambda s: s.nodes[0].allocatable.__setitem__("cpu", math.inf),
        'nodes[0].allocatable["cpu"]',
        "finite",
    ),
    ("duplicate node", lambda s: setattr(s.nodes[1], "name", "n-0"), "nodes[1].name", 'duplicate node "n-0"'),
    ("missing node name", lambda s: setattr(s.nodes[0], "name", ""), "nodes[0].name", "missing"),
    ("duplicate uid", lambda s: setattr(s.tasks[1], "uid", s.tasks[0].uid), "tasks[1].uid", "duplicate task uid"),
    ("duplicate pod", lambda s: setattr(s.tasks[1], "name", "a"), "tasks[1].name", 'duplicate pod "default/a"'),
    ("missing task name", lambda s: setattr(s.tasks[0], "name", ""), "tasks[0].name", "missing"),
    ("missing namespace", lambda s: setattr(s.tasks[0], "namespace", ""), "tasks[0].namespace", "missing"),
    ("missing status", lambda s: setattr(s.tasks[0], "status", 0), "tasks[0].status", "missing"),
    ("invalid status", lambda s: setattr(s.tasks[0], "status", 3), "tasks[0].status", "invalid status 3"),
    (
        "duplicate pod group",
        lambda s: s.pod_groups.add(namespace="default", name="pg"),
        "pod_groups[1].name",
        "duplicate PodGroup",
    ),
    (
        "negative min member",
        lambda s: setattr(s.pod_groups[0], "min_member", -1),
        "pod_groups[0].min_member",
        "negative",
    ),
    (
        "taint effect",
        lambda s: s.nodes[0].taints.add(key="k", effect="Sometimes"),
        "nodes[0].taints[0].effect",
        'unknown effect "Sometimes"',
    ),
    ("taint key", lambda s: s.nodes[0].taints.add(effect="NoSchedule"), "nodes[0].taints[0].key", "missing"),
    (
        "taint on a later node",
        lambda s: s.nodes[1].taints.extend([pb.Taint(key="a", effect="NoSchedule"), pb.Taint(key="b")]),
        "nodes[1].taints[1].effect",
        'unknown effect ""',
    ),
    ("empty resource name", lambda s: s.nodes[1].allocatable.__setitem__("", 1), 'nodes[1].allocatable[""]', "empty"),
    (
        "the first bad allocatable in node order",
        lambda s: (s.nodes[1].allocatable.__setitem__("cpu", -1), s.nodes[1].allocatable.__setitem__("memory", -1)),
        'nodes[1].allocatable["cpu"]',
        "negative quantity",
    ),
    ("pod group namespace", lambda s: setattr(s.pod_groups[0], "namespace", ""), "pod_groups[0].namespace", "missing"),
    ("pod group name", lambda s: s.pod_groups.add(namespace="default"), "pod_groups[1].name", "missing"),
    (
        "negative min task member",
        lambda s: s.pod_groups[0].min_task_member.__setitem__("worker", -2),
        'pod_groups[0].min_task_member["worker"]',
        "negative value -2",
    ),
]


@pytest.mark.parametrize("mutate,field,words", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_rows(mutate, field: str, words: str) -> None:  # type: ignore[no-untyped-def]
    snap = base()
    decode(snap)  # the base is valid
    mutate(snap)
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == field
    assert words in str(err.value)


def test_dangling_references_are_warnings_not_errors() -> None:
    """Real sessions hold tasks on nodes whose Node object is gone (Volcano's cache leaves the node
    out, the Job keeps the task until pod GC) and pods whose PodGroup was deleted first: decoded,
    counted on no node / in no PodGroup, and said once per kind with a count and an example."""
    snap = base()
    snap.tasks.add(name="c", namespace="default", node="ghost", status=pb.Task.Running, pod_group="pg")
    snap.tasks.add(name="d", namespace="default", node="ghost", status=pb.Task.Running, pod_group="pg")
    snap.tasks[0].pod_group = "gone"
    snap.warnings.append("1 task of a Job without PodGroup left out")
    state = decode(snap)
    assert state.task_node.tolist() == [0, 1, -1, -1]
    assert state.task_pod_group.tolist() == [-1, 0, 0, 0]
    assert state.missing_groups == {0: "default/gone"}
    assert state.ledger.used[0, state.resource(GPU)] == 1000  # "a" still holds its node
    assert state.warnings == (
        "1 task of a Job without PodGroup left out",
        '2 tasks on nodes the snapshot does not list (e.g. tasks[2] "default/c" on "ghost"): counted on no node, '
        "as Volcano's session counts a task whose Node object is gone",
        '1 task of PodGroups the snapshot does not list (e.g. tasks[0] "default/a": PodGroup "default/gone"): '
        "not movable, so their nodes are no candidates",
    )
    assert decode(base()).warnings == ()


def test_columnar_tasks_placed_on_no_node_are_counted_in_the_warning() -> None:
    snap = columns()
    placed = next(i for i, s in enumerate(snap.task_columns.status) if s == pb.Task.Running)
    snap.task_columns.node[placed] = -1
    (warning,) = decode(snap).warnings
    assert warning.startswith(f'1 task on nodes the snapshot does not list (e.g. task_columns.node[{placed}] "')


def test_producer_warnings_are_bounded() -> None:
    snap = base()
    snap.warnings.extend(["x" * 5000] + [f"w{i}" for i in range(30)])
    warnings = decode(snap).warnings
    assert len(warnings) == 21 and len(warnings[0]) <= 600
    assert warnings[-1] == "11 more warnings from the snapshot's producer left out"


COLUMN_MALFORMED = [
    ("node index", lambda c: c.node.__setitem__(3, 99), "task_columns.node[3]", "unknown node index 99 (8 nodes"),
    ("node index below -1", lambda c: c.node.__setitem__(0, -2), "task_columns.node[0]", "unknown node index -2"),
    (
        "pod group index",
        lambda c: c.pod_group.__setitem__(1, 10_000),
        "task_columns.pod_group[1]",
        "unknown pod_group index",
    ),
    ("profile index", lambda c: c.profile.__setitem__(2, 500), "task_columns.profile[2]", "unknown profile index"),
    (
        "namespace index",
        lambda c: c.namespace.__setitem__(4, 7),
        "task_columns.namespace[4]",
        "unknown namespace index 7",
    ),
    ("short column", lambda c: c.node.pop(), "task_columns.node", "expected"),
    ("status", lambda c: c.status.__setitem__(0, 5), "task_columns.status[0]", "invalid task status 5"),
    (
        "negative request",
        lambda c: c.requests[0].values.__setitem__(6, -1.0),
        "task_columns.requests[0].values[6]",
        "negative",
    ),
    ("short request column", lambda c: c.requests[2].values.pop(), "task_columns.requests[2]", "entries, expected"),
    (
        "duplicate column",
        lambda c: c.requests.add(resource="cpu", values=list(c.requests[0].values)),
        "task_columns.requests[3].resource",
        'duplicate column "cpu"',
    ),
    ("missing uid", lambda c: c.uid.__setitem__(5, ""), "task_columns.uid[5]", "missing"),
    ("duplicate uid", lambda c: c.uid.__setitem__(5, c.uid[4]), "task_columns.uid[5]", "duplicate task uid"),
]


@pytest.mark.parametrize("mutate,field,words", [m[1:] for m in COLUMN_MALFORMED], ids=[m[0] for m in COLUMN_MALFORMED])
def test_malformed_columns(mutate, field: str, words: str) -> None:  # type: ignore[no-untyped-def]
    snap = columns()
    decode(snap)
    mutate(snap.task_columns)
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field.startswith(field), str(err.value)
    assert words in str(err.value)


def test_limits_are_invalid_argument_with_field() -> None:
    with pytest.raises(InputError, match=r"^nodes: 2 nodes exceed the limit of 1$"):
        decode(base(), Limits(max_nodes=1))
    with pytest.raises(InputError, match=r"^tasks: 2 tasks exceed the limit of 1$"):
        decode(base(), Limits(max_tasks=1))


def test_rows_and_columns_decode_to_the_same_state() -> None:
    snap = synth(SynthOptions(nodes=40, fill=0.7, seed=11))
    a, b = decode(snap), decode(to_rows(snap))
    assert a.resources == b.resources
    assert a.node_names == b.node_names
    assert a.task_uid == b.task_uid and a.task_name == b.task_name
    for attr in ("task_namespace", "task_node", "task_status", "task_pod_group", "task_priority", "task_req"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr), err_msg=attr)
    assert [a.profiles[i] for i in a.task_profile] == [b.profiles[i] for i in b.task_profile]
    np.testing.assert_array_equal(a.ledger.future_idle, b.ledger.future_idle)


def test_ledger_follows_volcano_node_accounting() -> None:
    nodes = [node("n", cards=8)]
    tasks = [
        task("run", "n", 2),
        task("rel", "n", 1, status=pb.Task.Releasing),
        task("pipe", "n", 4, status=pb.Task.Pipelined),
        task("done", "n", 8, status=pb.Task.Succeeded),
        task("bound", "n", 1, status=pb.Task.Bound),
    ]
    state = decode(snapshot(nodes, tasks))
    g = state.resource(GPU)
    led = state.ledger
    assert led.used[0, g] == 4000  # run + rel + bound
    assert led.releasing[0, g] == 1000
    assert led.pipelined[0, g] == 4000
    assert led.idle[0, g] == 4000
    assert led.future_idle[0, g] == 4000 + 1000 - 4000
    assert led.used[0, state.resource("pods")] == 3  # every task requests one pod slot


def test_pods_allocatable_missing_means_unlimited() -> None:
    n = node("n")
    del n.allocatable["pods"]
    state = decode(snapshot([n], [task("a", "n")]))
    assert np.isinf(state.node_alloc[0, state.resource("pods")])
