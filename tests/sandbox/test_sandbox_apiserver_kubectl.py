"""The API server emulator driven by kubectl as a person would (subprocess, the written kubeconfig as is)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sidecar.sandbox.apiserver import ApiServer
from tests.k8s_fixtures import node, pod

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "kubectl"], capture_output=True).returncode != 0, reason="kubectl is not installed"
)

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: main, image: nginx:1}]
"""
CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def kubectl(kc: Path, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kc), *args], input=stdin, capture_output=True, text=True, timeout=30
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_kubectl_get_apply_patch_describe_delete(api: ApiServer, kubeconfig: Path) -> None:
    api.create(node("n1", gpu="yes"))
    assert "n1     Ready" in kubectl(kubeconfig, "get", "nodes").stdout
    assert "pod/web created" in kubectl(kubeconfig, "apply", "-f", "-", stdin=POD).stdout
    assert "configured" in kubectl(kubeconfig, "apply", "-f", "-", stdin=POD.replace("nginx:1", "nginx:2")).stdout
    ssa = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=POD.replace("app: web", "app: api"))
    assert "serverside-applied" in ssa.stdout
    kubectl(kubeconfig, "patch", "pod", "web", "-p", '{"spec":{"containers":[{"name":"main","image":"nginx:3"}]}}')
    kubectl(kubeconfig, "patch", "pod", "web", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
    kubectl(
        kubeconfig,
        "patch",
        "pod",
        "web",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )
    got = json.loads(kubectl(kubeconfig, "get", "pod", "web", "-o", "json").stdout)
    assert got["spec"]["containers"][0]["image"] == "nginx:3"
    assert got["metadata"]["labels"] == {"app": "api", "m": "1", "j": "2"}
    kubectl(kubeconfig, "patch", "pod", "web", "--subresource", "status", "--type", "merge", "-p",
            '{"status":{"phase":"Running","podIP":"10.0.0.7"}}')  # fmt: skip
    api.api.bind("default", "web", {"target": {"name": "n1"}})
    wide = kubectl(kubeconfig, "get", "pods", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:6] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"]
    assert wide[1].split()[2] == "Running" and "10.0.0.7" in wide[1] and "n1" in wide[1]
    described = kubectl(kubeconfig, "describe", "pod", "web").stdout
    assert "Node:         n1" in described and "nginx:3" in described
    assert "web" in kubectl(kubeconfig, "describe", "node", "n1").stdout
    assert 'pod "web" deleted' in kubectl(kubeconfig, "delete", "pod", "web", "--grace-period=1").stdout
    assert "No resources found" in kubectl(kubeconfig, "get", "pods").stderr
    missing = kubectl(kubeconfig, "get", "pod", "web", check=False)
    assert missing.returncode == 1 and 'pods "web" not found' in missing.stderr


def test_kubectl_get_watch_streams_changes(api: ApiServer, kubeconfig: Path) -> None:
    api.create(pod("a"))
    proc = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "pods", "-w", "--request-timeout=3s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split()[0] == "NAME"
        assert proc.stdout.readline().split()[0] == "a"
        api.create(pod("b"))
        assert proc.stdout.readline().split()[0] == "b"
    finally:
        proc.kill()
        proc.wait(10)


def test_kubectl_crds_and_api_resources(api: ApiServer, kubeconfig: Path) -> None:
    kubectl(kubeconfig, "apply", "-f", "-", stdin=CRD)
    assert "widgets" in kubectl(kubeconfig, "api-resources").stdout
    kubectl(
        kubeconfig,
        "apply",
        "-f",
        "-",
        stdin="apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n",
    )
    assert "w1" in kubectl(kubeconfig, "get", "wd").stdout
    kubectl(kubeconfig, "delete", "crd", "widgets.example.com")
    assert kubectl(kubeconfig, "get", "widgets", check=False).returncode != 0
