"""Kubernetes objects -> Snapshot (``sidecar.snapshot.kube``) inverts ``objects_from_snapshot``.

Round trips compare the decoded ClusterState columns the mirror reads, up to the status
collapse the objects module documents (Allocated/Binding read back as Bound) and to whole units
(Kubernetes holds whole bytes and milli-units); the objects also go through the fake cluster
and back through the watcher's list calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.decode import decode
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.kube import parse_quantity, snapshot_from_objects, task_from_pod, task_priority, volcano_units
from sidecar.snapshot.state import ClusterState
from sidecar.watcher.kit.cache import read_cluster

GUIDE = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend.json"
READ_BACK = {ts.ALLOCATED: ts.BOUND, ts.BINDING: ts.BOUND}
KINDS = ("Namespace", "Node", "Pod", "PodGroup", "PodDisruptionBudget")


def _from_objects(objs: list[dict[str, Any]]) -> pb.Snapshot:
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    return snapshot_from_objects(*(by_kind[k] for k in KINDS))


def _tasks(state: ClusterState) -> dict[str, tuple[Any, ...]]:
    pg = [f"{g.namespace}/{g.name}" for g in state.pod_groups]
    out = {}
    for t, name in enumerate(state.task_name):
        prof = pb.TaskProfile()
        prof.CopyFrom(state.profiles[state.task_profile[t]])
        prof.scheduler_name = prof.scheduler_name or "default-scheduler"
        if prof.owner_kind == "Pod":  # a bare pod (the traces' word): no controller reference, read back as none
            prof.owner_kind = ""
        # keyed by namespace/name: the API server's uids are UUIDs (a snapshot's "t-train-0" is mapped)
        out[f"{state.namespaces[state.task_namespace[t]]}/{name}"] = (
            state.task_name[t],
            state.namespaces[state.task_namespace[t]],
            state.node_names[state.task_node[t]] if state.task_node[t] >= 0 else "",
            READ_BACK.get(int(state.task_status[t]), int(state.task_status[t])),
            pg[state.task_pod_group[t]] if state.task_pod_group[t] >= 0 else "",
            int(state.task_priority[t]),
            state.task_role[t],
            dict(zip(state.resources, state.task_req[t].round(0).tolist(), strict=True)),
            tuple(state.task_nonzero[t].round(0).tolist()),
            prof.SerializeToString(deterministic=True),
        )
    return out


def _assert_same_cluster(want: ClusterState, got: ClusterState) -> None:
    assert got.node_names == want.node_names
    assert got.resources == want.resources
    assert np.array_equal(got.node_alloc, want.node_alloc)
    assert got.node_unschedulable.tolist() == want.node_unschedulable.tolist()
    assert [(dict(n.labels), list(n.taints)) for n in got.nodes] == [
        (dict(n.labels), list(n.taints)) for n in want.nodes
    ]
    assert [(g.namespace, g.name, g.min_member, dict(g.min_task_member), g.phase) for g in got.pod_groups] == [
        (g.namespace, g.name, g.min_member, dict(g.min_task_member), g.phase) for g in want.pod_groups
    ]
    assert _tasks(got) == _tasks(want)
    assert [(p.namespace, p.name, p.selector, p.disruptions_allowed) for p in got.pdbs] == [
        (p.namespace, p.name, p.selector, p.disruptions_allowed) for p in want.pdbs
    ]


def test_guide_example_round_trips() -> None:
    snap = load_snapshot(GUIDE)
    _assert_same_cluster(decode(snap), decode(_from_objects(objects_from_snapshot(snap))))


@pytest.mark.parametrize("seed", [1, 7])
def test_synth_snapshot_round_trips(seed: int) -> None:
    snap = synth(SynthOptions(nodes=24, seed=seed))
    snap.pdbs.add(namespace=snap.namespaces[0].name, name="all", disruptions_allowed=0).selector.SetInParent()
    _assert_same_cluster(decode(snap), decode(_from_objects(objects_from_snapshot(snap))))


def test_a_loaded_cluster_reads_back_as_the_snapshot() -> None:
    """Stored in the fake cluster and listed back through the watcher's port (``read_cluster``)."""
    snap = load_snapshot(GUIDE)
    cluster = FakeCluster()
    cluster.load(objects_from_snapshot(snap))
    _assert_same_cluster(decode(snap), decode(read_cluster(cluster)))


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", "1.5", 1500),
        ("memory", "1Gi", 2**30),
        ("memory", "1k", 1000),
        ("memory", "1e3", 1000),
        ("huawei.com/ascend-1980", "8", 8000),
        ("pods", "110", 110),
    ],
)
def test_quantities_in_volcano_units(resource: str, text: str, value: float) -> None:
    assert volcano_units(resource, text) == value


def test_bad_quantity_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity("12Q")


def test_requests_sum_containers_max_init_containers_add_overhead() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                {"name": "c"},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
            "overhead": {"cpu": "100m"},
        },
        "status": {"phase": "Pending", "nominatedNodeName": "n1"},
    }
    task = task_from_pod(pod)
    assert dict(task.requests) == {"cpu": 3100, "memory": 2**30, "nvidia.com/gpu": 2000}
    # non-zero: a 1000 + 100 + 100 (defaults) = 1200 vs init 3000 -> 3000, + 100 overhead
    assert (task.nonzero_requests.cpu, task.nonzero_requests.memory) == (3100, 2**30 + 2 * 200 * 2**20)
    assert (task.status, task.node) == (ts.PIPELINED, "n1")


@pytest.mark.parametrize(
    ("annotation", "spec_priority", "want"),
    [
        (None, None, 1),  # no Priority admission ran: NewTaskInfo's default
        (None, 0, 0),
        (None, 1000, 1000),
        ("7", 1000, 7),  # the annotation wins
        ("-3", None, -3),
        ("+9", None, 9),
        ("2147483647", None, 2147483647),
        ("2147483648", 5, 5),  # not an int32: ignored
        (" 7", 5, 5),  # strconv.ParseInt takes no spaces
        ("7\n", 5, 5),
        ("1_000", 5, 5),
        ("high", None, 1),
    ],
)
def test_task_priority_follows_volcanos_task_info(annotation: str | None, spec_priority: int | None, want: int) -> None:
    """pkg/scheduler/api/job_info.go NewTaskInfo; the Go plugin sends TaskInfo.Priority itself."""
    pod: dict[str, object] = {"metadata": {"name": "p", "annotations": {}}, "spec": {}}
    if annotation is not None:
        pod["metadata"]["annotations"]["volcano.sh/task-priority"] = annotation  # type: ignore[index]
    if spec_priority is not None:
        pod["spec"]["priority"] = spec_priority  # type: ignore[index]
    assert task_priority(pod) == want
    assert task_from_pod(pod).priority == want
