"""Faults during an Execute on the real control plane: kube-apiserver killed (SIGKILL) and started
again on the same etcd, etcd restarted, and the watcher killed with SIGKILL and started again.

Each case has its own namespace and three KWOK nodes (pool ``faults-<case>``) holding three
two-worker VCJobs, one per node (2 + 2 + 2 of 4 NPUs: one node can be freed by moving one job).
The fault is injected once the run is Running (journaled); wherever it lands, the run must end
Succeeded, or Failed with an explicit condition, no pod may be evicted twice (the API server's
audit log counts the Eviction API calls) and every journaled relocation must still be in the
run's status at the end.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster.fixtures import Watcher, real_cluster, wait_for
from tests.realcluster.launcher import RealCluster
from tests.realcluster.scenario import NPU, WATCHER, Scenario

__all__ = ["real_cluster"]
pytestmark = pytest.mark.realcluster


def _job(ns: str, name: str, pool: str) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 5, "restartPolicy": "Never",
                         "containers": [{"name": "trainer", "image": "alpine:3.20",
                                         "resources": {"requests": {NPU: 1}, "limits": {NPU: 1}}}]}}  # fmt: skip
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {"repack.volcano.sh/eligible": "true"}},
            "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": 2,
                     "tasks": [{"name": "worker", "replicas": 2, "template": template}]}}  # fmt: skip


def _run(name: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": name},
            "spec": {"mode": "Execute", "goals": [{"resource": NPU}], "maxPerRun": {"podGroups": 1},
                     "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": pool}}}}},
                     "eviction": {"gracePeriodSeconds": 0}}}  # fmt: skip


def _fragmented(s: Scenario, pool: str) -> tuple[str, ...]:
    """Three nodes of ``pool``, one two-worker VCJob Running on each (balloons steer Volcano)."""
    nodes = tuple(f"{pool}-{i}" for i in (1, 2, 3))
    s.add_nodes(nodes, pool=pool)
    s.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}})
    for i, node in enumerate(nodes):
        # every other node full: 2 cards beside an earlier job, 4 on a node still empty
        s.set_balloons({n: 2 if j < i else 4 for j, n in enumerate(nodes) if j != i})
        s.apply(_job(s.ns, f"train-{i}", pool))
        wait_for(lambda i=i, node=node: _job_nodes(s, f"train-{i}") == [node] * 2, 90, why=f"train-{i} on {node}")
    s.set_balloons({})
    return nodes


def _job_nodes(s: Scenario, job: str) -> list[str]:
    return [node for pod, node in s.placement().items() if pod.startswith(f"{job}-")]


FAULTS: dict[str, Callable[[RealCluster, Watcher], Watcher]] = {}


def _fault(
    name: str,
) -> Callable[[Callable[[RealCluster, Watcher], Watcher]], Callable[[RealCluster, Watcher], Watcher]]:
    def register(f: Callable[[RealCluster, Watcher], Watcher]) -> Callable[[RealCluster, Watcher], Watcher]:
        FAULTS[name] = f
        return f

    return register


@_fault("apiserver-killed")
def _kill_apiserver(cluster: RealCluster, watcher: Watcher) -> Watcher:
    cluster.restart("kube-apiserver", sig=signal.SIGKILL)
    return watcher


@_fault("etcd-restarted")
def _restart_etcd(cluster: RealCluster, watcher: Watcher) -> Watcher:
    cluster.restart("etcd")
    return watcher


@_fault("watcher-killed")
def _kill_watcher(cluster: RealCluster, watcher: Watcher) -> Watcher:
    watcher.stop(signal.SIGKILL)
    return Watcher(watcher.kubeconfig, watcher.log).start()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_execute_survives(fault: str, real_cluster: RealCluster, tmp_path: Path) -> None:
    s = Scenario(real_cluster, tmp_path, f"faults-{fault}")
    s.install()
    pool = f"faults-{fault}"
    _fragmented(s, pool)
    kubeconfig = real_cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp_path / "kc")
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log").start()
    try:
        s.apply(_run(f"execute-{fault}", pool))
        wait_for(lambda: s.run(f"execute-{fault}").get("status", {}).get("relocations"), 60,
                 why="the run journaled its relocations")  # fmt: skip
        at_fault = s.run(f"execute-{fault}")["status"]
        journaled = {r["victimPodName"] for r in at_fault["relocations"]}
        watcher = FAULTS[fault](real_cluster, watcher)
        print(
            f"{fault} injected while the run was {at_fault['phase']}: "
            f"{[(r['victimPodName'], r.get('eviction', {}).get('phase')) for r in at_fault['relocations']]}"
        )
        status = s.finished(f"execute-{fault}", timeout=240)["status"]
    finally:
        watcher.stop()
    assert status["phase"] in ("Succeeded", "Failed"), status
    true = [(c["type"], c["reason"]) for c in status["conditions"] if c["status"] == "True"]
    if status["phase"] == "Failed":
        assert any(t == "Failed" and r for t, r in true), status["conditions"]
    else:
        assert ("Complete", "ExecutionCompleted") in true or any(r.startswith("ExecutionCompleted") for _, r in true)
    assert {r["victimPodName"] for r in status["relocations"]} == journaled, "a journaled relocation was lost"
    evictions = Counter(e["objectRef"]["name"] for e in real_cluster.audit()
                        if e.get("objectRef", {}).get("subresource") == "eviction"
                        and e["objectRef"].get("namespace") == s.ns and e["user"]["username"] == WATCHER
                        and e["responseStatus"]["code"] == 201)  # fmt: skip
    assert evictions and max(evictions.values()) == 1, evictions
    assert set(evictions) <= journaled
