"""The guide's Step 2 and Step 7 manifests with kubectl on the sandbox (issue 25 item 11): a Volcano
Job creates its PodGroup and pods as Volcano v1.14.1's job controller names them, a ModelServing its
ServingGroups as the real control plane's controller double does, and both are scheduled."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar.sandbox.apiserver import ApiServer
from sidecar.sandbox.controlplane.creation import job_objects
from tests.k8s_fixtures import kubectl_out as kubectl
from tests.k8s_fixtures import wait_for

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "tests" / "realcluster" / "guide"
NS = "repack-demo"
NPU = "huawei.com/ascend-1980"


def node(name: str) -> dict[str, Any]:
    units = {"cpu": "64", "memory": "256Gi", "pods": "110", NPU: "4"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": units, "capacity": units, "conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with ApiServer(control_plane=True) as server:
        server.load([node(f"ascend-node-0{i}") for i in (1, 2, 3)])
        yield server.kubeconfig(tmp_path / "kubeconfig")


def pods(kc: Path, *selector: str) -> dict[str, dict[str, Any]]:
    items = json.loads(kubectl(kc, "get", "pod", "-n", NS, *selector, "-o", "json"))["items"]
    return {p["metadata"]["name"]: p for p in items}


def test_step2_workloads_are_created_and_scheduled(kubeconfig: Path) -> None:
    for n in ("ascend-node-01", "ascend-node-02", "ascend-node-03"):
        kubectl(kubeconfig, "label", "node", n, "accelerator-pool=ascend-npu")
    kubectl(kubeconfig, "apply", "-f", str(GUIDE / "step2-ascend-workloads.yaml"))
    job = json.loads(kubectl(kubeconfig, "get", "vcjob", "ascend-batch-training", "-n", NS, "-o", "json"))
    wait_for(lambda: len([p for p in pods(kubeconfig).values() if p["status"].get("phase") == "Running"]) == 6,
             why="the Job's 2 and the ModelServing's 4 pods Running")  # fmt: skip
    workers = pods(kubeconfig, "-l", "volcano.sh/job-name=ascend-batch-training")
    assert sorted(workers) == ["ascend-batch-training-worker-0", "ascend-batch-training-worker-1"]
    group = f"ascend-batch-training-{job['metadata']['uid']}"
    for index, name in enumerate(sorted(workers)):
        meta = workers[name]["metadata"]
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == group
        assert meta["labels"]["volcano.sh/task-spec"] == "worker" and meta["labels"]["volcano.sh/task-index"] == str(
            index
        )
        assert meta["ownerReferences"][0]["kind"] == "Job" and meta["ownerReferences"][0]["controller"] is True
        assert workers[name]["spec"]["schedulerName"] == "volcano"
    pg = json.loads(kubectl(kubeconfig, "get", "podgroup", group, "-n", NS, "-o", "json"))
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["minTaskMember"] == {"worker": 2}
    assert pg["metadata"]["labels"]["repack.volcano.sh/eligible"] == "true"  # the Job's labels, copied
    wait_for(lambda: "Running" in kubectl(kubeconfig, "get", "vcjob", "-n", NS), why="the VCJob Running")
    serving = pods(kubeconfig, "-l", "modelserving.volcano.sh/name=ascend-online-serving")
    assert sorted(serving) == [
        "ascend-online-serving-0-inference-0", "ascend-online-serving-0-inference-0-1",
        "ascend-online-serving-1-inference-0", "ascend-online-serving-1-inference-0-1",
    ]  # fmt: skip
    groups = kubectl(kubeconfig, "get", "podgroup", "-n", NS, "--show-labels")
    assert groups.count("repack.volcano.sh/eligible=true") == 3, groups


def test_step7_job_creates_its_workers_and_deleting_it_removes_them(kubeconfig: Path) -> None:
    kubectl(
        kubeconfig,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    kubectl(kubeconfig, "apply", "-f", str(GUIDE / "step7-ascend-large-training.yaml"))
    wait_for(lambda: len(pods(kubeconfig, "-l", "volcano.sh/job-name=ascend-large-training")) == 2)
    listed = kubectl(
        kubeconfig, "get", "pod", "-n", NS, "-l", "volcano.sh/job-name=ascend-large-training", "-o", "wide"
    )
    assert "ascend-large-training-worker-0" in listed and "ascend-large-training-worker-1" in listed
    kubectl(kubeconfig, "delete", "vcjob", "ascend-large-training", "-n", NS)
    wait_for(lambda: not pods(kubeconfig) and "No resources" in _podgroups(kubeconfig), why="garbage collected")


def test_kubectls_protobuf_generators_get_a_415(kubeconfig: Path) -> None:
    """``kubectl create namespace`` sends protobuf, which the sandbox does not read: 415 (client-go
    words it itself), not a 400 about JSON; ``kubectl apply -f`` / ``create -f`` send JSON."""
    done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "create", "namespace", "x"], capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert done.returncode != 0 and "(UnsupportedMediaType)" in done.stderr, done.stderr


def _podgroups(kc: Path) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kc), "get", "podgroup", "-n", NS], capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    return done.stdout + done.stderr


def test_min_available_defaults_to_the_replicas_and_task_names_to_default_index() -> None:
    job = yaml.safe_load((GUIDE / "step7-ascend-large-training.yaml").read_text())
    job["metadata"]["uid"] = "u-1"
    del job["spec"]["minAvailable"]
    del job["spec"]["tasks"][0]["name"]
    podgroup, created = job_objects(job)
    assert podgroup["metadata"]["name"] == "ascend-large-training-u-1"
    assert podgroup["spec"]["minMember"] == 2 and podgroup["spec"]["minTaskMember"] == {"default0": 2}
    assert [p["metadata"]["name"] for p in created] == [
        "ascend-large-training-default0-0",
        "ascend-large-training-default0-1",
    ]
