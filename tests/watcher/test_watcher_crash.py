"""Kill the Execute watcher at every step and restart it: the status is the journal.

The happy path is run once with a hook that records the label of every status write and API call;
then, for every position k in that sequence, a fresh cluster runs the same Execute run until the
k-th label, the hook raises (the process "dies" right after that write or call), and a brand-new
reconciler finishes the run, all on the fake cluster port. Each time: no victim was evicted twice
(the fake's audit counts eviction requests, whatever their answer), every relocation is there and
terminal, the run Succeeded with its node freed. Scenarios: the guide's VCJob move with its rebuilt
pods admitted behind the placement gate, a ModelServing ServingGroup rebuilt under a new
PodGroup (no gate), and a targeted run (spec.for) whose waiting job is nominated to the freed node
and followed until it runs (its nominations journaled before they are sent).
"""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.watcher.execute.reconciler import ExecuteOptions, ExecuteReconciler
from sidecar.watcher.kit.port import PODS
from sidecar.watcher.sidecarport import InProcessSidecar
from tests.execute_fixtures import NPU, NS, Box, execute_run, guide_box, waiting_job

NAME = "ascend-execute-001"
PLANNER = InProcessSidecar()
SERVING = {
    "scope": {
        "podGroups": {"include": {"names": [f"{NS}/ascend-online-serving-0"]}},
        "nodes": {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}},
    }
}
TARGETED = {"for": {"job": f"{NS}/whole-node"}}
#: the run's spec changes, and whether rebuilt pods are admitted behind the placement gate
SCENARIOS: dict[str, tuple[dict[str, Any], bool]] = {
    "vcjob-gated": ({}, True),
    "modelserving": (SERVING, False),
    "targeted-gated": (TARGETED, True),
}


def setup(box: Box, spec: dict[str, Any]) -> None:
    """A targeted scenario's waiting job (one 4-NPU worker: the guide's nodes hold 2 + 2 + 2)."""
    if "for" in spec:
        waiting_job(box.cluster, "whole-node", 1, 4)


#: the step sequence must not depend on the machine's speed: placements of a pass are journaled in
#: one batch (flushing by elapsed time would insert steps when the machine is slow)
STEPWISE = ExecuteOptions(flush_seconds=float("inf"))


class Crash(Exception):
    """The watcher process dying right after a step."""


def happy_path(spec: dict[str, Any], gates: bool) -> list[str]:
    labels: list[str] = []
    with guide_box(gates=gates) as box:
        setup(box, spec)
        box.create_run(execute_run(NAME, **spec))
        assert (
            box.drive(ExecuteReconciler(box.cluster, PLANNER, options=STEPWISE, crash=labels.append), NAME)
            == "Succeeded"
        )
    return labels


def check_finished(box: Box, where: str) -> None:
    run = box.run(NAME)
    status = run["status"]
    assert status["phase"] == "Succeeded", where
    planned = [(p["name"]) for m in status["plan"]["moves"] for p in m["pods"]]
    assert sorted(r["victimPodName"] for r in status["relocations"]) == sorted(planned), where
    for r in status["relocations"]:
        assert r["eviction"]["phase"] == "Evicted", where
        assert r["placement"]["phase"] in ("Bound", "BoundElsewhere"), where
        assert r["placement"]["replacementPodUID"] not in ("", r["victimPodUID"]), where
    evictions = box.evictions()
    assert all(n == 1 for n in evictions.values()) and set(evictions) <= set(planned), (where, evictions)
    workload = {n["podName"] for n in (status.get("target") or {}).get("nominations", [])}
    for node in status["plan"]["freedNodes"]:
        pods = [p for p in box.cluster.items(PODS) if p["spec"].get("nodeName") == node]
        requests = [(p["metadata"]["name"], p["spec"]["containers"][0].get("resources", {})) for p in pods]
        holders = [name for name, res in requests if NPU in (res.get("requests") or {})]
        assert set(holders) <= workload, where  # a targeted run's workload lands there
    if "target" in status:
        assert status["target"]["phase"] == "Started", (where, status["target"])
        nominated = {n["podName"]: n["nodeName"] for n in status["target"]["nominations"]}
        for pod, node in nominated.items():
            assert box.pod(pod)["spec"]["nodeName"] == node, where
    assert status["result"]["freedNodes"] == status["plan"]["freedNodes"], where
    assert status["result"]["metricsVerified"] is True, where


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_watcher_killed_after_any_step_resumes_without_double_eviction(scenario: str) -> None:
    spec, gates = SCENARIOS[scenario]
    crash_at_every_step(spec, gates)


def crash_at_every_step(spec: dict[str, Any], gates: bool) -> None:
    happy = happy_path(spec, gates)
    assert gates == any(label.startswith("ungate:") for label in happy)
    assert "status:journal" in happy and any(label.startswith("evict:") for label in happy)
    assert any(label.startswith("nominate:") for label in happy) and happy[-2:][0] == "status:finished"
    for k, label in enumerate(happy):
        where = f"crash after step {k} ({label})"
        with guide_box(gates=gates) as box:
            setup(box, spec)
            box.create_run(execute_run(NAME, **spec))
            seen: list[str] = []

            def hook(step: str, seen: list[str] = seen, k: int = k) -> None:
                seen.append(step)
                if len(seen) == k + 1:
                    raise Crash(step)

            with pytest.raises(Crash):
                box.drive(ExecuteReconciler(box.cluster, PLANNER, options=STEPWISE, crash=hook), NAME)
            assert seen == happy[: k + 1], where
            if (box.run(NAME).get("status") or {}).get("phase") != "Succeeded":
                assert box.drive(ExecuteReconciler(box.cluster, PLANNER, options=STEPWISE), NAME) == "Succeeded", where
            check_finished(box, where)


def test_each_eviction_is_journaled_as_it_returns() -> None:
    """A crash between two eviction calls leaves the first recorded Evicted with its attempt, not
    Pending with none (issue 25 item 6)."""
    happy = happy_path({}, True)
    evicts = [label for label in happy if label.startswith("evict:")]
    assert len(evicts) == 2 and happy[happy.index(evicts[0]) + 1] == "status:evictions"

    def crash(label: str) -> None:
        if label == evicts[1]:
            raise Crash(label)

    with guide_box(gates=True) as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.cluster, PLANNER, options=STEPWISE, crash=crash)
        with pytest.raises(Crash):
            box.drive(rec, NAME)
        first = evicts[0].removeprefix("evict:")
        (rel,) = [
            r for r in box.run(NAME)["status"]["relocations"] if f"{r['namespace']}/{r['victimPodName']}" == first
        ]
        assert (rel["eviction"]["phase"], rel["eviction"]["attempts"]) == ("Evicted", 1), rel
        box.drive(ExecuteReconciler(box.cluster, PLANNER, options=STEPWISE), NAME)
        check_finished(box, "after a crash between two evictions")
