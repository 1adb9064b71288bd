"""Repack for the job that waits, end to end on the real control plane, with kubectl:

* three KWOK nodes fragmented by vc-scheduler's own placements (2 + 2 + 2 of 4 NPUs); a whole-node
  Volcano Job (one 4-NPU worker) stays Pending although 6 NPUs are idle;
* a targeted DryRun by hand says which node to free and where the worker lands;
* a RepackPolicy with ``whenPending`` creates an Execute run for it — the watcher is SIGKILLed as
  soon as the run appears and restarted: still exactly one run — which frees a node, nominates the
  worker there, and the worker ends Running on it; the run, the policy and the events tell it;
* a targeted Execute run whose job is deleted mid-run ends TargetDeleted;
* the watcher runs as the ServiceAccount manifests/rbac binds: the policy's requests (its informer,
  status, the runs it creates, the PodGroup read by name) are allowed by the real RBAC authorizer.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from realcluster.launcher import RealCluster
from tests.realcluster.fixtures import Watcher, items, jsonpath, wait_for
from tests.realcluster.scenario import NPU, WATCHER, Scenario, vcjob

pytestmark = pytest.mark.realcluster
POOL = "wait-pool"


@pytest.fixture(scope="module")
def kubeconfig(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("policy")
    Scenario(real_cluster, tmp, "default").install()
    return real_cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp / "watcher.kc")


def _waiting_job(s: Scenario, name: str, **kw: Any) -> str:
    """A one-worker 4-NPU Volcano Job that cannot start on the fragmented pool; its pod's name."""
    s.apply(vcjob(s.ns, name, POOL, workers=1, cards=4, **kw))
    pod = f"{name}-worker-0"

    def pending() -> bool:
        found = [p for p in s.pods() if p["metadata"]["name"] == pod]
        return bool(found) and not found[0]["spec"].get("nodeName")

    wait_for(pending, 90, why=f"{pod} created (its PodGroup Inqueue) and not bound")
    return pod


def _policy_runs(s: Scenario, policy: str) -> list[dict[str, Any]]:
    return items(s.cluster, "repackrun", "-l", f"repack.volcano.sh/policy={policy}")


def test_when_pending_repacks_for_the_job_that_waits(
    real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path
) -> None:
    s = Scenario(real_cluster, tmp_path, "waits")
    nodes = s.three_jobs(POOL)
    pod = _waiting_job(s, "big")
    group = s.kubectl("get", "pod", pod, "-n", s.ns, "-o",
                      "jsonpath={.metadata.annotations.scheduling\\.k8s\\.io/group-name}")  # fmt: skip
    assert s.kubectl("get", "podgroup", group, "-n", s.ns, "-o", "jsonpath={.status.phase}") == "Inqueue"
    # a targeted DryRun by hand, planned once the watcher starts
    s.apply({"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": "for-big"},
             "spec": {"mode": "DryRun", "for": {"job": f"{s.ns}/big"}, "goals": [{"resource": NPU}],
                      "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": POOL}}}}}}})  # fmt: skip
    policy = {
        "apiVersion": "repack.volcano.sh/v1alpha1",
        "kind": "RepackPolicy",
        "metadata": {"name": "make-room"},
        "spec": {
            "whenPending": {"minPendingSeconds": 1, "namespaces": [s.ns]},
            "runTemplate": {
                "spec": {
                    "mode": "Execute",
                    "goals": [{"resource": NPU}],
                    "maxPerRun": {"podGroups": 1},
                    "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": POOL}}}}},
                    "eviction": {"gracePeriodSeconds": 0},
                }
            },
        },
    }
    first = Watcher(kubeconfig, tmp_path / "first.log", "--policy-resync", "2", gate_port=real_cluster.gate_port)
    first.start()
    try:
        dry = s.finished("for-big", timeout=120)["status"]
        assert dry["phase"] == "Succeeded", dry
        target = dry["plan"]["target"]
        assert (target["podGroup"], target["verdict"]) == (f"{s.ns}/{group}", "Fits")
        assert [p["podName"] for p in target["placements"]] == [pod]
        assert target["placements"][0]["node"] in dry["plan"]["freedNodes"]
        s.apply(policy)
        created = wait_for(lambda: _policy_runs(s, "make-room") or None, 90, why="the policy created a run")
    finally:
        first.stop(signal.SIGKILL)  # as soon as the run exists: its trigger may not be recorded yet
    second = Watcher(kubeconfig, tmp_path / "second.log", "--policy-resync", "2", gate_port=real_cluster.gate_port)
    second.start()
    try:
        (run,) = created
        name = run["metadata"]["name"]
        assert run["spec"]["for"] == {"podGroup": f"{s.ns}/{group}"}
        status = s.finished(name, timeout=240)["status"]
        assert status["phase"] == "Succeeded", (status, second.tail())
        wait_for(
            lambda: s.placement().get(pod) in status["plan"]["freedNodes"], 60, why=f"{pod} Running on a freed node"
        )
        # the restarted watcher saw the trigger's run and made no second one, whatever it recorded
        outcome = "jsonpath={.status.lastOutcome.run}"
        wait_for(lambda: s.kubectl("get", "repackpolicy", "make-room", "-o", outcome) == name, 60,
                 why="the policy took its run's outcome")  # fmt: skip
    finally:
        second.stop()
    assert [r["metadata"]["name"] for r in _policy_runs(s, "make-room")] == [name]
    assert status["target"]["phase"] == "Started" and status["target"]["nominations"][0]["phase"] == "Bound"
    reason = json.loads(s.kubectl("get", "repackrun", name, "-o", "json"))["status"]["conditions"]
    assert any(c["type"] == "Complete" and c["status"] == "True" and c["reason"].startswith("ExecutionCompleted")
               for c in reason), reason  # fmt: skip
    # kubectl tells the story: the policy's columns, its status, its events
    table = s.kubectl("get", "repackpolicy", "make-room", "-o", "wide").splitlines()
    assert table[0].split()[:7] == ["NAME", "SCHEDULE", "PENDING-AFTER", "SUSPEND", "ACTIVE", "LAST-TRIGGER",
                                    "LAST-OUTCOME"], table  # fmt: skip
    assert "ExecutionCompleted" in table[1] and name in table[1], table
    trigger = jsonpath(
        real_cluster, "repackpolicy", "make-room", expr="{.status.lastTrigger.kind} {.status.lastTrigger.podGroup}"
    )
    assert trigger == f"Pending {s.ns}/{group}"
    events = s.kubectl("get", "events", "-n", "default", "--field-selector",
                       "involvedObject.kind=RepackPolicy,involvedObject.name=make-room",
                       "-o", "jsonpath={range .items[*]}{.reason}{'\\n'}{end}").split()  # fmt: skip
    assert "Triggered" in events
    run_events = s.kubectl("get", "events", "-n", "default", "--field-selector", f"involvedObject.name={name}",
                           "-o", "jsonpath={range .items[*]}{.reason}{'\\n'}{end}").split()  # fmt: skip
    assert {"TargetNominated", "TargetStarted"} <= set(run_events), run_events
    assert nodes  # the pool the job was held back on


def test_a_target_deleted_mid_run_ends_it(real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path) -> None:
    """The job's pod carries someone else's scheduling gate: the run frees a node, nominates it, and
    waits for it to start; the job is deleted meanwhile (its PodGroup with it): the run ends."""
    s = Scenario(real_cluster, tmp_path, "gone")
    s.three_jobs("gone-pool")
    s.apply(vcjob(s.ns, "held", "gone-pool", workers=1, cards=4, gates=("example.com/hold",)))
    wait_for(lambda: any(p["metadata"]["name"] == "held-worker-0" for p in s.pods()), 90, why="held's pod created")
    group = s.kubectl("get", "pod", "held-worker-0", "-n", s.ns, "-o",
                      "jsonpath={.metadata.annotations.scheduling\\.k8s\\.io/group-name}")  # fmt: skip
    s.apply({"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": "for-held"},
             "spec": {"mode": "Execute", "for": {"podGroup": f"{s.ns}/{group}"}, "goals": [{"resource": NPU}],
                      "maxPerRun": {"podGroups": 1}, "eviction": {"gracePeriodSeconds": 0},
                      "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": "gone-pool"}}}}},
                      }})  # fmt: skip
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log", gate_port=real_cluster.gate_port).start()
    try:
        wait_for(lambda: jsonpath(real_cluster, "repackrun", "for-held", expr="{.status.target.phase}") == "Nominated",
                 180, why="the run nominated the held pod")  # fmt: skip
        nominated = s.kubectl("get", "pod", "held-worker-0", "-n", s.ns, "-o", "jsonpath={.status.nominatedNodeName}")
        assert (
            nominated
            in json.loads(s.kubectl("get", "repackrun", "for-held", "-o", "json"))["status"]["plan"]["freedNodes"]
        )
        s.kubectl("delete", "jobs.batch.volcano.sh", "held", "-n", s.ns, "--wait=false")
        status = s.finished("for-held", timeout=120)["status"]
    finally:
        watcher.stop()
    assert status["phase"] == "Failed" and status["target"]["phase"] == "Deleted", status
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "TargetDeleted" and f"PodGroup {s.ns}/{group} was deleted" in failed["message"]


def test_the_policy_requests_are_allowed_by_rbac(real_cluster: RealCluster) -> None:
    """What the policy controller does as the bound ServiceAccount is granted, and it was done (the
    guide's RBAC test lists these grants as exercised here)."""
    seen: dict[tuple[str, str], set[int]] = {}
    for e in real_cluster.audit():
        if e["user"]["username"] != WATCHER or "objectRef" not in e:
            continue
        ref = e.get("objectRef", {})
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        seen.setdefault((resource, e["verb"]), set()).add(e["responseStatus"]["code"])
    for grant in (("repackpolicies", "list"), ("repackpolicies", "watch"), ("repackpolicies/status", "update"),
                  ("repackruns", "create"), ("podgroups", "get")):  # fmt: skip
        assert grant in seen, f"{grant} never requested"
        assert 403 not in seen[grant], f"{grant} forbidden"
    assert not [k for k, codes in seen.items() if 403 in codes], seen
