"""policy/v1 PodDisruptionBudgets: the Eviction subresource's verdict and the disruption
controller's status, so the sandbox answers an eviction exactly when a real cluster would.

Rules follow kubernetes pkg/registry/core/pod/storage/eviction.go (the verdict),
pkg/controller/disruption/disruption.go (the status) and component-helpers
apps/poddisruptionbudget/helpers.go (the DisruptionAllowed condition). unhealthyPodEvictionPolicy
is GA (1.31), so it is always honoured.

Two upstream quirks are kept on purpose: the Eviction API ignores a PDB whose selector is empty
(``{}``) although the controller counts every pod of the namespace for it; and a pod that is
Pending, Succeeded, Failed or already terminating is evicted without looking at any PDB.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

#: how long an approved eviction keeps a pod out of currentHealthy (disruption.go DeletionTimeout)
DELETION_TIMEOUT = timedelta(minutes=2)
#: eviction.go MaxDisruptedPodSize
MAX_DISRUPTED_PODS = 2000
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


@dataclass(frozen=True)
class Eviction:
    """The verdict on one eviction request.

    ``code`` is the HTTP status (201 when the pod may go), ``causes`` the metav1.StatusCauses of a
    refusal, ``pdb`` the PDB whose status the server must update with :func:`record_eviction`
    (None when no budget is consumed), and ``precondition`` asks the server to delete with the
    pod's resourceVersion as precondition (eviction.go's unready-pod path: 429 on conflict).
    """

    allowed: bool
    code: int
    message: str
    causes: list[dict[str, str]] = field(default_factory=list)
    pdb: str | None = None
    precondition: bool = False


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rfc3339(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): null matches nothing, {} everything,
    an invalid selector (unknown operator, In without values) nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        op, key, values = req.get("operator"), req.get("key", ""), req.get("values") or []
        if (op in ("In", "NotIn") and not values) or (op in ("Exists", "DoesNotExist") and values):
            return False
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _empty(selector: dict[str, Any] | None) -> bool:
    return selector is None or not (selector.get("matchLabels") or selector.get("matchExpressions"))


def is_ready(pod: dict[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def guarding_pdbs(pod: dict[str, Any], pdbs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The PDBs the Eviction API checks for ``pod`` (getPodDisruptionBudgets: same namespace,
    selector non-empty and matching)."""
    meta = pod.get("metadata") or {}
    out = []
    for pdb in pdbs:
        selector = (pdb.get("spec") or {}).get("selector")
        if (pdb.get("metadata") or {}).get("namespace") != meta.get("namespace") or _empty(selector):
            continue
        if selector_matches(selector, meta.get("labels") or {}):
            out.append(pdb)
    return out


def decide_eviction(pod: dict[str, Any], pdbs: list[dict[str, Any]]) -> Eviction:
    """The Eviction subresource's answer for ``pod`` given the namespace's PDBs."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed", "Pending") or _terminating(pod):
        return Eviction(True, 201, "")  # canIgnorePDB
    matching = guarding_pdbs(pod, pdbs)
    if len(matching) > 1:
        return Eviction(False, 500, MULTIPLE)
    if not matching:
        return Eviction(True, 201, "")
    pdb = matching[0]
    name = (pdb.get("metadata") or {}).get("name", "")
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    current, desired = int(status.get("currentHealthy", 0)), int(status.get("desiredHealthy", 0))
    budget_met = current >= desired and desired > 0
    if not is_ready(pod) and (spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or budget_met):
        return Eviction(True, 201, "", precondition=True)
    if int(status.get("observedGeneration", 0)) < int((pdb.get("metadata") or {}).get("generation", 0)):
        cause = {
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} is still being processed by the server.",
        }
        return Eviction(False, 429, VIOLATION, [cause])
    allowed = int(status.get("disruptionsAllowed", 0))
    if allowed < 0:
        return Eviction(
            False, 403, f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is negative'
        )
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        msg = "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        return Eviction(False, 403, f'poddisruptionbudgets.policy "{name}" is forbidden: {msg}')
    if allowed == 0:
        cause = {
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} needs {desired} healthy pods and has {current} currently",
        }
        return Eviction(False, 429, VIOLATION, [cause])
    return Eviction(True, 201, "", pdb=name)


def eviction_allowed(pod: dict[str, Any], pdbs: list[dict[str, Any]]) -> tuple[bool, str]:
    """(allowed, message); a refusal's code is in :func:`decide_eviction` (429, 500 or 403)."""
    verdict = decide_eviction(pod, pdbs)
    return verdict.allowed, verdict.message


def record_eviction(pdb: dict[str, Any], pod_name: str, now: datetime | None = None) -> dict[str, Any]:
    """The PDB after an approved eviction (checkAndDecrement): one disruption fewer, the pod in
    disruptedPods so the controller stops counting it as healthy."""
    out = copy.deepcopy(pdb)
    status = out.setdefault("status", {})
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed", 0)) - 1
    if status["disruptionsAllowed"] == 0:
        _set_condition(status, _now(now))
    status.setdefault("disruptedPods", {})[pod_name] = _rfc3339(_now(now))
    return out


def _set_condition(status: dict[str, Any], now: datetime) -> None:
    """UpdateDisruptionAllowedCondition via apimeta.SetStatusCondition (time moves on a flip only)."""
    ok = int(status.get("disruptionsAllowed", 0)) > 0
    want = {
        "type": "DisruptionAllowed",
        "status": "True" if ok else "False",
        "reason": "SufficientPods" if ok else "InsufficientPods",
        "message": "",
        "observedGeneration": int(status.get("observedGeneration", 0)),
    }
    conds = status.setdefault("conditions", [])
    for cond in conds:
        if cond.get("type") == "DisruptionAllowed":
            if cond.get("status") != want["status"]:
                cond["lastTransitionTime"] = _rfc3339(now)
            cond.update({k: v for k, v in want.items() if k != "type"})
            return
    conds.append({**want, "lastTransitionTime": _rfc3339(now)})


def scaled_value(value: int | str, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)."""
    if isinstance(value, int):
        return value
    if not value.endswith("%") or not value[:-1].lstrip("-").isdigit():
        raise ValueError(f"invalid value for IntOrString: invalid value {value!r}")
    return math.ceil(int(value[:-1]) * total / 100)


def _controller(pod: dict[str, Any]) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or f"{ref.get('kind')}/{ref.get('name')}")
    return None


def pdb_status(
    pdb: dict[str, Any],
    pods: list[dict[str, Any]],
    now: datetime | None = None,
    scales: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The status the disruption controller writes for ``pdb`` (trySync) from the namespace's pods.

    Expected pods (for maxUnavailable and percentage minAvailable) are the controllers' scale: pass
    ``scales`` (controller uid -> replicas) when the sandbox knows them; a controller not listed
    counts its matching pods. Pods without a controller are unmanaged and not expected (as upstream).
    """
    when = _now(now)
    meta, spec = pdb.get("metadata") or {}, pdb.get("spec") or {}
    old = pdb.get("status") or {}
    selector = spec.get("selector")
    selected = [
        p
        for p in pods
        if (p.get("metadata") or {}).get("namespace") == meta.get("namespace")
        and selector_matches(selector, (p.get("metadata") or {}).get("labels") or {})
    ]
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    expected, desired = 0, 0
    try:
        if max_unavailable is not None or isinstance(min_available, str):
            counts: dict[str, int] = {}
            for p in selected:
                ctrl = _controller(p)
                if ctrl is not None:
                    counts[ctrl] = counts.get(ctrl, 0) + 1
            expected = sum((scales or {}).get(c, n) for c, n in counts.items())
        if max_unavailable is not None:
            desired = max(0, expected - scaled_value(max_unavailable, expected))
        elif isinstance(min_available, int):
            desired, expected = min_available, len(selected)
        elif isinstance(min_available, str):
            desired = scaled_value(min_available, expected)
    except ValueError:
        expected, desired = 0, 0  # failSafe: no disruptions while the spec cannot be read
    disrupted: dict[str, str] = {}
    for p in selected:
        name = (p.get("metadata") or {}).get("name", "")
        since = (old.get("disruptedPods") or {}).get(name)
        if since and not _terminating(p) and _time(since) + DELETION_TIMEOUT >= when:
            disrupted[name] = since
    healthy = sum(
        1
        for p in selected
        if not _terminating(p) and (p.get("metadata") or {}).get("name") not in disrupted and is_ready(p)
    )
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status = {
        "observedGeneration": int(meta.get("generation", 0)),
        "disruptedPods": disrupted,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": copy.deepcopy(old.get("conditions") or []),
    }
    _set_condition(status, when)
    return status
