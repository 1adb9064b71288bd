"""The simulated Volcano control plane over real HTTP with the official client: gang binding,
nominatedNodeName, the mirror's node order, kubelet start, Job pod recreation and ServingGroup rebuild.

Scheduling tests switch the background parts off and call ``cycle()`` so each step is deterministic;
the end-to-end tests run every part on its thread and wait (bounded) for what a watcher would see.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from kubernetes import client, config

from sidecar.mirror.core import Mirror
from sidecar.sandbox.apiserver.rest import PDB_KEY, POD_KEY
from sidecar.sandbox.apiserver.server import ApiServer
from sidecar.sandbox.controlplane import ControlPlaneConfig
from sidecar.sandbox.controlplane.scheduler import PODGROUP_KEY
from sidecar.snapshot.decode import decode
from sidecar.snapshot.kube import GROUP_NAME, snapshot_from_objects
from tests.k8s_fixtures import serving, wait_for

GUIDE = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend.json"
JOB_OWNER = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "job-uid-1"}
MS_OWNER = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "name": "llm", "uid": "ms-1"}


def node(name: str, cpu: str = "4", memory: str = "16Gi", **labels: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": res, "capacity": res, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def podgroup(name: str, min_member: int, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": min_member},
    }


def pod(name: str, cpu: str = "1", group: str = "", owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "t"}}
    if group:
        meta["annotations"] = {GROUP_NAME: group}
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    spec = {"schedulerName": "volcano", "terminationGracePeriodSeconds": 1, "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@pytest.fixture
def live() -> Iterator[ApiServer]:
    with ApiServer(control_plane=ControlPlaneConfig(scheduler_period=0.05)) as s:
        s.load([])
        yield s


def core(server: ApiServer, tmp_path: Path) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(server.kubeconfig(tmp_path / "kubeconfig"))))


def bound(v1: client.CoreV1Api, name: str) -> str | None:
    node_name: str | None = v1.read_namespaced_pod(name, "default").spec.node_name
    return node_name


def cycle(server: ApiServer) -> int:
    assert server.control_plane is not None and server.control_plane.scheduler is not None
    return server.control_plane.scheduler.cycle()


@pytest.fixture
def scheduling() -> Iterator[ApiServer]:
    with ApiServer(control_plane=ControlPlaneConfig(scheduler_period=3600, kubelet=False, jobs=False)) as s:
        s.load([])
        yield s


def test_gang_binds_only_when_min_member_fit(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    scheduling.create(node("n1", cpu="2"))
    scheduling.create(podgroup("gang", 2))
    for name in ("a", "b"):
        v1.create_namespaced_pod("default", pod(name, cpu="2", group="gang"))
    assert cycle(scheduling) == 0  # one fits, the gang needs two
    assert (bound(v1, "a"), bound(v1, "b")) == (None, None)
    scheduling.create(node("n2", cpu="2"))
    assert cycle(scheduling) == 2
    assert {bound(v1, "a"), bound(v1, "b")} == {"n1", "n2"}
    events = v1.read_namespaced_pod("a", "default").status.conditions
    assert [(c.type, c.status) for c in events] == [("PodScheduled", "True")]


def test_members_already_running_count_towards_min_member(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    scheduling.create(node("n1", cpu="2"))
    scheduling.create(podgroup("gang", 2))
    running = pod("a", cpu="1", group="gang") | {"status": {"phase": "Running"}}
    running["spec"]["nodeName"] = "n1"
    scheduling.create(running)
    v1.create_namespaced_pod("default", pod("b", cpu="1", group="gang"))
    assert cycle(scheduling) == 1
    assert bound(v1, "b") == "n1"


def test_a_pod_waits_for_its_missing_podgroup(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    scheduling.create(node("n1"))
    v1.create_namespaced_pod("default", pod("a", group="nowhere"))
    assert cycle(scheduling) == 0
    scheduling.create(podgroup("nowhere", 1))
    assert cycle(scheduling) == 1


def _nominate(v1: client.CoreV1Api, name: str, node_name: str) -> None:
    v1.patch_namespaced_pod_status(name, "default", {"status": {"nominatedNodeName": node_name}})


def test_nominated_node_is_honoured_when_the_pod_fits_there(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    for name in ("n1", "n2", "n3"):
        scheduling.create(node(name))
    v1.create_namespaced_pod("default", pod("a"))
    _nominate(v1, "a", "n3")
    assert cycle(scheduling) == 1
    assert bound(v1, "a") == "n3"


def test_a_nominated_node_the_pod_exactly_fills_is_honoured(scheduling: ApiServer, tmp_path: Path) -> None:
    """The nominated pod's own reservation (Pipelined there) must not count against that node."""
    v1 = core(scheduling, tmp_path)
    for name in ("n1", "n2"):  # twins: without the nomination, the tie goes to n1 (by name)
        scheduling.create(node(name, cpu="2"))
    v1.create_namespaced_pod("default", pod("a", cpu="2"))
    _nominate(v1, "a", "n2")
    assert cycle(scheduling) == 1
    assert bound(v1, "a") == "n2"


def test_nominated_node_is_ignored_when_the_pod_does_not_fit(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    scheduling.create(node("big", cpu="8"))
    scheduling.create(node("small", cpu="1"))
    v1.create_namespaced_pod("default", pod("a", cpu="2"))
    _nominate(v1, "a", "small")
    assert cycle(scheduling) == 1
    assert bound(v1, "a") == "big"


def test_node_order_is_the_mirrors_best_node(scheduling: ApiServer, tmp_path: Path) -> None:
    v1 = core(scheduling, tmp_path)
    for name, cpu in (("n1", "4"), ("n2", "16"), ("n3", "8")):
        scheduling.create(node(name, cpu=cpu))
    busy = pod("busy", cpu="3") | {"status": {"phase": "Running"}}
    busy["spec"]["nodeName"] = "n2"
    scheduling.create(busy)
    v1.create_namespaced_pod("default", pod("a"))
    store = scheduling.store
    keys = ("/namespaces", "/nodes", POD_KEY, PODGROUP_KEY, PDB_KEY)
    state = decode(snapshot_from_objects(*(store.scan(k)[0] for k in keys)))
    mirror = Mirror(state)
    verdict = mirror.prioritize(mirror.subject_for_task(state.task_name.index("a")))
    assert verdict.scores is not None
    feasible = np.flatnonzero(verdict.filter.feasible)
    best = state.node_names[feasible[verdict.scores.ranked(state.node_names)[0]]]
    assert cycle(scheduling) == 1
    assert bound(v1, "a") == best


def _running(v1: client.CoreV1Api, name: str, uid: str | None = None) -> client.V1Pod | None:
    try:
        p = v1.read_namespaced_pod(name, "default")
    except client.ApiException:
        return None
    ok = (
        p.status.phase == "Running" and p.metadata.deletion_timestamp is None and (uid is None or p.metadata.uid != uid)
    )
    return p if ok and all(c.ready for c in p.status.container_statuses or []) else None


def test_kubelet_turns_bound_pods_running(live: ApiServer, tmp_path: Path) -> None:
    v1 = core(live, tmp_path)
    live.create(node("n1"))
    v1.create_namespaced_pod("default", pod("a"))
    got = wait_for(lambda: _running(v1, "a"))
    assert got.spec.node_name == "n1"
    assert [c.name for c in got.status.container_statuses] == ["main"]
    assert {c.type for c in got.status.conditions} >= {"PodScheduled", "Ready", "ContainersReady"}


def test_an_evicted_job_pod_is_recreated_and_bound_again(live: ApiServer, tmp_path: Path) -> None:
    v1 = core(live, tmp_path)
    live.create(node("n1"))
    live.create(podgroup("train-pg", 1, JOB_OWNER))
    v1.create_namespaced_pod("default", pod("train-worker-0", group="train-pg", owner=JOB_OWNER))
    first = wait_for(lambda: _running(v1, "train-worker-0"))
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="train-worker-0", namespace="default"))
    v1.create_namespaced_pod_eviction("train-worker-0", "default", body)
    again = wait_for(lambda: _running(v1, "train-worker-0", uid=first.metadata.uid))
    assert again.spec.node_name == "n1"
    assert again.metadata.annotations[GROUP_NAME] == "train-pg"
    assert again.metadata.owner_references[0].kind == "Job"


def test_a_disrupted_serving_group_is_recreated_whole_under_a_new_podgroup(live: ApiServer, tmp_path: Path) -> None:
    v1 = core(live, tmp_path)
    crd = client.CustomObjectsApi(v1.api_client)
    live.create(node("n1"))
    live.create(podgroup("llm-0", 2, MS_OWNER))
    for name in ("llm-0-entry", "llm-0-worker"):
        v1.create_namespaced_pod("default", pod(name, group="llm-0", owner=MS_OWNER))
    before = {n: wait_for(lambda n=n: _running(v1, n)).metadata.uid for n in ("llm-0-entry", "llm-0-worker")}
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="llm-0-entry", namespace="default"))
    v1.create_namespaced_pod_eviction("llm-0-entry", "default", body)
    after = {n: wait_for(lambda n=n: _running(v1, n, before[n]), 15) for n in before}
    assert {p.metadata.annotations[GROUP_NAME] for p in after.values()} == {"llm-0-r1"}
    groups = crd.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", "default", "podgroups")
    assert [(g["metadata"]["name"], g["metadata"]["ownerReferences"][0]["name"]) for g in groups["items"]] == [
        ("llm-0-r1", "llm")
    ]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_sandbox_serve_control_plane_runs_what_kubectl_applies(tmp_path: Path) -> None:
    kc, manifest = tmp_path / "kubeconfig", tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod("hello", cpu="100m")))
    with serving("--control-plane", "--load", str(GUIDE), "--kubeconfig", str(kc)):
        kubectl = ["kubectl", "--kubeconfig", str(kc)]
        run = subprocess.run([*kubectl, "apply", "-f", str(manifest)], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        wait = [*kubectl, "wait", "--for=condition=Ready", "pod/hello", "--timeout=20s"]
        run = subprocess.run(wait, capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        wide = subprocess.run(
            [*kubectl, "get", "pod", "hello", "-o", "wide"], capture_output=True, text=True, timeout=30
        )
        assert "Running" in wide.stdout and "ascend-node-0" in wide.stdout, wide.stdout
