"""The fake cluster answers the watcher's port as the real API server does (the shared scenarios,
tests/port_contract.py, which tests/realcluster/test_real_port.py runs on kube-apiserver), and does
what only a fake can: budgets that refuse evictions, injected faults and latency, expired watch
history, cut streams, an admission hook, audited calls."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from sidecar.fake.cluster import FakeCluster
from sidecar.fake.eviction import MULTIPLE, VIOLATION
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import EVENTS, PDBS, PODS, REPACKRUNS, ApiError, Cluster, Gone, Unreachable
from tests.port_contract import SCENARIOS, a_pod, a_run, namespace, wait

NS = "contract"


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_the_port_contract(scenario: Callable[[Cluster, str], None]) -> None:
    cluster = FakeCluster()
    namespace(cluster, NS)
    scenario(cluster, NS)


def running(cluster: FakeCluster, name: str, ns: str = NS, **labels: str) -> Obj:
    pod = a_pod(name, ns, nodeName="n1", terminationGracePeriodSeconds=0)
    pod["metadata"]["labels"] = {"app": "web", **labels}
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    cluster.load([pod])
    found = cluster.find(PODS, name, ns)
    assert found is not None
    return found


def budget(cluster: FakeCluster, name: str, allowed: int, selector: Obj | None) -> None:
    status = {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 2 - allowed}
    meta = {"name": name, "namespace": NS}
    cluster.load([{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
                   "spec": {"selector": selector}, "status": status}])  # fmt: skip


def evict(cluster: FakeCluster, pod: Obj) -> None:
    cluster.evict(NS, pod["metadata"]["name"], uid=pod["metadata"]["uid"], grace_seconds=0)


def test_a_budget_allows_what_it_has_and_refuses_the_rest() -> None:
    cluster = FakeCluster()
    budget(cluster, "web", 1, {"matchLabels": {"app": "web"}})
    first, second = running(cluster, "w0"), running(cluster, "w1")
    evict(cluster, first)
    assert cluster.get(PODS, "w0", NS) is None
    pdb = cluster.get(PDBS, "web", NS)
    assert pdb is not None and pdb["status"]["disruptionsAllowed"] == 0 and "w0" in pdb["status"]["disruptedPods"]
    with pytest.raises(ApiError) as refused:
        evict(cluster, second)
    assert refused.value.status == 429 and refused.value.message.startswith(VIOLATION)
    assert "The disruption budget web needs" in refused.value.message
    assert cluster.get(PODS, "w1", NS) is not None


def test_two_budgets_on_one_pod_answer_500_and_empty_selectors_guard_nothing() -> None:
    cluster = FakeCluster()
    budget(cluster, "a", 5, {"matchLabels": {"app": "web"}})
    budget(cluster, "b", 5, {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})
    budget(cluster, "everything", 0, {})
    budget(cluster, "nothing", 0, None)
    with pytest.raises(ApiError) as two:
        evict(cluster, running(cluster, "w0"))
    assert (two.value.status, two.value.message) == (500, MULTIPLE)
    evict(cluster, running(cluster, "lonely", app="other"))  # only the empty and null budgets match it: none guards


def test_pending_finished_and_terminating_pods_go_without_asking_a_budget() -> None:
    cluster = FakeCluster()
    budget(cluster, "web", 0, {"matchLabels": {"app": "web"}})
    for phase in ("Pending", "Succeeded", "Failed"):
        pod = running(cluster, phase.lower())
        cluster.load([{**pod, "status": {"phase": phase}}])
        evict(cluster, pod)
    assert not cluster.items(PODS)


def test_a_pod_on_a_node_terminates_for_its_grace_period_first() -> None:
    cluster = FakeCluster()
    pod = running(cluster, "slow")
    cluster.evict(NS, "slow", uid=pod["metadata"]["uid"], grace_seconds=30)
    terminating = cluster.get(PODS, "slow", NS)
    assert terminating is not None and terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    cluster.evict(NS, "slow", uid=pod["metadata"]["uid"], grace_seconds=30)  # already terminating: no change
    assert cluster.get(PODS, "slow", NS) == terminating
    assert cluster.remove(PODS, "slow", NS, pod["metadata"]["uid"])  # its kubelet confirms
    assert cluster.get(PODS, "slow", NS) is None


def test_injected_failures_are_answered_then_the_call_goes_through_and_everything_is_audited() -> None:
    cluster = FakeCluster()
    run = cluster.create(REPACKRUNS, a_run("r"))
    cluster.faults.fail("update", "repackruns", 409, times=2, subresource="status")
    for _ in range(2):
        with pytest.raises(ApiError) as injected:
            cluster.replace(REPACKRUNS, {**run, "status": {"phase": "Running"}}, status=True)
        assert injected.value.status == 409 and "injected" in injected.value.message
    assert cluster.faults.pending() == 0
    cluster.replace(REPACKRUNS, {**run, "status": {"phase": "Running"}}, status=True)
    calls = [(c.verb, c.resource, c.subresource, c.code) for c in cluster.audit.records()]
    assert calls == [("create", "repackruns", "", 201), *[("update", "repackruns", "status", 409)] * 2,
                     ("update", "repackruns", "status", 200)]  # fmt: skip


def test_a_delay_longer_than_the_call_allows_is_no_answer() -> None:
    cluster = FakeCluster()
    cluster.faults.delay(0.3, "get", "pods")
    started = time.monotonic()
    with pytest.raises(Unreachable):
        cluster.get(PODS, "p", NS, timeout=0.1)
    assert time.monotonic() - started < 0.25
    assert cluster.get(PODS, "p", NS) is None  # without a timeout it waits, then answers
    assert [c.code for c in cluster.audit.records("get")] == [0, 404]


def test_a_watch_from_a_forgotten_version_is_gone_and_a_cut_stream_is_no_answer() -> None:
    cluster = FakeCluster(history=3)
    start = cluster.listing(PODS).resource_version
    for i in range(5):
        cluster.create(PODS, a_pod(f"p{i}", NS))
    with pytest.raises(Gone):
        cluster.watch(PODS, start, 5)  # five events since, three kept
    recent = cluster.listing(PODS).resource_version
    cluster.expire()
    cluster.watch(PODS, recent, 1).close()  # the current version is still fine
    stream = cluster.watch(PODS, recent, 30)
    caught: list[BaseException] = []

    def read() -> None:
        try:
            list(stream)
        except Unreachable as exc:
            caught.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert wait(lambda: cluster.drop_watches() == 1, 5)
    reader.join(5)
    assert len(caught) == 1


def test_an_idle_watch_sends_bookmarks_and_ends_at_its_timeout() -> None:
    cluster = FakeCluster(bookmark_every=0.05)
    rv = cluster.listing(PODS).resource_version
    started = time.monotonic()
    events = list(cluster.watch(PODS, rv, 1))
    assert 0.9 < time.monotonic() - started < 2.0
    assert events and {kind for kind, _ in events} == {"BOOKMARK"}
    assert events[-1][1]["metadata"]["resourceVersion"] == rv


def test_pod_creates_pass_the_admission_hook() -> None:
    def gate(review: Obj) -> Obj:
        request = review["request"]
        patch = [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "g"}]}]
        answer: dict[str, Any] = {"uid": request["uid"], "allowed": request["name"] != "refused"}
        if request["name"] == "gated":
            answer |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        return {**review, "response": answer}

    cluster = FakeCluster(admission=gate)
    assert cluster.create(PODS, a_pod("gated", NS))["spec"]["schedulingGates"] == [{"name": "g"}]
    assert "schedulingGates" not in cluster.create(PODS, a_pod("plain", NS))["spec"]
    with pytest.raises(ApiError) as denied:
        cluster.create(PODS, a_pod("refused", NS))
    assert denied.value.status == 403
    event = cluster.create(EVENTS, {"metadata": {"generateName": "r.", "namespace": NS}, "reason": "Test"})
    assert event["metadata"]["name"].startswith("r.") and len(event["metadata"]["name"]) > 2
