"""What an operator reads with kubectl on the sandbox (issue 25 item 13): nodes with a VERSION and
heartbeats, ``kubectl get events`` with the API server's columns, the scheduler's ``Scheduled`` and
the kubelet's ``Killing`` events, UIDs that are UUIDs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.mirror import KUBERNETES_RELEASE
from sidecar.sandbox.apiserver import ApiServer
from sidecar.snapshot.io import load_snapshot
from tests.k8s_fixtures import kubectl_out as kubectl
from tests.k8s_fixtures import wait_for

GUIDE = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend.json"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with ApiServer(control_plane=True) as server:
        server.load(load_snapshot(GUIDE))
        yield server.kubeconfig(tmp_path / "kubeconfig")


def test_nodes_show_the_kubelet_version_and_heartbeats(kubeconfig: Path) -> None:
    wait_for(lambda: KUBERNETES_RELEASE in kubectl(kubeconfig, "get", "nodes"), why="the kubelets posted nodeInfo")
    lines = kubectl(kubeconfig, "get", "nodes").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert all(line.split()[-1] == KUBERNETES_RELEASE for line in lines[1:]), lines
    node = json.loads(kubectl(kubeconfig, "get", "node", "ascend-node-01", "-o", "json"))
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["lastHeartbeatTime"] and ready["lastTransitionTime"]


def test_uids_are_uuids(kubeconfig: Path) -> None:
    pods = json.loads(kubectl(kubeconfig, "get", "pods", "-A", "-o", "json"))["items"]
    for p in pods:
        uuid.UUID(p["metadata"]["uid"])
        for ref in p["metadata"].get("ownerReferences") or []:
            uuid.UUID(ref["uid"])


def test_events_show_scheduled_and_killing_with_the_api_servers_columns(kubeconfig: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": "repack-demo"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "busybox"}]},
    }
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(pod))
    wait_for(lambda: "Running" in kubectl(kubeconfig, "get", "pod", "probe", "-n", "repack-demo"))
    kubectl(kubeconfig, "delete", "pod", "probe", "-n", "repack-demo", "--wait=false")
    wait_for(
        lambda: "Killing" in kubectl(kubeconfig, "get", "events", "-n", "repack-demo"), why="the kubelet's Killing"
    )
    table = kubectl(kubeconfig, "get", "events", "-n", "repack-demo").splitlines()
    assert table[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    scheduled = next(line for line in table if " Scheduled " in line)
    assert "pod/probe" in scheduled and "Successfully assigned repack-demo/probe to ascend-node-" in scheduled
    killing = next(line for line in table if " Killing " in line)
    assert "pod/probe" in killing and "Stopping container main" in killing
    wide = kubectl(kubeconfig, "get", "events", "-n", "repack-demo", "-o", "wide").splitlines()
    assert wide[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST",
                               "SEEN", "COUNT", "NAME"]  # fmt: skip
    assert any("kubelet, ascend-node-" in line for line in wide if " Killing " in line)
