"""The watcher against the real control plane's own mechanisms: Lease election between two watcher
processes (the leader SIGKILLed, the other takes over), PodDisruptionBudgets whose status the real
disruption controller keeps (the Eviction API refuses what they protect; an Execute moves only what
they allow), and an informer's relist after a real 410 Gone from kube-apiserver's watch cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from realcluster.launcher import RealCluster
from tests.realcluster.fixtures import Watcher, wait_for
from tests.realcluster.scenario import WATCHER, Scenario, execute_run

pytestmark = pytest.mark.realcluster
GUIDE = Path(__file__).resolve().parents[2] / "realcluster" / "guide"
ROOT = Path(__file__).resolve().parents[2]
FAST_LEASE = ("--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5")


@pytest.fixture
def kubeconfig(real_cluster: RealCluster, tmp_path: Path) -> Path:
    """The watcher's ServiceAccount token, after the project's install."""
    Scenario(real_cluster, tmp_path, "default").install()
    return real_cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp_path / "watcher.kc")


@pytest.fixture
def core(real_cluster: RealCluster) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(str(real_cluster.kubeconfig))
    yield client.CoreV1Api(api)
    api.close()


def _leading(w: Watcher) -> bool:
    return '"event": "leading"' in w.log.read_text(errors="replace")


def _dryrun(name: str, **spec: Any) -> dict[str, Any]:
    run = yaml.safe_load((GUIDE / "step1-ascend-npu-dryrun.yaml").read_text())
    run["metadata"]["name"] = name
    run["spec"].update(spec)
    return dict(run)


def test_watch_once_plans_every_unfinished_run_and_exits(
    real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path
) -> None:
    """``watch --once`` as an operator runs it (the shipped command, its ServiceAccount): one pass over
    the unfinished runs, a line per run it moved, exit 0."""
    s = Scenario(real_cluster, tmp_path, "default")
    s.add_nodes(("once-1",), pool="once")
    s.apply(_dryrun("once-dryrun"))
    argv = [sys.executable, "-m", "sidecar", "watch", "--kubeconfig", str(kubeconfig), "--in-process", "--once"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["repackrun/once-dryrun Succeeded"], done.stdout
    assert s.run("once-dryrun")["status"]["phase"] == "Succeeded"


def test_lease_one_leader_and_a_successor_when_it_dies(
    real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path
) -> None:
    s = Scenario(real_cluster, tmp_path, "default")
    s.add_nodes(("lease-1",), pool="lease")  # something providing the goal resource
    first = Watcher(kubeconfig, tmp_path / "a.log", *FAST_LEASE, gate_port=real_cluster.gate_port).start()
    wait_for(lambda: _leading(first), 30, why="the first watcher leads")
    # the standby serves no webhook: one loopback port per machine (in a cluster each replica has its pod)
    second = Watcher(kubeconfig, tmp_path / "b.log", *FAST_LEASE).start()
    try:
        wait_for(lambda: "watching" in second.log.read_text(), 30, why="the second watcher started")
        s.apply(_dryrun("lease-before"))
        assert s.finished("lease-before")["status"]["phase"] == "Succeeded"
        assert not _leading(second), "two leaders at once"
        holder = s.kubectl("get", "lease", "repack-watcher", "-n", "volcano-system",
                           "-o", "jsonpath={.spec.holderIdentity}")  # fmt: skip
        assert holder and holder in first.log.read_text()
        first.stop(signal.SIGKILL)  # no release: the successor waits out the lease
        wait_for(lambda: _leading(second), 30, why="the second watcher took the Lease over")
        s.apply(_dryrun("lease-after"))
        assert s.finished("lease-after")["status"]["phase"] == "Succeeded"
    finally:
        first.stop()
        second.stop()  # SIGTERM: it stops leading, releases the Lease and exits 0
    assert second.proc is not None and second.proc.returncode == 0, second.tail()
    holder = s.kubectl(
        "get", "lease", "repack-watcher", "-n", "volcano-system", "-o", "jsonpath={.spec.holderIdentity}"
    )
    assert holder == "", f"released on SIGTERM, still held by {holder}"
    leases = [e for e in real_cluster.audit() if e.get("objectRef", {}).get("resource") == "leases"
              and e["user"]["username"] == WATCHER]  # fmt: skip
    assert leases and {e["objectRef"]["namespace"] for e in leases} == {"volcano-system"}
    assert all(e["responseStatus"]["code"] < 400 or e["responseStatus"]["code"] in (404, 409) for e in leases)


def test_pdbs_kept_by_the_disruption_controller_bound_what_an_execute_moves(
    real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path, core: client.CoreV1Api
) -> None:
    s = Scenario(real_cluster, tmp_path, "pdb")
    s.three_jobs("pdb-pool")
    s.apply([{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": job, "namespace": s.ns},
              "spec": {"minAvailable": 2, "selector": {"matchLabels": {"volcano.sh/job-name": job}}}}
             for job in ("train-0", "train-1")])  # fmt: skip

    def kept() -> bool:
        pdbs = s.kubectl(
            "get",
            "pdb",
            "-n",
            s.ns,
            "-o",
            "jsonpath={range .items[*]}{.status.currentHealthy}/{.status.disruptionsAllowed} {end}",
        )
        return pdbs.split() == ["2/0", "2/0"]  # fmt: skip

    wait_for(kept, 60, why="the disruption controller counted both budgets (2 healthy, 0 allowed)")
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction(
            "train-0-worker-0", s.ns, client.V1Eviction(metadata=client.V1ObjectMeta(name="train-0-worker-0"))
        )
    assert refused.value.status == 429 and "disruption budget" in refused.value.body
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log", gate_port=real_cluster.gate_port).start()
    try:
        s.apply(execute_run("pdb-execute", "pdb-pool"))
        status = s.finished("pdb-execute", timeout=180)["status"]
    finally:
        watcher.stop()
    assert status["phase"] == "Succeeded", status
    assert {r["victimPodName"] for r in status["relocations"]} == {"train-2-worker-0", "train-2-worker-1"}
    s.check_evictions(status["relocations"])
    assert s.job_nodes("train-0") == ["pdb-pool-1"] * 2
    assert s.job_nodes("train-1") == ["pdb-pool-2"] * 2


def test_informers_relist_after_a_real_410(real_cluster: RealCluster, kubeconfig: Path, tmp_path: Path) -> None:
    """The watcher is frozen (SIGSTOP), nodes are added, kube-apiserver restarts (its watch cache now
    begins after the watcher's resourceVersions): resumed, its watches get 410 Gone and it relists,
    so the next DryRun sees the nodes added meanwhile."""
    s = Scenario(real_cluster, tmp_path, "default")
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log", gate_port=real_cluster.gate_port).start()
    assert watcher.proc is not None
    try:
        wait_for(lambda: "controller started" in watcher.log.read_text(), 30, why="the watcher started")
        os.kill(watcher.proc.pid, signal.SIGSTOP)
        try:
            s.add_nodes(("relist-1", "relist-2"), pool="relist")
            real_cluster.restart("kube-apiserver")
        finally:
            os.kill(watcher.proc.pid, signal.SIGCONT)
        wait_for(lambda: "watch expired, relisting" in watcher.log.read_text(), 60, why="a 410 relist")
        s.apply(
            _dryrun("relist-dryrun", scope={"nodes": {"include": {"selector": {"matchLabels": {"pool": "relist"}}}}})
        )
        status = s.finished("relist-dryrun", timeout=60)["status"]
    finally:
        watcher.stop()
    assert status["plan"]["summary"]["resolvedScope"]["nodeCount"] == 2, status
