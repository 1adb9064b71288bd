"""The RepackRun and RepackPolicy CRDs (manifests/crd) served by the real kube-apiserver, driven with
kubectl and the official client as a user and the watcher would: the guide's runs apply, kubectl
prints and explains them, every rule of the spec is refused with a 422 naming its field, the spec is
immutable and the status subresource writes status only (fields the controller adds are kept); a
policy's schedule-or-trigger rule, limits, enums and its run template (the RepackRun spec's schema)
are refused the same way.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from realcluster.launcher import RealCluster

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

GROUP, VERSION, PLURAL = "repack.volcano.sh", "v1alpha1", "repackruns"
NPU = "huawei.com/ascend-1980"

# The user guide's runs, as printed there: the first DryRun (Step 1) and the complete Execute example.
GUIDE_MINIMAL = f"""apiVersion: repack.volcano.sh/v1alpha1
kind: RepackRun
metadata:
  name: ascend-npu-dryrun
spec:
  mode: DryRun
  goals:
    - resource: {NPU}
"""
GUIDE_EXECUTE = f"""apiVersion: repack.volcano.sh/v1alpha1
kind: RepackRun
metadata:
  name: ascend-complete-execute-001
  labels:
    accelerator-pool: ascend-npu
    change-ticket: change-20260730
spec:
  mode: Execute
  scope:
    podGroups:
      include:
        selector:
          matchLabels:
            repack.volcano.sh/eligible: "true"
        names:
          - repack-demo/manually-managed-training-pg
      exclude:
        selector:
          matchExpressions:
            - key: repack.volcano.sh/protected
              operator: In
              values:
                - "true"
        names:
          - repack-demo/protected-training-pg
    nodes:
      include:
        selector:
          matchLabels:
            accelerator-pool: ascend-npu
        names:
          - ascend-node-03
      exclude:
        selector:
          matchLabels:
            maintenance-state: draining
        names:
          - ascend-node-08
  goals:
    - resource: {NPU}
      minFragImprovementPercent: 10
  maxPerRun:
    podGroups: 2
    resources:
      {NPU}: 8
  eviction:
    gracePeriodSeconds: 30
  ttlSecondsAfterFinished: 604800
"""
GUIDE_GUARDED = Path(__file__).resolve().parents[2] / "sidecar" / "data" / "guide-ascend-dryrun.yaml"


CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "repack.volcano.sh_repackruns.yaml"


@pytest.fixture
def kubeconfig(real_cluster: RealCluster) -> Path:
    """The real cluster's kubeconfig, with the project's CRDs applied and no RepackRun or
    RepackPolicy left."""
    cluster = real_cluster
    cluster.kubectl("apply", "-k", str(CRD.parent))
    cluster.wait_established("repackruns.repack.volcano.sh", "repackpolicies.repack.volcano.sh")
    cluster.kubectl("delete", "repackruns,repackpolicies", "--all", "--wait=true")
    return cluster.kubeconfig


@pytest.fixture
def k8s(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubeconfig))
    yield api
    api.close()


def kubectl(kc: Path, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kc), *args], input=stdin, capture_output=True, text=True, timeout=30
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def run(name: str = "r", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"mode": "DryRun", "goals": [{"resource": NPU}], **spec}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "RepackRun", "metadata": {"name": name}, "spec": body}


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def test_the_guides_runs_apply_as_printed(kubeconfig: Path, k8s: client.ApiClient) -> None:
    for doc in (GUIDE_MINIMAL, GUIDE_EXECUTE, GUIDE_GUARDED.read_text()):
        assert "created" in kubectl(kubeconfig, "apply", "-f", "-", stdin=doc).stdout
    stored = custom(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, "ascend-complete-execute-001")
    assert stored["spec"] == {**yaml.safe_load(GUIDE_EXECUTE)["spec"], "planner": stored["spec"]["planner"]}
    assert "configured" not in kubectl(kubeconfig, "apply", "-f", "-", stdin=GUIDE_EXECUTE).stdout  # unchanged


def _set_status(k8s: client.ApiClient, name: str, status: dict[str, Any]) -> dict[str, Any]:
    obj = custom(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    return dict(
        custom(k8s).replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, name, {**obj, "status": status})
    )


def test_kubectl_get_shows_mode_phase_reason_and_the_plan_wide_adds_actuals(
    kubeconfig: Path, k8s: client.ApiClient
) -> None:
    kubectl(kubeconfig, "apply", "-f", "-", stdin=GUIDE_MINIMAL)
    kubectl(kubeconfig, "apply", "-f", "-", stdin=GUIDE_EXECUTE)
    _set_status(
        k8s,
        "ascend-npu-dryrun",
        {
            "phase": "Succeeded",
            "conditions": [{"type": "Complete", "status": "True", "reason": "RepackRecommended"}],
            "plan": {"summary": {"fragBeforePercent": 33.3, "fragAfterPercent": 0, "freedNodeCount": 1,
                                 "movedCardCount": 2}},
        },
    )  # fmt: skip
    _set_status(
        k8s,
        "ascend-complete-execute-001",
        {
            "phase": "Pending",
            "conditions": [
                {"type": "Waiting", "status": "True", "reason": "AnotherRunActive"},
                {"type": "Complete", "status": "False", "reason": "NotStarted"},
            ],
        },
    )
    table = [line.split() for line in kubectl(kubeconfig, "get", "repackrun").stdout.splitlines()]
    assert table[0] == ["NAME", "MODE", "PHASE", "REASON", "FRAG-BEFORE", "FRAG-AFTER", "FREED", "AGE"]
    assert table[1][:4] == ["ascend-complete-execute-001", "Execute", "Pending", "AnotherRunActive"]
    assert len(table[1]) == 5, "no plan yet: blank fragmentation and freed cells"
    assert table[2][:7] == ["ascend-npu-dryrun", "DryRun", "Succeeded", "RepackRecommended", "33.3", "0", "1"]

    _set_status(
        k8s,
        "ascend-complete-execute-001",
        {
            "phase": "Succeeded",
            "conditions": [
                {"type": "Waiting", "status": "False", "reason": "AnotherRunActive"},
                {"type": "Complete", "status": "True", "reason": "ExecutionCompletedWithAlternativePlacement"},
            ],
            "plan": {"summary": {"fragBeforePercent": 33.3, "fragAfterPercent": 0, "freedNodeCount": 1,
                                 "movedCardCount": 2}},
            "result": {"fragAfterPercent": 0, "freedNodeCount": 1, "movedCardCount": 2, "metricsVerified": True},
        },
    )  # fmt: skip
    wide = [line.split() for line in kubectl(kubeconfig, "get", "rr", "-o", "wide").stdout.splitlines()]
    assert wide[0] == [*table[0], "RESOURCE", "MOVED", "ACTUAL-FRAG", "ACTUAL-FREED"]
    execute = wide[1]
    assert execute[:7] == ["ascend-complete-execute-001", "Execute", "Succeeded",
                           "ExecutionCompletedWithAlternativePlacement", "33.3", "0", "1"]  # fmt: skip
    assert execute[8:] == [NPU, "2", "0", "1"]
    assert wide[2][8:] == [NPU, "2"], "a DryRun has no actual result: blank cells"


def test_kubectl_explain_describes_the_status_journal(kubeconfig: Path) -> None:
    relocations = kubectl(kubeconfig, "explain", "repackrun.status.relocations").stdout
    for field in ("victimPodName", "victimPodUID", "podGroupName", "owner", "fromNodeName", "plannedNodeName",
                  "cards", "replacementPodGroupName", "eviction", "placement"):  # fmt: skip
        assert f"  {field}\t" in relocations, field
    placement = kubectl(kubeconfig, "explain", "repackrun.status.relocations.placement").stdout
    assert "selectedNodeName" in placement and "actualNodeName" in placement and "replacementPodUID" in placement
    phase = kubectl(kubeconfig, "explain", "repackrun.status.relocations.eviction.phase").stdout
    assert "ENUM:" in phase and all(p in phase for p in ("Pending", "Evicted", "Blocked", "Failed"))
    result = kubectl(kubeconfig, "explain", "repackrun.status.result").stdout
    for field in ("fragAfterPercent", "freedNodeCount", "freedNodes", "movedCardCount", "evictedPodCount",
                  "metricsVerified", "message"):  # fmt: skip
        assert f"  {field}\t" in result, field
    status = kubectl(kubeconfig, "explain", "repackrun.status").stdout
    for field in ("phase", "observedGeneration", "startTime", "completionTime", "conditions", "plan"):
        assert f"  {field}\t" in status, field
    budget = kubectl(kubeconfig, "explain", "repackrun.spec.maxPerRun.podGroups").stdout
    assert "0: nothing may move" in " ".join(budget.split())  # kubectl wraps descriptions


_IN = {"key": "repack.volcano.sh/protected", "operator": "In"}

# (id, spec fields over a valid DryRun, the field the 422 names, a piece of its message)
INVALID = [
    ("zero-goals", {"goals": []}, "spec.goals", "should have at least 1 items"),
    ("two-goals", {"goals": [{"resource": NPU}, {"resource": "nvidia.com/gpu"}]}, "spec.goals",
     "must have at most 1 item"),
    ("bad-mode", {"mode": "Now"}, "spec.mode", 'supported values: "DryRun", "Execute"'),
    ("cpu-as-resource", {"goals": [{"resource": "cpu"}]}, "spec.goals[0].resource",
     "must be an extended resource name"),
    ("kubernetes-io-resource", {"goals": [{"resource": "kubernetes.io/batch"}]}, "spec.goals[0].resource",
     "must be an extended resource name"),
    # what is expected, not a raw regex (issue 25 item 16)
    ("resource-with-a-space", {"goals": [{"resource": "nvidia.com/GPU card"}]}, "spec.goals[0].resource",
     "must be an extended resource name: a lowercase domain outside kubernetes.io"),
    ("resource-capital-domain", {"goals": [{"resource": "NVIDIA.com/gpu"}]}, "spec.goals[0].resource",
     "e.g. huawei.com/ascend-1980"),
    ("percent-101", {"goals": [{"resource": NPU, "minFragImprovementPercent": 101}]},
     "spec.goals[0].minFragImprovementPercent", "should be less than or equal to 100"),
    ("pod-groups-negative", {"maxPerRun": {"podGroups": -1}}, "spec.maxPerRun.podGroups",
     "should be greater than or equal to 0"),
    ("resources-value-negative", {"maxPerRun": {"resources": {NPU: -1}}}, f"spec.maxPerRun.resources.{NPU}",
     "should be greater than or equal to 0"),
    ("wrong-budget-key", {"maxPerRun": {"resources": {"nvidia.com/gpu": 2}}}, "spec.maxPerRun.resources",
     "may only budget the goal resource"),
    ("in-without-values", {"scope": {"podGroups": {"exclude": {"selector": {"matchExpressions": [_IN]}}}}},
     "spec.scope.podGroups.exclude.selector.matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ("exists-with-values", {"scope": {"nodes": {"include": {"selector": {"matchExpressions": [
        {"key": "accelerator-pool", "operator": "Exists", "values": ["x"]}]}}}}},
     "spec.scope.nodes.include.selector.matchExpressions[0].values",
     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ("bad-operator", {"scope": {"nodes": {"include": {"selector": {"matchExpressions": [
        {"key": "a", "operator": "Gt", "values": ["1"]}]}}}}},
     "spec.scope.nodes.include.selector.matchExpressions[0].operator", 'Unsupported value: "Gt"'),
    ("pod-group-without-namespace", {"scope": {"podGroups": {"include": {"names": ["training-pg"]}}}},
     "spec.scope.podGroups.include.names[0]", "must be namespace/name, both lowercase DNS names"),
    ("node-name-with-capitals", {"scope": {"nodes": {"exclude": {"names": ["Node_1"]}}}},
     "spec.scope.nodes.exclude.names[0]", "must be a node name, a lowercase DNS name"),
    ("negative-grace", {"eviction": {"gracePeriodSeconds": -1}}, "spec.eviction.gracePeriodSeconds",
     "should be greater than or equal to 0"),
    ("negative-ttl", {"ttlSecondsAfterFinished": -1}, "spec.ttlSecondsAfterFinished",
     "should be greater than or equal to 0"),
    ("for-two-targets", {"for": {"podGroup": "a/b", "job": "a/c"}}, "spec.for",
     "for needs exactly one of podGroup, job, modelServing"),
    ("for-no-target", {"for": {}}, "spec.for", "for needs exactly one of podGroup, job, modelServing"),
    ("for-without-namespace", {"for": {"job": "train"}}, "spec.for.job",
     "must be namespace/name, both lowercase DNS names"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "field", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_each_invalid_spec_is_refused_naming_the_field(
    kubeconfig: Path, k8s: client.ApiClient, spec: dict[str, Any], field: str, message: str
) -> None:
    body = run("bad", **spec)
    with pytest.raises(ApiException) as exc:
        custom(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    assert exc.value.status == 422
    status = json.loads(exc.value.body)
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "RepackRun"
    assert any(c["field"] == field and message in c["message"] for c in status["details"]["causes"]), status
    assert "should match '^" not in status["message"], status  # a person is told what is expected, not a regex
    assert status["message"].startswith('RepackRun.repack.volcano.sh "bad" is invalid: ') and field in status["message"]
    # kubectl as a user runs it: refused, the field and the problem named
    refused = kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(body), check=False)
    assert refused.returncode == 1 and 'The RepackRun "bad" is invalid' in refused.stderr
    assert f"{field}: " in refused.stderr and message in refused.stderr
    assert "bad" not in kubectl(kubeconfig, "get", "rr", "-o", "name").stdout


def test_the_spec_is_immutable(kubeconfig: Path, k8s: client.ApiClient) -> None:
    created = custom(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, run("r1"))
    changed = copy.deepcopy(created)
    changed["spec"]["mode"] = "Execute"
    with pytest.raises(ApiException) as exc:
        custom(k8s).replace_cluster_custom_object(GROUP, VERSION, PLURAL, "r1", changed)
    assert exc.value.status == 422
    (cause,) = json.loads(exc.value.body)["details"]["causes"]
    assert cause == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "object": spec is immutable; create a new RepackRun instead',
        "field": "spec",
    }
    ttl = '{"spec":{"ttlSecondsAfterFinished":5}}'
    patched = kubectl(kubeconfig, "patch", "rr", "r1", "--type", "merge", "-p", ttl, check=False)
    assert patched.returncode == 1 and "spec is immutable" in patched.stderr
    labelled = kubectl(kubeconfig, "label", "rr", "r1", "change-ticket=change-20260730")
    assert "labeled" in labelled.stdout, "metadata stays editable"
    assert custom(k8s).get_cluster_custom_object(GROUP, VERSION, PLURAL, "r1")["spec"] == created["spec"]


def test_status_writes_go_through_the_subresource_and_never_touch_spec(k8s: client.ApiClient) -> None:
    created = custom(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, run("r1", mode="Execute"))
    relocation = {
        "namespace": "repack-demo",
        "victimPodName": "ascend-batch-training-worker-0",
        "victimPodUID": "uid-0",
        "podGroupName": "ascend-batch-training",
        "owner": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "ascend-batch-training",
                  "uid": "job-uid", "controller": True},
        "fromNodeName": "ascend-node-01",
        "plannedNodeName": "ascend-node-02",
        "cards": 1,
        "eviction": {"phase": "Evicted", "attempts": 1, "lastAttemptTime": "2026-07-30T10:00:00Z", "requestId": "x"},
        "placement": {"phase": "Nominated", "selectedNodeName": "ascend-node-02", "replacementPodName": "w-0",
                      "replacementPodUID": "uid-1", "nominatedAt": "2026-07-30T10:00:05Z"},
        "leaseHolder": "watcher-0",
    }  # fmt: skip
    status = {
        "phase": "Running",
        "observedGeneration": 1,
        "startTime": "2026-07-30T10:00:00Z",
        "conditions": [{"type": "Progressing", "status": "True", "reason": "Evicting", "message": "1/2",
                        "lastTransitionTime": "2026-07-30T10:00:00Z"}],
        "relocations": [relocation],
        "plan": {"summary": {"fragBeforePercent": 33.3}, "futureField": {"x": 1}},
        "cursor": 3,
    }  # fmt: skip
    sneaky = copy.deepcopy(created)
    sneaky["spec"]["mode"] = "DryRun"  # a status write cannot change the spec: it is ignored, not refused
    sneaky["status"] = status
    written = custom(k8s).replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, "r1", sneaky)
    assert written["spec"] == created["spec"] and written["spec"]["mode"] == "Execute"
    assert written["status"] == status, "fields the controller adds (owner.controller, requestId, cursor...) are kept"
    # and the main resource cannot write status
    again = copy.deepcopy(written)
    again["status"] = {"phase": "Failed"}
    assert custom(k8s).replace_cluster_custom_object(GROUP, VERSION, PLURAL, "r1", again)["status"] == status


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ({"phase": "Done"}, "status.phase"),
        ({"relocations": [{"eviction": {"phase": "Gone"}}]}, "status.relocations[0].eviction.phase"),
        ({"relocations": [{"placement": {"phase": "Somewhere"}}]}, "status.relocations[0].placement.phase"),
        ({"relocations": [{"eviction": {"attempts": -1}}]}, "status.relocations[0].eviction.attempts"),
        ({"completionTime": "yesterday"}, "status.completionTime"),
        ({"result": {"freedNodeCount": "one"}}, "status.result.freedNodeCount"),
        ({"conditions": [{"type": "Complete", "status": "Yes"}]}, "status.conditions[0].status"),
    ],
    ids=["phase", "eviction-phase", "placement-phase", "attempts", "completion-time", "result-type", "condition"],
)
def test_declared_status_fields_are_validated(k8s: client.ApiClient, status: dict[str, Any], field: str) -> None:
    created = custom(k8s).create_cluster_custom_object(GROUP, VERSION, PLURAL, run("r1"))
    with pytest.raises(ApiException) as exc:
        custom(k8s).replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, "r1", {**created, "status": status})
    assert exc.value.status == 422
    fields = [c["field"] for c in json.loads(exc.value.body)["details"]["causes"]]
    assert fields[0] == field and set(fields[1:]) <= {"<nil>"}  # "<nil>": the CEL rules were not checked


def test_a_misspelt_field_is_refused_under_kubectls_strict_field_validation(kubeconfig: Path) -> None:
    """kubectl sends ``fieldValidation=Strict``: kube-apiserver
    refuses an unknown field by name (400, "strict decoding error") instead of pruning it, so the
    misspelt threshold cannot silently become 0."""
    doc = GUIDE_MINIMAL.replace(f"- resource: {NPU}", f"- resource: {NPU}\n      minFragImprovmentPercent: 10")
    done = kubectl(kubeconfig, "apply", "-f", "-", stdin=doc, check=False)
    assert done.returncode != 0
    assert 'strict decoding error: unknown field "spec.goals[0].minFragImprovmentPercent"' in done.stderr
    assert kubectl(kubeconfig, "get", "repackruns", "-o", "name").stdout == ""
    # Warn: accepted with the field dropped, and a warning naming it
    warned = kubectl(kubeconfig, "apply", "--validate=warn", "-f", "-", stdin=doc)
    assert 'unknown field "spec.goals[0].minFragImprovmentPercent"' in warned.stderr


STRICT_RUN = f"""
apiVersion: {GROUP}/{VERSION}
kind: RepackRun
metadata: {{name: strict}}
spec: {{mode: DryRun, goals: [{{resource: {NPU}, colour: red}}], extra: 1}}
"""
STRICT_POD = """
apiVersion: v1
kind: Pod
metadata: {name: strict-pod, namespace: default, colour: red}
spec:
  containers: [{name: c, image: busybox, foo: 1}]
  bar: true
"""


@pytest.mark.parametrize(
    "doc,kind,fields",
    [
        (STRICT_RUN, "RepackRun", ["spec.goals[0].colour", "spec.extra"]),
        (STRICT_POD, "Pod", ["metadata.colour", "spec.containers[0].foo", "spec.bar"]),
    ],
    ids=["repackrun", "pod"],
)
def test_field_validation_strict_warn_and_ignore(kubeconfig: Path, doc: str, kind: str, fields: list[str]) -> None:
    """kubectl's default (``--validate=strict``, fieldValidation=Strict) refuses an undeclared field
    naming it; Warn answers with one warning each; Ignore drops them (issue 25 item 10)."""
    name = yaml.safe_load(doc)["metadata"]["name"]
    try:
        strict = kubectl(kubeconfig, "create", "-f", "-", stdin=doc, check=False)
        assert strict.returncode != 0
        version = "v1" if kind == "Pod" else VERSION
        assert f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: ' in strict.stderr
        for f in fields:
            assert f'unknown field "{f}"' in strict.stderr, strict.stderr
        warned = kubectl(kubeconfig, "create", "--validate=warn", "-f", "-", stdin=doc)
        assert sorted(line for line in warned.stderr.splitlines() if line.startswith("Warning:")) == sorted(
            f'Warning: unknown field "{f}"' for f in fields
        )
        kubectl(kubeconfig, "delete", kind.lower(), name, "--wait=false", *(["-n", "default"] if kind == "Pod" else []))
        kubectl(kubeconfig, "create", "--validate=false", "-f", "-", stdin=doc)
        stored = json.loads(
            kubectl(
                kubeconfig, "get", kind.lower(), name, "-o", "json", *(["-n", "default"] if kind == "Pod" else [])
            ).stdout
        )
        assert "extra" not in stored["spec"] and "bar" not in stored["spec"] and "colour" not in stored["metadata"]
    finally:
        ns = ["-n", "default"] if kind == "Pod" else []
        kubectl(
            kubeconfig,
            "delete",
            kind.lower(),
            name,
            "--ignore-not-found",
            "--grace-period=0",
            "--force",
            *ns,
            check=False,
        )


def policy(name: str = "p", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"runTemplate": {"spec": {"mode": "DryRun", "goals": [{"resource": NPU}]}}, **spec}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "RepackPolicy", "metadata": {"name": name}, "spec": body}


GOAL = {"resource": NPU}
INVALID_POLICIES = [
    ("neither-trigger", {}, "spec", "a RepackPolicy needs a schedule, a whenPending trigger, or both"),
    ("empty-schedule", {"schedule": ""}, "spec", "a RepackPolicy needs a schedule"),
    ("negative-history", {"schedule": "@daily", "failedRunsHistoryLimit": -1}, "spec.failedRunsHistoryLimit",
     "should be greater than or equal to 0"),
    ("replace", {"schedule": "@daily", "concurrencyPolicy": "Replace"}, "spec.concurrencyPolicy",
     'supported values: "Allow", "Forbid"'),
    ("negative-wait", {"whenPending": {"minPendingSeconds": -5}}, "spec.whenPending.minPendingSeconds",
     "should be greater than or equal to 0"),
    ("template-bad-mode", {"schedule": "@daily", "runTemplate": {"spec": {"mode": "Now", "goals": [GOAL]}}},
     "spec.runTemplate.spec.mode", 'supported values: "DryRun", "Execute"'),
    ("template-cpu-goal", {"schedule": "@daily", "runTemplate": {"spec": {"mode": "DryRun",
                                                                          "goals": [{"resource": "cpu"}]}}},
     "spec.runTemplate.spec.goals[0].resource", "must be an extended resource name"),
    ("template-for-with-pending", {"whenPending": {}, "runTemplate": {"spec": {
        "mode": "Execute", "goals": [{"resource": NPU}], "for": {"job": "a/b"}}}},
     "spec.runTemplate.spec.for", "set by the whenPending trigger"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "field", "message"), [c[1:] for c in INVALID_POLICIES], ids=[c[0] for c in INVALID_POLICIES]
)
def test_each_invalid_policy_is_refused_naming_the_field(
    kubeconfig: Path, k8s: client.ApiClient, spec: dict[str, Any], field: str, message: str
) -> None:
    body = policy("bad", **spec)
    with pytest.raises(ApiException) as exc:
        custom(k8s).create_cluster_custom_object(GROUP, VERSION, "repackpolicies", body)
    assert exc.value.status == 422
    status = json.loads(exc.value.body)
    assert any(c["field"] == field and message in c["message"] for c in status["details"]["causes"]), status
    refused = kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(body), check=False)
    assert refused.returncode == 1 and 'The RepackPolicy "bad" is invalid' in refused.stderr
    assert f"{field}: " in refused.stderr and message in refused.stderr


def test_a_policy_applies_prints_and_explains(kubeconfig: Path) -> None:
    doc = policy("nightly", schedule="0 2 * * *", timeZone="Europe/Berlin", whenPending={"minPendingSeconds": 300})
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(doc))
    table = kubectl(kubeconfig, "get", "repackpolicy", "nightly").stdout.splitlines()
    assert table[0].split() == ["NAME", "SCHEDULE", "PENDING-AFTER", "SUSPEND", "ACTIVE", "LAST-TRIGGER",
                                "LAST-OUTCOME", "AGE"], table  # fmt: skip
    assert table[1].split()[:3] == ["nightly", "0", "2"] and "300" in table[1]
    assert kubectl(kubeconfig, "get", "rpol", "-o", "name").stdout.strip() == "repackpolicy.repack.volcano.sh/nightly"
    pending = kubectl(kubeconfig, "explain", "repackpolicy.spec.whenPending").stdout
    for field in ("minPendingSeconds", "queues", "namespaces", "selector", "retrySeconds"):
        assert f"  {field}\t" in pending, field
    template = kubectl(kubeconfig, "explain", "repackpolicy.spec.runTemplate.spec.for").stdout
    assert "podGroup" in template and "modelServing" in template
