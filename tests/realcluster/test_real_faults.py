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
from collections.abc import Callable
from pathlib import Path

import pytest

from realcluster.launcher import RealCluster
from tests.realcluster.fixtures import Watcher, wait_for
from tests.realcluster.scenario import Scenario, execute_run

pytestmark = pytest.mark.realcluster


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
    return Watcher(watcher.kubeconfig, watcher.log, gate_port=watcher.gate_port).start()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_execute_survives(fault: str, real_cluster: RealCluster, tmp_path: Path) -> None:
    s = Scenario(real_cluster, tmp_path, f"faults-{fault}")
    s.install()
    pool = f"faults-{fault}"
    s.three_jobs(pool)
    kubeconfig = real_cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp_path / "kc")
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log", gate_port=real_cluster.gate_port).start()
    try:
        s.apply(execute_run(f"execute-{fault}", pool))
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
    s.check_evictions(status["relocations"])
