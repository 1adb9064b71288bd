"""The Eviction API's verdict on one pod, from the PodDisruptionBudgets of its namespace.

As kubernetes pkg/registry/core/pod/storage/eviction.go decides it (v1.34), minus what needs a
live disruption controller: the budget's ``status.disruptionsAllowed`` is taken as written (on the
real control plane kube-controller-manager keeps it; here a test or ``objects_from_snapshot``
writes it), and each approved eviction charges it (checkAndDecrement). Kept: a pod that is
Pending, Succeeded, Failed or already terminating goes without looking at any budget
(canIgnorePDB); a budget with an empty selector guards nothing; two budgets on one pod answer 500.
Selectors are matched by the mirror's own ``label_selector_matches`` (one rule for both).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.mirror.selectors import label_selector_matches

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


@dataclass(frozen=True)
class EvictionVerdict:
    """201 when the pod may go (``pdb``: the budget to charge), else the refusal's code and message."""

    code: int
    message: str = ""
    reason: str = ""
    pdb: Obj | None = None


def selects(pdb: Obj, labels: dict[str, str]) -> bool:
    """Does the budget guard a pod with ``labels``? A null or empty selector guards none."""
    raw = (pdb.get("spec") or {}).get("selector")
    if not raw or not (raw.get("matchLabels") or raw.get("matchExpressions")):
        return False  # the Eviction API ignores a budget whose selector is null or empty
    selector = json_format.ParseDict(raw, pb.LabelSelector(), ignore_unknown_fields=True)
    return label_selector_matches(selector, labels)


def decide(pod: Obj, pdbs: list[Obj]) -> EvictionVerdict:
    """The answer to evicting ``pod`` given its namespace's budgets."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in ("Pending", "Succeeded", "Failed") or meta.get("deletionTimestamp"):
        return EvictionVerdict(201)
    guarding = [p for p in pdbs if selects(p, meta.get("labels") or {})]
    if len(guarding) > 1:
        return EvictionVerdict(500, MULTIPLE, "InternalError")
    if not guarding:
        return EvictionVerdict(201)
    pdb = guarding[0]
    status = pdb.get("status") or {}
    if int(status.get("disruptionsAllowed") or 0) <= 0:
        name = pdb["metadata"]["name"]
        need, have = status.get("desiredHealthy", 0), status.get("currentHealthy", 0)
        why = f"The disruption budget {name} needs {need} healthy pods and has {have} currently"
        return EvictionVerdict(429, f"{VIOLATION} {why}", "TooManyRequests")
    return EvictionVerdict(201, pdb=pdb)


def charged(pdb: Obj, pod_name: str, at: str) -> Obj:
    """The budget after an approved eviction: one disruption fewer, the pod in disruptedPods."""
    out = copy.deepcopy(pdb)
    status = out.setdefault("status", {})
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
    status.setdefault("disruptedPods", {})[pod_name] = at
    return out
