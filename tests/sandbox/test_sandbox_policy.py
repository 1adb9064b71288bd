"""PDB semantics of the sandbox, table by table against upstream Kubernetes:
* verdicts: pkg/registry/core/pod/storage/eviction.go (Create, canIgnorePDB, checkAndDecrement,
  getPodDisruptionBudgets)
* status: pkg/controller/disruption/disruption.go (getExpectedPodCount, buildDisruptedPodMap,
  countHealthyPods, updatePdbStatus); condition: component-helpers apps/poddisruptionbudget/helpers.go
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.sandbox.policy import (
    MULTIPLE,
    VIOLATION,
    decide_eviction,
    eviction_allowed,
    pdb_status,
    record_eviction,
    scaled_value,
    selector_matches,
)

NOW = datetime(2026, 7, 30, 12, 0, tzinfo=timezone.utc)


def pod(
    name: str,
    *,
    ready: bool = True,
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    ctrl: str = "rs-1",
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": "a"} if labels is None else labels}
    if ctrl:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": ctrl, "uid": ctrl, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-07-30T11:59:00Z"
    return {
        "metadata": meta,
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pdb(
    name: str = "budget", selector: dict[str, Any] | None = None, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "a"}} if selector is None else selector, **spec},
    }
    out["status"] = {
        "observedGeneration": 1,
        "disruptionsAllowed": 1,
        "currentHealthy": 3,
        "desiredHealthy": 2,
        **(status or {}),
    }
    return out


@pytest.mark.parametrize(
    ("subject", "budgets", "code", "message"),
    [
        (pod("p"), [], 201, ""),
        (pod("p"), [pdb()], 201, ""),
        (pod("p"), [pdb(status={"disruptionsAllowed": 0})], 429, VIOLATION),
        (pod("p"), [pdb(), pdb("second")], 500, MULTIPLE),
        (pod("p", phase="Pending"), [pdb(status={"disruptionsAllowed": 0})], 201, ""),  # canIgnorePDB
        (pod("p", phase="Succeeded"), [pdb(status={"disruptionsAllowed": 0})], 201, ""),
        (pod("p", phase="Failed"), [pdb(), pdb("second")], 201, ""),
        (pod("p", deleting=True), [pdb(status={"disruptionsAllowed": 0})], 201, ""),
        # unready pod, IfHealthyBudget (default): allowed while the budget is met, without consuming it
        (
            pod("p", ready=False),
            [pdb(status={"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2})],
            201,
            "",
        ),
        (
            pod("p", ready=False),
            [pdb(status={"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2})],
            429,
            VIOLATION,
        ),
        (
            pod("p", ready=False),
            [
                pdb(
                    status={"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2},
                    unhealthyPodEvictionPolicy="AlwaysAllow",
                )
            ],
            201,
            "",
        ),
        (pod("p"), [pdb(status={"disruptionsAllowed": 0}, unhealthyPodEvictionPolicy="AlwaysAllow")], 429, VIOLATION),
        # selector: other labels, other namespace, and the empty selector the Eviction API skips
        (pod("p", labels={"app": "b"}), [pdb(status={"disruptionsAllowed": 0})], 201, ""),
        (pod("p"), [pdb(selector={}, status={"disruptionsAllowed": 0})], 201, ""),
        (
            pod("p"),
            [{**pdb(status={"disruptionsAllowed": 0}), "metadata": {"name": "x", "namespace": "other"}}],
            201,
            "",
        ),
        # the controller has not seen the latest spec yet
        (pod("p"), [pdb(status={"observedGeneration": 0})], 429, VIOLATION),
        (
            pod("p"),
            [pdb(status={"disruptionsAllowed": -1})],
            403,
            'poddisruptionbudgets.policy "budget" is forbidden: pdb disruptions allowed is negative',
        ),
    ],
)
def test_eviction_verdicts(subject: dict[str, Any], budgets: list[dict[str, Any]], code: int, message: str) -> None:
    verdict = decide_eviction(subject, budgets)
    assert (verdict.code, verdict.message) == (code, message)
    assert eviction_allowed(subject, budgets) == (code == 201, message)


def test_refusal_cause_names_the_budget() -> None:
    verdict = decide_eviction(pod("p"), [pdb(status={"disruptionsAllowed": 0})])
    assert verdict.causes == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget budget needs 2 healthy pods and has 3 currently",
        }
    ]
    assert decide_eviction(pod("p"), [pdb()]).pdb == "budget"
    assert decide_eviction(pod("p", ready=False), [pdb(status={"currentHealthy": 2})]).precondition


def test_record_eviction_consumes_the_budget_and_blocks_the_next() -> None:
    budget = record_eviction(pdb(), "p", NOW)
    assert budget["status"]["disruptionsAllowed"] == 0
    assert budget["status"]["disruptedPods"] == {"p": "2026-07-30T12:00:00Z"}
    assert budget["status"]["conditions"][0]["reason"] == "InsufficientPods"
    assert decide_eviction(pod("q"), [budget]).code == 429


@pytest.mark.parametrize(
    ("spec", "pods", "expected", "desired", "healthy", "allowed"),
    [
        ({"minAvailable": 2}, [pod(f"p{i}") for i in range(3)], 3, 2, 3, 1),
        ({"minAvailable": 3}, [pod(f"p{i}") for i in range(3)], 3, 3, 3, 0),
        ({"minAvailable": "50%"}, [pod(f"p{i}") for i in range(3)], 3, 2, 3, 1),  # ceil(1.5)
        ({"maxUnavailable": 1}, [pod(f"p{i}") for i in range(3)], 3, 2, 3, 1),
        ({"maxUnavailable": "34%"}, [pod(f"p{i}") for i in range(3)], 3, 1, 3, 2),  # ceil(1.02) = 2 unavailable
        ({"maxUnavailable": 1}, [pod("p0"), pod("p1", ready=False), pod("p2")], 3, 2, 2, 0),
        ({"maxUnavailable": 1}, [pod("p0"), pod("p1", deleting=True), pod("p2")], 3, 2, 2, 0),
        ({"maxUnavailable": 1}, [pod(f"p{i}", ctrl="") for i in range(3)], 0, 0, 3, 0),  # unmanaged pods: expected 0
        ({"minAvailable": 1}, [], 0, 1, 0, 0),
        ({"minAvailable": "x"}, [pod("p0")], 0, 0, 1, 0),  # unreadable spec: fail safe
    ],
)
def test_pdb_status(
    spec: dict[str, Any], pods: list[dict[str, Any]], expected: int, desired: int, healthy: int, allowed: int
) -> None:
    budget = pdb(**spec)
    status = pdb_status(budget, pods, NOW)
    got = (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"], status["disruptionsAllowed"])
    assert got == (expected, desired, healthy, allowed)
    assert status["observedGeneration"] == 1
    cond = status["conditions"][0]
    assert (cond["type"], cond["status"]) == ("DisruptionAllowed", "True" if allowed else "False")


def test_null_selector_selects_nothing_and_empty_selects_the_namespace() -> None:
    pods = [pod("p0", labels={}), pod("p1", labels={"x": "y"})]
    none = pdb(minAvailable=0)
    none["spec"]["selector"] = None
    assert pdb_status(none, pods, NOW)["currentHealthy"] == 0
    assert pdb_status(pdb(selector={}, minAvailable=0), pods, NOW)["currentHealthy"] == 2


def test_disrupted_pods_stay_unhealthy_for_the_deletion_timeout() -> None:
    pods = [pod(f"p{i}") for i in range(3)]
    recent = pdb(minAvailable=1, status={"disruptedPods": {"p0": "2026-07-30T11:59:00Z"}})
    status = pdb_status(recent, pods, NOW)
    assert (status["currentHealthy"], status["disruptedPods"]) == (2, {"p0": "2026-07-30T11:59:00Z"})
    status = pdb_status(recent, pods, NOW + timedelta(minutes=5))
    assert (status["currentHealthy"], status["disruptedPods"]) == (3, {})


def test_scales_override_counted_pods() -> None:
    """A controller whose pod was evicted still expects its full scale."""
    status = pdb_status(pdb(maxUnavailable=1), [pod("p0"), pod("p1")], NOW, scales={"rs-1": 3})
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 2, 0)


@pytest.mark.parametrize(
    ("selector", "labels", "ok"),
    [
        (None, {"a": "1"}, False),
        ({}, {}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, {"a": "2"}, False),
    ],
)
def test_selector(selector: dict[str, Any] | None, labels: dict[str, str], ok: bool) -> None:
    assert selector_matches(selector, labels) is ok


@given(st.integers(0, 100), st.integers(0, 500))
def test_percentages_round_up(percent: int, total: int) -> None:
    got = scaled_value(f"{percent}%", total)
    assert got * 100 >= percent * total > (got - 1) * 100 or got == 0 == percent * total
