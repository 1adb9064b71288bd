"""Pod scheduling gates in the sandbox, with Kubernetes' semantics, over HTTP with the official client
(and kubectl): the simulated scheduler leaves gated pods (and their gang) alone until the last gate
is removed; the API server lets gates be removed, never added, refuses a gated pod with a nodeName
and answers a binding of a gated pod with 409 on pods/binding, worded as the real one
(pkg/apis/core/validation/validation.go, pkg/registry/core/pod/storage/storage.go).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from sidecar.sandbox.apiserver.podrules import qualified_name_problems
from sidecar.sandbox.apiserver.server import ApiServer
from sidecar.sandbox.controlplane import ControlPlaneConfig
from tests.sandbox.test_sandbox_controlplane import node, pod, podgroup
from tests.k8s_fixtures import wait_for

GATE, OTHER = "repack.volcano.sh/placement", "example.com/quota"


def gated(name: str, *gates: str, group: str = "") -> dict[str, Any]:
    body = pod(name, group=group)
    body["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return body


@pytest.fixture
def scheduling() -> Iterator[ApiServer]:
    """The scheduler only, cycled by hand so each step is deterministic."""
    with ApiServer(control_plane=ControlPlaneConfig(scheduler_period=3600, kubelet=False, jobs=False)) as s:
        s.load([])
        s.create(node("n1", cpu="4"))
        s.create(node("n2", cpu="4"))
        yield s


@pytest.fixture
def v1(scheduling: ApiServer, tmp_path: Path) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(str(scheduling.kubeconfig(tmp_path / "kubeconfig")))
    yield client.CoreV1Api(api)
    api.close()


def cycle(server: ApiServer) -> int:
    assert server.control_plane is not None and server.control_plane.scheduler is not None
    return server.control_plane.scheduler.cycle()


def node_of(v1: client.CoreV1Api, name: str) -> str | None:
    found: str | None = v1.read_namespaced_pod(name, "default").spec.node_name
    return found


def gate_names(v1: client.CoreV1Api, name: str) -> list[str]:
    return [g.name for g in v1.read_namespaced_pod(name, "default").spec.scheduling_gates or []]


def merge(v1: client.CoreV1Api, name: str, body: dict[str, Any]) -> Any:
    """A JSON merge patch (the client picks JSON patch for lists and strategic merge for dicts otherwise)."""
    return v1.patch_namespaced_pod(name, "default", body, _content_type="application/merge-patch+json")


def causes(exc: pytest.ExceptionInfo[ApiException]) -> list[dict[str, str]]:
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Pod"
    found: list[dict[str, str]] = body["details"]["causes"]
    return found


def test_a_gated_pod_is_not_scheduled_until_its_last_gate_is_removed(
    scheduling: ApiServer, v1: client.CoreV1Api
) -> None:
    v1.create_namespaced_pod("default", gated("w", GATE, OTHER))
    v1.create_namespaced_pod("default", pod("free"))
    assert cycle(scheduling) == 1 and node_of(v1, "free") and node_of(v1, "w") is None
    v1.patch_namespaced_pod("w", "default", [{"op": "remove", "path": "/spec/schedulingGates/0"}])
    assert gate_names(v1, "w") == [OTHER]
    assert cycle(scheduling) == 0 and node_of(v1, "w") is None, "one gate left: still waiting"
    merge(v1, "w", {"spec": {"schedulingGates": None}})
    assert gate_names(v1, "w") == []
    assert cycle(scheduling) == 1 and node_of(v1, "w") in ("n1", "n2")


def test_a_gang_waits_for_its_gated_member(scheduling: ApiServer, v1: client.CoreV1Api) -> None:
    scheduling.create(podgroup("gang", 2))
    v1.create_namespaced_pod("default", pod("a", group="gang"))
    v1.create_namespaced_pod("default", gated("b", GATE, group="gang"))
    assert cycle(scheduling) == 0, "minMember 2 with one member gated: nobody is bound"
    assert (node_of(v1, "a"), node_of(v1, "b")) == (None, None)
    v1.patch_namespaced_pod("b", "default", [{"op": "remove", "path": "/spec/schedulingGates"}])
    assert cycle(scheduling) == 2 and node_of(v1, "a") and node_of(v1, "b")


def test_the_background_scheduler_binds_once_ungated(tmp_path: Path) -> None:
    with ApiServer(control_plane=ControlPlaneConfig(scheduler_period=0.05, kubelet=False, jobs=False)) as s:
        s.load([])
        s.create(node("n1"))
        api = client.CoreV1Api(config.new_client_from_config(str(s.kubeconfig(tmp_path / "kc"))))
        api.create_namespaced_pod("default", gated("w", GATE))
        assert s.control_plane is not None and s.control_plane.scheduler is not None
        for _ in range(5):  # several cycles pass: the gated pod stays pending
            s.control_plane.scheduler.cycle()
        assert node_of(api, "w") is None
        api.patch_namespaced_pod("w", "default", [{"op": "remove", "path": "/spec/schedulingGates"}])
        assert wait_for(lambda: node_of(api, "w"), 10) == "n1"
        api.api_client.close()


@pytest.mark.parametrize(
    ("patch", "index", "name"),
    [
        ([{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "x"}}], 1, "x"),
        ([{"op": "replace", "path": "/spec/schedulingGates/0/name", "value": "example.com/renamed"}], 0,
         "example.com/renamed"),
        ([{"op": "add", "path": "/spec/schedulingGates/0", "value": {"name": OTHER}}], 0, OTHER),
    ],
    ids=["add", "rename", "insert"],
)  # fmt: skip
def test_gates_can_only_be_removed(v1: client.CoreV1Api, patch: list[dict[str, Any]], index: int, name: str) -> None:
    v1.create_namespaced_pod("default", gated("w", GATE))
    with pytest.raises(ApiException) as exc:
        v1.patch_namespaced_pod("w", "default", patch)
    assert {
        "reason": "FieldValueForbidden",
        "message": f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'",
        "field": f"spec.schedulingGates[{index}].name",
    } in causes(exc)
    assert (
        f"spec.schedulingGates[{index}].name: Forbidden: only deletion is allowed"
        in json.loads(exc.value.body)["message"]
    )
    assert gate_names(v1, "w") == [GATE]


def test_strategic_merge_patches_merge_gates_by_name(v1: client.CoreV1Api) -> None:
    """schedulingGates is a list map keyed by name (patchMergeKey): the official client's default patch
    removes a gate with the $patch: delete directive, and adding one by strategic merge is refused."""
    v1.create_namespaced_pod("default", gated("w", GATE, OTHER))
    v1.patch_namespaced_pod("w", "default", {"spec": {"schedulingGates": [{"name": GATE, "$patch": "delete"}]}})
    assert gate_names(v1, "w") == [OTHER]
    with pytest.raises(ApiException) as exc:
        v1.patch_namespaced_pod("w", "default", {"spec": {"schedulingGates": [{"name": "example.com/new"}]}})
    assert [c["field"] for c in causes(exc)] == ["spec.schedulingGates[1].name"]
    assert gate_names(v1, "w") == [OTHER]


def test_an_ungated_pod_cannot_gain_a_gate(v1: client.CoreV1Api) -> None:
    v1.create_namespaced_pod("default", pod("p"))
    body = v1.read_namespaced_pod("p", "default").to_dict()
    with pytest.raises(ApiException) as exc:
        merge(v1, "p", {"spec": {"schedulingGates": [{"name": GATE}]}})
    assert [c["field"] for c in causes(exc)] == ["spec.schedulingGates[0].name"]
    assert body["metadata"]["resource_version"] == v1.read_namespaced_pod("p", "default").metadata.resource_version


def test_status_writes_cannot_touch_gates(v1: client.CoreV1Api) -> None:
    v1.create_namespaced_pod("default", gated("w", GATE))
    v1.patch_namespaced_pod_status(
        "w", "default", {"spec": {"schedulingGates": []}, "status": {"nominatedNodeName": "n1"}}
    )
    got = v1.read_namespaced_pod("w", "default")
    assert got.status.nominated_node_name == "n1" and [g.name for g in got.spec.scheduling_gates] == [GATE]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"schedulingGates": [{"name": GATE}], "nodeName": "n1"},
         {"reason": "FieldValueForbidden", "field": "spec.nodeName",
          "message": "Forbidden: cannot be set until all schedulingGates have been cleared"}),
        ({"schedulingGates": [{"name": GATE}, {"name": GATE}]},
         {"reason": "FieldValueDuplicate", "field": "spec.schedulingGates[1]",
          "message": f'Duplicate value: "{GATE}"'}),
        ({"schedulingGates": [{"name": "bad gate"}]},
         {"reason": "FieldValueInvalid", "field": "spec.schedulingGates[0]",
          "message": 'Invalid value: "bad gate": name part must consist of alphanumeric characters, \'-\', \'_\' or '
                     "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                     "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"}),
    ],
    ids=["gated-with-node", "duplicate", "bad-name"],
)  # fmt: skip
def test_creates_the_api_server_refuses(v1: client.CoreV1Api, spec: dict[str, Any], expected: dict[str, str]) -> None:
    body = pod("w")
    body["spec"].update(spec)
    with pytest.raises(ApiException) as exc:
        v1.create_namespaced_pod("default", body)
    assert expected in causes(exc)


def test_qualified_names() -> None:
    assert qualified_name_problems("example.com/gate") == [] and qualified_name_problems("gate") == []
    assert [p.split(" ")[0:2] for p in qualified_name_problems("Bad_Domain/x")] == [["prefix", "part"]]
    assert qualified_name_problems("/x") == ["prefix part must be non-empty"]
    assert qualified_name_problems("a/b/c")[0].startswith("a qualified name must consist")
    assert qualified_name_problems("x" * 64) == ["name part must be no more than 63 characters"]


def test_binding_a_gated_pod_is_a_conflict_on_pods_binding(v1: client.CoreV1Api) -> None:
    v1.create_namespaced_pod("default", gated("w", GATE))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "w"},
        "target": {"kind": "Node", "name": "n1"},
    }
    with pytest.raises(ApiException) as exc:
        v1.create_namespaced_pod_binding("w", "default", binding, _preload_content=False)
    assert exc.value.status == 409
    status = json.loads(exc.value.body)
    assert status["reason"] == "Conflict" and status["details"] == {"name": "w", "group": "", "kind": "pods/binding"}
    assert (
        status["message"]
        == 'Operation cannot be fulfilled on pods/binding "w": pod w has non-empty .spec.schedulingGates'
    )
    assert node_of(v1, "w") is None
    v1.patch_namespaced_pod("w", "default", [{"op": "remove", "path": "/spec/schedulingGates"}])
    v1.create_namespaced_pod_binding("w", "default", binding, _preload_content=False)
    assert node_of(v1, "w") == "n1"
    with pytest.raises(ApiException) as exc:
        v1.create_namespaced_pod_binding("w", "default", binding, _preload_content=False)
    assert exc.value.status == 409
    assert json.loads(exc.value.body)["message"].endswith('pod w is already assigned to node "n1"')


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_shows_the_refusal(scheduling: ApiServer, v1: client.CoreV1Api, tmp_path: Path) -> None:
    v1.create_namespaced_pod("default", gated("w", GATE))
    kc = scheduling.kubeconfig(tmp_path / "kubectl.kubeconfig")
    add = '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"example.com/another"}}]'
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kc), "patch", "pod", "w", "--type=json", "-p", add],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert (
        'The Pod "w" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, '
        "but found new scheduling gate 'example.com/another'" in done.stderr
    )
