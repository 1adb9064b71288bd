"""The API server emulator's integrated parts over real HTTP: PDB-guarded eviction, the disruption
controller, CRD validation and printer columns, snapshot loading, and ``sandbox serve`` as a person runs it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from sidecar.sandbox.apiserver import ApiServer
from sidecar.sandbox.apiserver.server import crd_manifests
from sidecar.fake.objects import objects_from_snapshot
from sidecar.sandbox.schema import RULES_NOT_CHECKED
from sidecar.snapshot.io import load_snapshot
from tests.k8s_fixtures import pod, serving, wait_for

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "sidecar" / "data" / "guide-ascend.json"
HAVE_KUBECTL = subprocess.run(["which", "kubectl"], capture_output=True).returncode == 0
needs_kubectl = pytest.mark.skipif(not HAVE_KUBECTL, reason="kubectl is not installed")
READY = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]


def _running(api: ApiServer, name: str, app: str = "web") -> None:
    body = pod(name, node="n1", labels={"app": app})
    body["status"] = {"phase": "Running", "conditions": READY}
    api.create(body)


def _pdb(policy: client.PolicyV1Api, name: str, min_available: int, app: str = "web") -> None:
    body = {
        "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }
    policy.create_namespaced_pod_disruption_budget("default", body)


def _budget(policy: client.PolicyV1Api, name: str) -> client.V1PodDisruptionBudgetStatus:
    return policy.read_namespaced_pod_disruption_budget(name, "default").status


def _evict(core: client.CoreV1Api, name: str) -> Any:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    return core.create_namespaced_pod_eviction(name, "default", body)


def test_eviction_is_refused_with_429_when_the_pdb_allows_no_disruption(api: ApiServer, k8s: client.ApiClient) -> None:
    core, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    for name in ("a", "b"):
        _running(api, name)
    _pdb(policy, "web", 2)
    status = wait_for(lambda: (s := _budget(policy, "web")) and s.observed_generation == 1 and s)
    assert (status.current_healthy, status.desired_healthy, status.disruptions_allowed) == (2, 2, 0)
    with pytest.raises(ApiException) as exc:
        _evict(core, "a")
    assert exc.value.status == 429
    body = json.loads(exc.value.body)
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}
    ]
    assert core.read_namespaced_pod("a", "default").metadata.deletion_timestamp is None


def test_an_allowed_eviction_charges_the_pdb_and_the_next_one_is_refused(api: ApiServer, k8s: client.ApiClient) -> None:
    core, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    for name in ("a", "b", "c"):
        _running(api, name)
    _pdb(policy, "web", 2)
    wait_for(lambda: _budget(policy, "web").disruptions_allowed == 1)
    before = policy.read_namespaced_pod_disruption_budget("web", "default").metadata.resource_version
    _evict(core, "a")
    evicted = core.read_namespaced_pod("a", "default")
    assert evicted.metadata.deletion_timestamp is not None  # bound: graceful deletion, 30 s
    assert any(c.type == "DisruptionTarget" and c.reason == "EvictionByEvictionAPI" for c in evicted.status.conditions)
    synced = wait_for(lambda: (s := _budget(policy, "web")).current_healthy == 2 and s)  # then the controller
    assert synced.disruptions_allowed == 0 and not synced.disrupted_pods  # a is terminating: not healthy
    # The controller may already have overwritten the eviction's own write; the watch from before
    # the eviction replays both, in order, whatever the timing.
    writes = [
        (e["object"].status.disruptions_allowed, sorted(e["object"].status.disrupted_pods or {}))
        for e in watch.Watch().stream(
            policy.list_namespaced_pod_disruption_budget, "default", resource_version=before, timeout_seconds=1
        )
        if e["type"] == "MODIFIED"
    ]
    assert writes[0] == (0, ["a"])  # the eviction's own write: one fewer allowed, the pod noted
    assert writes[-1] == (0, [])
    with pytest.raises(ApiException) as exc:
        _evict(core, "b")
    assert exc.value.status == 429 and "needs 2 healthy pods and has 2 currently" in exc.value.body
    unguarded = pod("free", node="n1", labels={"app": "other"})
    unguarded["status"] = {"phase": "Running", "conditions": READY}
    api.create(unguarded)
    _evict(core, "free")  # no PDB selects it


def test_two_pdbs_on_one_pod_answer_500(api: ApiServer, k8s: client.ApiClient) -> None:
    core, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    _running(api, "a")
    _pdb(policy, "one", 0)
    _pdb(policy, "two", 0)
    wait_for(lambda: _budget(policy, "two").observed_generation == 1)
    with pytest.raises(ApiException) as exc:
        _evict(core, "a")
    assert exc.value.status == 500 and "more than one PodDisruptionBudget" in exc.value.body


def test_pdb_status_follows_pod_readiness(api: ApiServer, k8s: client.ApiClient) -> None:
    core, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    for name in ("a", "b"):
        _running(api, name)
    _pdb(policy, "web", 1)
    wait_for(lambda: _budget(policy, "web").disruptions_allowed == 1)
    unready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    core.patch_namespaced_pod_status("b", "default", unready)
    status = wait_for(lambda: (s := _budget(policy, "web")).disruptions_allowed == 0 and s)
    assert status.current_healthy == 1 and status.conditions[0].reason == "InsufficientPods"
    with pytest.raises(ApiException) as exc:
        _evict(core, "a")
    assert exc.value.status == 429
    _evict(core, "b")  # unready while the budget is met: evicted without charging it
    _running(api, "c")
    status = wait_for(lambda: (s := _budget(policy, "web")).disruptions_allowed == 1 and s)
    assert status.current_healthy == 2 and status.conditions[0].reason == "SufficientPods"


def test_crd_validation_defaults_and_immutability_over_http(api: ApiServer, k8s: client.ApiClient) -> None:
    ext, custom = client.ApiextensionsV1Api(k8s), client.CustomObjectsApi(k8s)
    for crd in crd_manifests():
        ext.create_custom_resource_definition(crd)
    args = ("repack.volcano.sh", "v1alpha1", "repackruns")
    run = {
        "apiVersion": "repack.volcano.sh/v1alpha1",
        "kind": "RepackRun",
        "metadata": {"name": "r1"},
        "spec": {"mode": "Sometimes", "goals": [{"resource": "huawei.com/ascend-1980"}]},
    }
    with pytest.raises(ApiException) as exc:
        custom.create_cluster_custom_object(*args, run)
    assert exc.value.status == 422
    causes = json.loads(exc.value.body)["details"]["causes"]
    assert causes == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Sometimes": supported values: "DryRun", "Execute"',
            "field": "spec.mode",
        },
        RULES_NOT_CHECKED,  # an enum violation blocks the CEL rules, as strategy.go's hasBlockingErr
    ]
    run["spec"]["mode"] = "DryRun"
    created = custom.create_cluster_custom_object(*args, run)
    assert created["spec"]["planner"]["affectedWorkloadsWeight"] == 1.0  # schema defaults on create
    assert created["spec"]["planner"]["movedPodsWeight"] == 0.1
    created["spec"]["mode"] = "Execute"
    with pytest.raises(ApiException) as exc:
        custom.replace_cluster_custom_object(*args, "r1", created)
    assert exc.value.status == 422
    (cause,) = json.loads(exc.value.body)["details"]["causes"]
    assert cause["field"] == "spec" and "spec is immutable" in cause["message"]


@needs_kubectl
def test_kubectl_get_repackruns_wide_shows_the_printer_columns(api: ApiServer, kubeconfig: Path) -> None:
    api.load([])  # registers the project's CRDs
    run = {
        "apiVersion": "repack.volcano.sh/v1alpha1",
        "kind": "RepackRun",
        "metadata": {"name": "guide"},
        "spec": {"mode": "DryRun", "goals": [{"resource": "huawei.com/ascend-1980"}]},
    }
    api.create(run, keep_status=False)
    status = {
        "phase": "Succeeded",
        "conditions": [{"type": "Complete", "status": "True", "reason": "RepackRecommended"}],
        "plan": {
            "summary": {"freedNodeCount": 1, "fragBeforePercent": 62.5, "fragAfterPercent": 25, "movedCardCount": 2}
        },
    }
    rt = api.registry.by_kind("repack.volcano.sh/v1alpha1", "RepackRun")
    api.api.patch(rt, "", "guide", json.dumps({"status": status}).encode(), "application/merge-patch+json", "status")
    out = _kubectl(kubeconfig, "get", "repackruns", "-o", "wide").splitlines()
    header = ["NAME", "MODE", "PHASE", "REASON", "FRAG-BEFORE", "FRAG-AFTER", "FREED", "AGE", "RESOURCE", "MOVED"]
    assert out[0].split() == [*header, "ACTUAL-FRAG", "ACTUAL-FREED"]
    row = out[1].split()
    assert row[:7] == ["guide", "DryRun", "Succeeded", "RepackRecommended", "62.5", "25", "1"]
    assert row[7].endswith("s") and row[8:] == ["huawei.com/ascend-1980", "2"]  # ACTUAL-* unset: blank cells
    assert _kubectl(kubeconfig, "get", "rr").splitlines()[0].split() == header[:8]


def test_load_keeps_stored_state_and_gc_spares_owners_it_never_saw(api: ApiServer, k8s: client.ApiClient) -> None:
    core, coord = client.CoreV1Api(k8s), client.CoordinationV1Api(k8s)
    objs = objects_from_snapshot(load_snapshot(GUIDE))
    api.load(objs)
    pods = {p["metadata"]["name"]: p for p in objs if p["kind"] == "Pod"}
    served = core.list_pod_for_all_namespaces().items
    assert {p.metadata.name for p in served} == set(pods)
    for p in served:
        want = pods[p.metadata.name]
        assert p.metadata.uid == want["metadata"]["uid"] and p.status.phase == want["status"]["phase"]
    ns = core.read_namespace("repack-demo")
    assert ns.metadata.labels["kubernetes.io/metadata.name"] == "repack-demo"
    assert core.read_namespace("default").metadata.labels == {"kubernetes.io/metadata.name": "default"}
    groups = client.CustomObjectsApi(k8s).list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "podgroups")
    assert len(groups["items"]) == 3 and all(g["metadata"].get("ownerReferences") for g in groups["items"])
    stored = {**pod("leaving"), "status": {"phase": "Running"}}
    stored["metadata"] |= {"uid": "u-leaving", "deletionTimestamp": "2030-01-01T00:00:00Z"}
    api.load([stored])
    kept = core.read_namespaced_pod("leaving", "default")
    assert kept.metadata.uid == "u-leaving" and kept.metadata.deletion_timestamp is not None
    # a dependent of a deleted owner and of an owner never stored here is kept, minus the deleted one
    owner = coord.create_namespaced_lease("default", {"metadata": {"name": "owner"}, "spec": {}})
    ghost = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "never-stored"}
    both = pod("both")
    both["metadata"]["ownerReferences"] = [
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "owner", "uid": owner.metadata.uid},
        ghost,
    ]
    core.create_namespaced_pod("default", both)
    coord.delete_namespaced_lease("owner", "default")
    refs = wait_for(
        lambda: [r.name for r in core.read_namespaced_pod("both", "default").metadata.owner_references] == ["j"]
    )
    assert refs
    time.sleep(0.2)
    assert len(core.list_pod_for_all_namespaces().items) == len(pods) + 2  # nothing collected


def _kubectl(kc: Path, *args: str) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kc), *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_kubectl
def test_sandbox_serve_load_then_kubectl_as_a_person_would(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    with serving("--load", str(GUIDE), "--port", "0", "--kubeconfig", str(kc)) as first:
        assert str(kc) in first, first
        url = first.split()[1]
        assert yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"] == url
        got = _kubectl(kc, "get", "nodes,pods", "-A", "-o", "name")
        names = got.split()
        assert [n for n in names if n.startswith("node/")] == [f"node/ascend-node-0{i}" for i in (1, 2, 3)]
        want = {o["metadata"]["name"] for o in objects_from_snapshot(load_snapshot(GUIDE)) if o["kind"] == "Pod"}
        assert {n.removeprefix("pod/") for n in names if n.startswith("pod/")} == want
        table = _kubectl(kc, "get", "nodes,pods", "-A")
        assert "ascend-node-01   Ready" in table and "repack-demo" in table
        groups = _kubectl(kc, "get", "podgroups", "-A").splitlines()
        assert groups[0].split()[:2] == ["NAMESPACE", "NAME"] and len(groups) == 4
