"""Kill the Execute watcher at every step and restart it: the status is the journal.

The happy path is run once with a hook that records the label of every status write and API call;
then, for every position k in that sequence, a fresh cluster runs the same Execute run until the
k-th label, the hook raises (the process "dies" right after that write or call), and a brand-new
reconciler finishes the run. Each time: no victim was evicted twice (the API server's audit log
counts eviction requests, whatever their answer), every relocation is there and terminal, the run
Succeeded with its node freed. Scenarios: the guide's VCJob move, and a ModelServing ServingGroup
rebuilt under a new PodGroup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.watcher.execute import ExecuteOptions, ExecuteReconciler
from sidecar.watcher.placement import PLACEMENT_GATE
from sidecar.watcher.planner import InProcessPlanner
from tests.execute_fixtures import NPU, NS, Sandbox, execute_run, sandbox

NAME = "ascend-execute-001"
PLANNER = InProcessPlanner()
SERVING = {
    "scope": {
        "podGroups": {"include": {"names": [f"{NS}/ascend-online-serving-0"]}},
        "nodes": {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}},
    }
}
#: the run's spec changes, and the scheduling gates rebuilt pods are created with
SCENARIOS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "vcjob-gated": ({}, (PLACEMENT_GATE,)),
    "modelserving": (SERVING, ()),
}


#: the step sequence must not depend on the machine's speed: placements of a pass are journaled in
#: one batch (flushing by elapsed time would insert steps when the machine is slow)
STEPWISE = ExecuteOptions(flush_seconds=float("inf"))


class Crash(Exception):
    """The watcher process dying right after a step."""


def happy_path(path: Path, spec: dict[str, Any], gates: tuple[str, ...]) -> list[str]:
    labels: list[str] = []
    with sandbox(path, gates=gates) as box:
        box.create_run(execute_run(NAME, **spec))
        assert (
            box.drive(ExecuteReconciler(box.api, PLANNER, options=STEPWISE, crash=labels.append), NAME) == "Succeeded"
        )
    return labels


def check_finished(box: Sandbox, where: str) -> None:
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
    for node in status["plan"]["freedNodes"]:
        pods = box.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        assert not [p.metadata.name for p in pods if NPU in (p.spec.containers[0].resources.requests or {})], where
    assert status["result"]["freedNodes"] == status["plan"]["freedNodes"], where
    assert status["result"]["metricsVerified"] is True, where


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_watcher_killed_after_any_step_resumes_without_double_eviction(tmp_path: Path, scenario: str) -> None:
    spec, gates = SCENARIOS[scenario]
    crash_at_every_step(tmp_path, spec, gates)


def crash_at_every_step(tmp_path: Path, spec: dict[str, Any], gates: tuple[str, ...]) -> None:
    happy = happy_path(tmp_path / "happy", spec, gates)
    assert bool(gates) == any(label.startswith("ungate:") for label in happy)
    assert "status:journal" in happy and any(label.startswith("evict:") for label in happy)
    assert any(label.startswith("nominate:") for label in happy) and happy[-2:][0] == "status:finished"
    for k, label in enumerate(happy):
        where = f"crash after step {k} ({label})"
        with sandbox(tmp_path / str(k), gates=gates) as box:
            box.create_run(execute_run(NAME, **spec))
            seen: list[str] = []

            def hook(step: str, seen: list[str] = seen, k: int = k) -> None:
                seen.append(step)
                if len(seen) == k + 1:
                    raise Crash(step)

            with pytest.raises(Crash):
                box.drive(ExecuteReconciler(box.api, PLANNER, options=STEPWISE, crash=hook), NAME)
            assert seen == happy[: k + 1], where
            if box.run(NAME)["status"].get("phase") != "Succeeded":
                assert box.drive(ExecuteReconciler(box.api, PLANNER, options=STEPWISE), NAME) == "Succeeded", where
            check_finished(box, where)


def test_each_eviction_is_journaled_as_it_returns(tmp_path: Path) -> None:
    """A crash between two eviction calls leaves the first recorded Evicted with its attempt, not
    Pending with none (issue 25 item 6)."""
    happy = happy_path(tmp_path / "happy", {}, (PLACEMENT_GATE,))
    evicts = [label for label in happy if label.startswith("evict:")]
    assert len(evicts) == 2 and happy[happy.index(evicts[0]) + 1] == "status:evictions"

    def crash(label: str) -> None:
        if label == evicts[1]:
            raise Crash(label)

    with sandbox(tmp_path / "crash", gates=(PLACEMENT_GATE,)) as box:
        box.create_run(execute_run(NAME))
        rec = ExecuteReconciler(box.api, PLANNER, options=STEPWISE, crash=crash)
        with pytest.raises(Crash):
            box.drive(rec, NAME)
        first = evicts[0].removeprefix("evict:")
        (rel,) = [
            r for r in box.run(NAME)["status"]["relocations"] if f"{r['namespace']}/{r['victimPodName']}" == first
        ]
        assert (rel["eviction"]["phase"], rel["eviction"]["attempts"]) == ("Evicted", 1), rel
        box.drive(ExecuteReconciler(box.api, PLANNER, options=STEPWISE), NAME)
        check_finished(box, "after a crash between two evictions")
