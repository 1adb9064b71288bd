"""The placement gate on the real control plane: kube-apiserver calls the watcher's webhook over
HTTPS (the shipped configuration, its clientConfig a loopback URL, its caBundle injected by the
watcher from the Secret it issued), and Volcano's vc-scheduler skips gated pods.

* an Execute frees what it planned: each rebuilt pod created gated, nominated, released, bound on
  the selected node; a new workload's pods pass untouched;
* a watcher dies while a rebuilt pod is gated: the next leader resumes the run (nominates and
  releases it), or — the run deleted meanwhile — lifts the gate (nothing claims the pod);
* the webhook is down: pods are created ungated (failurePolicy Ignore, the API server's
  ``failed-open`` audit annotation) and the run's journal says where each pod went.

Each case has its own namespace and three KWOK nodes (pool ``gate-<case>``) holding three two-worker
VCJobs, one per node (2 + 2 + 2 of 4 NPUs: one node is freed by moving one job).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from realcluster.launcher import RealCluster
from tests.realcluster.fixtures import Watcher, wait_for
from tests.realcluster.scenario import WATCHER, Scenario, execute_run, vcjob

pytestmark = pytest.mark.realcluster
GATE = "repack.volcano.sh/placement"


def _setup(cluster: RealCluster, tmp: Path, case: str) -> tuple[Scenario, Path]:
    s = Scenario(cluster, tmp, f"gate-{case}")
    s.install()
    s.three_jobs(f"gate-{case}")
    return s, cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp / "watcher.kc")


def _pod(s: Scenario, name: str) -> dict[str, Any] | None:
    found = [p for p in s.pods() if p["metadata"]["name"] == name]
    return found[0] if found else None


def _gates(pod: dict[str, Any] | None) -> list[str]:
    return [g["name"] for g in ((pod or {}).get("spec") or {}).get("schedulingGates") or []]


def _placements(status: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return sorted((r["victimPodName"], r["placement"]["phase"], r["plannedNodeName"],
                   r["placement"].get("selectedNodeName", ""), r["placement"].get("actualNodeName", ""))
                  for r in status["relocations"])  # fmt: skip


def test_an_execute_frees_what_it_planned_and_new_pods_pass_untouched(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    s, kubeconfig = _setup(real_cluster, tmp_path, "planned")
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log", gate_port=real_cluster.gate_port).start()
    try:
        s.apply(execute_run("gate-execute", "gate-planned"))
        status = s.finished("gate-execute", timeout=180)["status"]
        true = [(c["type"], c["reason"]) for c in status["conditions"] if c["status"] == "True"]
        assert status["phase"] == "Succeeded" and ("Complete", "ExecutionCompleted") in true, json.dumps(status)
        placements = _placements(status)
        assert len(placements) == 2 and all(p[1] == "Bound" and p[2] == p[3] == p[4] for p in placements), placements
        freed = status["result"]["freedNodes"]
        assert freed == status["plan"]["freedNodes"] and len(freed) == 1, status["result"]
        # both rebuilt pods were created behind the gate: kube-apiserver asked the webhook over HTTPS
        gated = s.gated()
        assert {p[0]: gated.get(p[0]) for p in placements} == {p[0]: "gated" for p in placements}, gated
        s.check_evictions(status["relocations"])
        # a new workload while nothing is relocating: its pods are sent to the webhook (they carry the
        # Volcano Job label) and created as they are, then bound by vc-scheduler
        s.apply(vcjob(s.ns, "newcomer", "gate-planned"))
        wait_for(lambda: len(s.job_nodes("newcomer")) == 2, 60, why="the newcomer's pods Running")
    finally:
        watcher.stop()
    gated = s.gated()
    assert {n: g for n, g in gated.items() if n.startswith("newcomer-")} == {
        "newcomer-worker-0": "as is",
        "newcomer-worker-1": "as is",
    }, gated
    assert all(not _gates(_pod(s, f"newcomer-worker-{i}")) for i in (0, 1))
    assert "placement gate webhook" in watcher.log.read_text()


def _evicted_after(s: Scenario, offset: int) -> tuple[int, list[str]]:
    """Pods of ``s``'s namespace the watcher evicted since byte ``offset`` of the audit log, and the new offset."""
    with s.cluster.audit_log.open("rb") as log:
        log.seek(offset)
        data = log.read()
    complete = data[: data.rfind(b"\n") + 1]
    names = [e["objectRef"]["name"] for e in map(json.loads, complete.splitlines())
             if e.get("objectRef", {}).get("subresource") == "eviction" and e["objectRef"].get("namespace") == s.ns
             and e["user"]["username"] == WATCHER and e["responseStatus"]["code"] == 201]  # fmt: skip
    return offset + len(complete), names


@pytest.mark.parametrize("case", ["resumed", "run-deleted"])
def test_a_pod_gated_while_no_watcher_leads_is_released_by_the_next_leader(
    case: str, real_cluster: RealCluster, tmp_path: Path
) -> None:
    """The leader (serving no webhook: one loopback port per machine) is SIGKILLed as soon as its
    first eviction is answered — possibly between two evictions. A standby serves the webhook, so
    the rebuilt pod is created gated while nobody leads (the dead leader's Lease runs out first).
    Once the standby leads it resumes the run — evicting what is left, nominating, releasing, each
    pod bound where planned (``resumed``) — or, the run deleted meanwhile, lifts the gates nothing
    claims (``run-deleted``)."""
    s, kubeconfig = _setup(real_cluster, tmp_path, case)
    run = f"gate-{case}"
    first = Watcher(kubeconfig, tmp_path / "first.log").start()
    second = Watcher(kubeconfig, tmp_path / "second.log", gate_port=real_cluster.gate_port)
    try:
        wait_for(lambda: _leading(first), 30, why="the first watcher leads")
        second.start()
        wait_for(lambda: "placement gate webhook" in second.log.read_text(), 30, why="the standby serves the webhook")
        offset = real_cluster.audit_log.stat().st_size
        s.apply(execute_run(run, f"gate-{case}"))
        evicted: list[str] = []
        deadline = time.monotonic() + 60
        while not evicted and time.monotonic() < deadline:
            offset, evicted = _evicted_after(s, offset)
        first.stop(signal.SIGKILL)  # its Lease stays held until it expires (15 s)
        assert evicted, "the leader evicted nothing within 60 s"

        def rebuilt_gated() -> list[str]:
            pods = {v: _pod(s, v) for v in evicted}
            return [v for v, p in pods.items() if p is not None and GATE in _gates(p) and not p["spec"].get("nodeName")]

        gated = wait_for(rebuilt_gated, 30, why="a rebuilt victim created behind the gate")
        assert not _leading(second), "the standby led too early for this test"
        if case == "run-deleted":
            s.kubectl("delete", "repackrun", run)
        wait_for(lambda: _leading(second), 60, why="the standby took the Lease over")
        led = time.monotonic()
        wait_for(lambda: all(not _gates(_pod(s, v)) for v in gated), 60, why="the gates lifted")
        assert time.monotonic() - led < 60, "a gate outlived --gate-timeout after a leader came"
        wait_for(lambda: all((_pod(s, v) or {}).get("spec", {}).get("nodeName") for v in gated), 60,
                 why="vc-scheduler bound the released pods")  # fmt: skip
        if case == "resumed":
            status = s.finished(run, timeout=120)["status"]
            assert status["phase"] == "Succeeded", json.dumps(status)
            for victim, phase, planned, selected, actual in _placements(status):
                assert phase == "Bound" and planned == selected == actual, (victim, phase, planned, selected, actual)
            s.check_evictions(status["relocations"])  # none evicted twice across the two leaders
        else:
            lifted = [json.loads(line) for line in second.log.read_text().splitlines() if '"placement gate"' in line]
            why = {e["pod"]: e.get("why") for e in lifted if e.get("action") == "lifted"}
            assert why == {f"{s.ns}/{v}": "no unfinished Execute relocation claims it" for v in gated}, lifted
    finally:
        first.stop()
        second.stop()


def _leading(w: Watcher) -> bool:
    return '"event": "leading"' in w.log.read_text(errors="replace")


def test_with_the_webhook_down_pods_are_created_ungated_and_the_run_reports_it(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    """The configuration is installed but no watcher serves it: kube-apiserver fails open
    (failurePolicy Ignore), the rebuilt pods race vc-scheduler, and the run's journal and result say
    where each went (Bound on the planned node, or BoundElsewhere; the reason follows)."""
    s, kubeconfig = _setup(real_cluster, tmp_path, "down")
    watcher = Watcher(kubeconfig, tmp_path / "watcher.log").start()  # no --webhook-port
    try:
        s.apply(execute_run("gate-down", "gate-down"))
        status = s.finished("gate-down", timeout=180)["status"]
    finally:
        watcher.stop()
    victims = [r["victimPodName"] for r in status["relocations"]]
    notes = s.gated()
    for victim in victims:
        assert notes.get(victim) == "failed open: vcjob.placement.repack.volcano.sh", notes
    true = {(c["type"], c["reason"]) for c in status["conditions"] if c["status"] == "True"}
    placements = _placements(status)
    for _victim, phase, planned, selected, actual in placements:
        assert phase == ("Bound" if actual == (selected or planned) else "BoundElsewhere"), placements
    elsewhere = [p for p in placements if p[1] == "BoundElsewhere"]
    freed = set(status["result"]["freedNodes"]) == set(status["plan"]["freedNodes"])
    if not elsewhere:
        assert true >= {("Complete", "ExecutionCompleted")}, (true, placements)
    elif freed:
        assert ("Complete", "ExecutionCompletedWithAlternativePlacement") in true, (true, placements)
    else:
        assert ("Failed", "PartiallyCompleted") in true and status["phase"] == "Failed", (true, placements)
    s.check_evictions(status["relocations"])
