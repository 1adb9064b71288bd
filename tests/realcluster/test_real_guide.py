"""The user guide's Steps 1-7 with kubectl on the real control plane (etcd, kube-apiserver,
kube-controller-manager, KWOK, Volcano's vc-controller-manager and vc-scheduler built from Go modules).

The watcher runs as the shipped command (``repack-sidecar watch``) authenticated as the
ServiceAccount ``manifests/rbac`` binds, so every request it makes is judged by the real RBAC
authorizer; the API server's audit log is the record the RBAC test reads.

The guide's example environment (Step 2) is built first, so that Step 1 has something to evaluate:
three KWOK nodes with 4 NPUs each, the VCJob on ``ascend-node-01`` and the ModelServing's two
ServingGroups on ``ascend-node-02``/``-03`` — the guide's fragmented picture (2 + 2 + 2 cards on
three nodes). Volcano places the pods; balloon pods (bare pods bound to a node, as operators use to
hold capacity) decide where there is room while each workload is applied, and leave afterwards —
fragmentation left behind by departures, as in a real cluster. The steps run in order in one module.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.launcher import RealCluster
from realcluster.modelserving import ModelServingDouble
from sidecar.watcher.gate import certs
from sidecar.watcher.kit.status import utcnow
from tests.project.test_manifests_rbac import CLUSTER_GRANTS, LEASE_GRANTS, TLS_GRANTS
from tests.realcluster.fixtures import Watcher, jsonpath, wait_for
from tests.realcluster.scenario import NPU, WATCHER, Scenario

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "realcluster" / "guide"
DATA = ROOT / "sidecar" / "data"
NS = "repack-demo"
NODES = ("ascend-node-01", "ascend-node-02", "ascend-node-03")
pytestmark = pytest.mark.realcluster


@pytest.fixture(scope="module")
def guide(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    tmp = tmp_path_factory.mktemp("guide")
    g = Scenario(real_cluster, tmp, NS)
    g.install()
    assert g.add_node_file(GUIDE / "nodes.yaml") == NODES  # docs/walkthrough.md's file
    serving = ModelServingDouble(real_cluster.kubeconfig).start()
    kubeconfig = real_cluster.service_account_kubeconfig(
        "volcano-system", "volcano-scheduler", tmp / "watcher.kubeconfig"
    )
    # a first start issues the webhook's certificate (create); an upgrade then finds one lacking the
    # name it is called by, as an earlier install's would, and renews it (update)
    first = Watcher(kubeconfig, tmp / "first.log", gate_port=real_cluster.gate_port).start()
    wait_for(lambda: g.kubectl("get", "secret", "-n", "volcano-system", "-o", "name", check=False).count(
        "secret/repack-webhook-tls"), 30, why="the first watcher issued its certificate")  # fmt: skip
    first.stop()
    stale = certs.issue(["repack-webhook.volcano-system.svc"], utcnow())
    g.apply(certs.secret_object("volcano-system", "repack-webhook-tls", stale, ""))
    watcher = Watcher(kubeconfig, tmp / "watcher.log", gate_port=real_cluster.gate_port).start()
    try:
        yield g
    finally:
        watcher.stop()
        serving.stop()
        print(f"watcher log ({watcher.log}):\n{watcher.tail()}")


def test_step2_workloads_land_fragmented(guide: Scenario) -> None:
    """Step 2: label the nodes, apply the VCJob and the ModelServing; kubectl shows the PodGroups
    with the workloads' labels (the VCJob controller copies them; the ModelServing double too)."""
    for n in NODES:
        guide.kubectl("label", "node", n, "accelerator-pool=ascend-npu")
    assert f"{NPU}:  4" in guide.kubectl("describe", "node", "ascend-node-01")
    namespace, job, serving = yaml.safe_load_all((GUIDE / "step2-ascend-workloads.yaml").read_text())
    guide.set_balloons({"ascend-node-02": 4, "ascend-node-03": 4})
    guide.apply([namespace, job])
    wait_for(lambda: sorted(guide.placement().items()) == [("ascend-batch-training-worker-0", "ascend-node-01"),
                                                         ("ascend-batch-training-worker-1", "ascend-node-01")],
             90, why="the VCJob's workers Running on ascend-node-01")  # fmt: skip
    guide.set_balloons({n: 2 for n in NODES})
    guide.apply(serving)
    wait_for(lambda: len(guide.placement()) == 6, 90, why="four ModelServing pods Running")
    guide.set_balloons({})
    per_node = {n: sum(1 for v in guide.placement().values() if v == n) for n in NODES}
    assert per_node == {n: 2 for n in NODES}, guide.placement()
    assert "ascend-batch-training" in guide.kubectl("get", "vcjob", "-n", NS)
    assert "ascend-online-serving" in guide.kubectl("get", "modelserving", "-n", NS)
    groups = guide.kubectl("get", "podgroup", "-n", NS, "--show-labels")
    assert groups.count("repack.volcano.sh/eligible=true") == 3, groups


def test_step1_minimal_dryrun(guide: Scenario) -> None:
    guide.kubectl("apply", "-f", str(GUIDE / "step1-ascend-npu-dryrun.yaml"))
    run = guide.finished("ascend-npu-dryrun")
    status = run["status"]
    assert status["phase"] == "Succeeded", status
    assert [(c["type"], c["reason"]) for c in status["conditions"] if c["status"] == "True"] == [
        ("Complete", "RepackRecommended")]  # fmt: skip
    assert status["plan"]["freedNodes"] == ["ascend-node-01"]
    assert status["plan"]["summary"]["fragBeforePercent"] == pytest.approx(33.3, abs=0.05)
    header, row = guide.kubectl("get", "repackrun", "ascend-npu-dryrun", "-o", "wide").splitlines()
    assert header.split()[:7] == ["NAME", "MODE", "PHASE", "REASON", "FRAG-BEFORE", "FRAG-AFTER", "FREED"], header
    assert row.split()[:7] == ["ascend-npu-dryrun", "DryRun", "Succeeded", "RepackRecommended", "33.3", "0", "1"]


def test_step3_scoped_dryrun(guide: Scenario) -> None:
    run = yaml.safe_load((GUIDE / "step1-ascend-npu-dryrun.yaml").read_text())
    run["metadata"]["name"] = "ascend-scoped-dryrun"
    run["spec"]["scope"] = {
        "podGroups": {"include": {"selector": {"matchLabels": {"repack.volcano.sh/eligible": "true"}}}},
        "nodes": {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}},
    }
    guide.apply(run)
    guide.finished("ascend-scoped-dryrun")
    got = jsonpath(guide.cluster, "repackrun", "ascend-scoped-dryrun", expr=(
        "podGroups={.status.plan.summary.resolvedScope.podGroupCount}, "
        "nodes={.status.plan.summary.resolvedScope.nodeCount}{\"\\n\"}"))  # fmt: skip
    assert got == "podGroups=3, nodes=3\n"
    moves = jsonpath(
        guide.cluster,
        "repackrun",
        "ascend-scoped-dryrun",
        expr=(
            '{range .status.plan.moves[*]}{.owner.kind}{"/"}{.owner.name}{"\\t"}{.namespace}{"/"}{.podGroupName}'
            '{"\\t"}{.cards}{" cards\\n"}{range .pods[*]}{"  "}{.name}{": "}{.fromNode}{" -> "}{.toNode}'
            '{"\\n"}{end}{end}'
        ),
    )
    lines = moves.splitlines()
    assert lines[0].startswith("Job/ascend-batch-training\trepack-demo/ascend-batch-training-") and lines[0].endswith(
        "\t2 cards")  # fmt: skip
    assert sorted(line.split(" -> ")[0] for line in lines[1:]) == [
        "  ascend-batch-training-worker-0: ascend-node-01",
        "  ascend-batch-training-worker-1: ascend-node-01",
    ]
    assert {line.split(" -> ")[1] for line in lines[1:]} <= {"ascend-node-02", "ascend-node-03"}
    assert jsonpath(guide.cluster, "repackrun", "ascend-scoped-dryrun", expr="{.status.plan.freedNodes}") == (
        '["ascend-node-01"]')  # fmt: skip


def test_step4_guarded_dryrun(guide: Scenario) -> None:
    guide.kubectl("apply", "-f", str(DATA / "guide-ascend-dryrun.yaml"))
    guide.finished("ascend-guarded-dryrun")
    got = jsonpath(
        guide.cluster,
        "repackrun",
        "ascend-guarded-dryrun",
        expr=(
            "fragmentation={.status.plan.summary.fragBeforePercent}% -> {.status.plan.summary.fragAfterPercent}%, "
            "freedNodes={.status.plan.summary.freedNodeCount}, movedCards={.status.plan.summary.movedCardCount}"
        ),
    )
    assert got == "fragmentation=33.3% -> 0%, freedNodes=1, movedCards=2", got


def test_step5_and_6_execute(guide: Scenario) -> None:
    """Step 5: the Execute run; Step 6: its conditions, relocations, and an empty ascend-node-01."""
    before = guide.placement()
    guide.kubectl("apply", "-f", str(DATA / "guide-ascend-execute.yaml"))
    run = guide.finished("ascend-execute-001", timeout=240)
    status = run["status"]
    assert status["phase"] == "Succeeded", json.dumps(status, indent=1)
    (reason,) = [c["reason"] for c in status["conditions"] if c["type"] == "Complete" and c["status"] == "True"]
    # every rebuilt pod was created behind the placement gate, so vc-scheduler bound it only after
    # the watcher had nominated it: where it was planned
    assert reason == "ExecutionCompleted", json.dumps(status, indent=1)
    wide = guide.kubectl("get", "repackrun", "ascend-execute-001", "-o", "wide")
    assert "Succeeded" in wide.splitlines()[1], wide
    relocations = jsonpath(
        guide.cluster,
        "repackrun",
        "ascend-execute-001",
        expr=(
            '{range .status.relocations[*]}{.namespace}{"/"}{.victimPodName}{"\\teviction="}{.eviction.phase}'
            '{"\\tplacement="}{.placement.phase}{"\\tplanned="}{.plannedNodeName}{"\\tselected="}'
            '{.placement.selectedNodeName}{"\\tactual="}{.placement.actualNodeName}{"\\treplacement="}'
            '{.placement.replacementPodName}{"\\n"}{end}'
        ),
    )
    rows = sorted(relocations.splitlines())
    assert len(rows) == 2, relocations
    planned, actual = {}, {}
    for row, worker in zip(rows, ("ascend-batch-training-worker-0", "ascend-batch-training-worker-1"), strict=True):
        fields = dict(f.split("=", 1) for f in row.split("\t")[1:])
        assert row.startswith(f"{NS}/{worker}\t")
        assert fields["eviction"] == "Evicted", row
        assert fields["planned"] in ("ascend-node-02", "ascend-node-03")
        assert fields["selected"] == fields["actual"] == fields["planned"], row
        assert fields["placement"] == "Bound", row
        assert fields["replacement"] == worker
        planned[worker], actual[worker] = fields["planned"], fields["actual"]
    # created gated by the webhook kube-apiserver called over HTTPS (its audit annotation on each create)
    gated = guide.gated()
    assert {w: gated.get(w) for w in planned} == {w: "gated" for w in planned}, gated
    assert guide.kubectl("get", "pod", "-A", "--field-selector", "spec.nodeName=ascend-node-01", "-o", "name") == ""
    assert guide.placement() == before | actual  # every pod rebuilt and Running again, where the journal says
    result = jsonpath(guide.cluster, "repackrun", "ascend-execute-001", expr=(
        "result: frag {.status.result.fragAfterPercent}%, freed {.status.result.freedNodeCount}, "
        "moved {.status.result.movedCardCount}"))  # fmt: skip
    assert result == "result: frag 0%, freed 1, moved 2", result
    # through the Eviction API by the watcher's ServiceAccount, each victim at most once, nobody else
    guide.check_evictions(status["relocations"])
    evictions = [e for e in guide.cluster.audit() if e.get("objectRef", {}).get("subresource") == "eviction"]
    assert {e["user"]["username"] for e in evictions} == {WATCHER}


def test_step7_large_job_on_the_freed_node(guide: Scenario) -> None:
    """Step 7. The guide's job asks 2 workers x 4 NPUs (8 cards) but one freed node has 4: applied as
    written, vc-controller-manager creates its pods and the gang waits (nothing is bound). Adjusted as
    the guide says ("adjust the number of replicas, minAvailable ... based on the actual number of
    processing units on the node") to one 4-NPU worker, vc-scheduler binds it on the freed node —
    the only node with four free cards."""
    job = yaml.safe_load((GUIDE / "step7-ascend-large-training.yaml").read_text())
    guide.apply(job)
    selector = "volcano.sh/job-name=ascend-large-training"
    wait_for(lambda: len(guide.pods("-l", selector)) == 2, 60, why="the VCJob's two pods created")
    guide.kubectl("get", "job.batch.volcano.sh", "ascend-large-training", "-n", NS)
    wait_for(lambda: "Unschedulable" in guide.kubectl("get", "podgroup", "-n", NS, "-o", "yaml") or None, 30,
             why="the 8-card gang reported unschedulable")  # fmt: skip
    assert all(not p["spec"].get("nodeName") for p in guide.pods("-l", selector))
    guide.kubectl("delete", "job.batch.volcano.sh", "ascend-large-training", "-n", NS, "--wait=true")
    wait_for(lambda: not guide.pods("-l", selector), 60, why="the first job's pods gone")
    sized = copy.deepcopy(job)
    sized["spec"]["minAvailable"] = sized["spec"]["tasks"][0]["replicas"] = 1
    guide.apply(sized)

    def bound() -> list[str] | None:
        pods = guide.pods("-l", selector)
        nodes = [p["spec"].get("nodeName", "") for p in pods if p["status"].get("phase") == "Running"]
        return nodes or None

    assert wait_for(bound, 90, why="the sized job Running") == ["ascend-node-01"]
    table = guide.kubectl("get", "pod", "-n", NS, "-l", selector, "-o", "wide")
    assert "ascend-large-training-worker-0" in table and "ascend-node-01" in table, table


def test_ttl_deletes_a_finished_run(guide: Scenario) -> None:
    """``ttlSecondsAfterFinished``: the watcher deletes the run once it has been finished that long."""
    run = yaml.safe_load((GUIDE / "step1-ascend-npu-dryrun.yaml").read_text())
    run["metadata"]["name"] = "ascend-short-lived-dryrun"
    run["spec"]["ttlSecondsAfterFinished"] = 2
    guide.apply(run)
    assert guide.finished("ascend-short-lived-dryrun")["status"]["phase"] == "Succeeded"
    names = lambda: guide.kubectl("get", "repackruns", "-o", "name")  # noqa: E731
    wait_for(lambda: "ascend-short-lived-dryrun" not in names(), 30, why="the run deleted by its TTL")
    assert "repackrun.repack.volcano.sh/ascend-guarded-dryrun" in names()  # a longer TTL: still there
    deleted = [e for e in guide.cluster.audit() if e["verb"] == "delete" and e.get("objectRef", {}).get("name") ==
               "ascend-short-lived-dryrun"]  # fmt: skip
    assert [e["user"]["username"] for e in deleted] == [WATCHER]


#: grants the runs above do not exercise on this cluster, each with the reason (the fixture's first
#: watcher creates the webhook's Secret, the second renews a stale certificate in it; what only a
#: RepackPolicy or a targeted run does is exercised, and checked, by test_real_policy.py)
UNEXERCISED: dict[tuple[str, str, str], str] = {
    ("repack.volcano.sh", "repackruns", "create"): "a RepackPolicy's runs: tests/realcluster/test_real_policy.py",
    (
        "repack.volcano.sh",
        "repackpolicies/status",
        "update",
    ): "a policy's status: tests/realcluster/test_real_policy.py",
    ("scheduling.volcano.sh", "podgroups", "get"): "a targeted run's PodGroup: tests/realcluster/test_real_policy.py",
    ("repack.volcano.sh", "repackpolicies", "get"): "a policy re-read after a 409 (kit/status.StatusWriter.read)",
}


def test_rbac_the_watcher_is_allowed_all_it_does_and_granted_no_more(guide: Scenario) -> None:
    """After every step: the real RBAC authorizer allowed every request the watcher's ServiceAccount
    made, what it used is within the rendered roles, and every grant was used or is listed in
    ``UNEXERCISED`` with its reason (the roles' exact shape is tests/project/test_manifests_rbac.py's)."""
    mine = [e for e in guide.cluster.audit() if e["user"]["username"] == WATCHER]
    assert mine, "the watcher made no request as its ServiceAccount"
    denied = [(e["verb"], e["requestURI"]) for e in mine if e["responseStatus"]["code"] == 403]
    assert not denied, denied
    used = {(_group(e), _resource(e), e["verb"]) for e in mine if "objectRef" in e}
    granted = CLUSTER_GRANTS | LEASE_GRANTS | TLS_GRANTS
    assert used <= granted, used - granted
    assert granted - used == set(UNEXERCISED), "a grant no step used"
    for resource in ("leases", "secrets"):
        assert {e["objectRef"].get("namespace") for e in mine if _resource(e) == resource} == {"volcano-system"}
    named = {e["objectRef"].get("name") for e in mine if _resource(e) == "mutatingwebhookconfigurations"}
    assert named == {"repack-placement-gate"}
    # anything broader is refused by the real authorizer
    kubeconfig = guide.tmp / "watcher.kubeconfig"
    for verb, what in (
        ("create", "pods"),
        ("delete", "pods"),
        ("update", "nodes"),
        ("list", "secrets"),
        ("get", "secrets/other"),
        ("delete", "mutatingwebhookconfigurations/repack-placement-gate"),
        ("patch", "validatingwebhookconfigurations"),
        ("create", "repackpolicies.repack.volcano.sh"),
        ("delete", "repackpolicies.repack.volcano.sh"),
        ("patch", "podgroups.scheduling.volcano.sh"),
    ):
        done = guide.cluster.kubectl("auth", "can-i", verb, what, "-A", kubeconfig=kubeconfig, check=False)
        assert done.stdout.strip() == "no", (verb, what, done.stdout)


def _group(event: dict[str, Any]) -> str:
    return str(event["objectRef"].get("apiGroup", ""))


def _resource(event: dict[str, Any]) -> str:
    ref = event["objectRef"]
    return ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
