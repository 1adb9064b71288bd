"""A RepackPolicy's runs: which RepackRuns are its own, the run a trigger creates, and the history
it keeps.

A run belongs to the policy through its controller ownerReference (the policy's UID, so a policy
recreated under the same name does not adopt its predecessor's runs; Kubernetes' garbage collector
deletes them with the policy) and carries the label ``repack.volcano.sh/policy`` for kubectl.
Its name is the trigger's, deterministic as a CronJob's Job: ``<policy>-<minutes since the
epoch>`` for a scheduled time, ``<policy>-p<hash of the PodGroup's UID>-<attempt>`` for a waiting
PodGroup — so a create repeated after a restart meets AlreadyExists instead of a second run.
"""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime

from sidecar.api.repackrun import Phase
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.controller import unfinished
from sidecar.watcher.kit.port import REPACKPOLICIES
from sidecar.watcher.kit.status import phase_of, rfc3339

POLICY_LABEL = "repack.volcano.sh/policy"
TRIGGER_LABEL = "repack.volcano.sh/trigger"
SCHEDULED_ANNOTATION = "repack.volcano.sh/scheduled-at"
POD_GROUP_ANNOTATION = "repack.volcano.sh/pod-group"
SCHEDULE, PENDING = "Schedule", "Pending"


def owned(policy: Obj, runs: list[Obj]) -> list[Obj]:
    """The runs whose controller is ``policy`` (by UID)."""
    uid = policy["metadata"].get("uid")
    return [
        r
        for r in runs
        if any(
            ref.get("controller") and ref.get("uid") == uid and ref.get("kind") == REPACKPOLICIES.kind
            for ref in (r.get("metadata") or {}).get("ownerReferences") or []
        )
    ]


def owner_of(run: Obj) -> str:
    """The name of the policy that controls ``run`` ("" for a run made by hand)."""
    refs = (run.get("metadata") or {}).get("ownerReferences") or []
    return next((str(r.get("name")) for r in refs if r.get("controller") and r.get("kind") == REPACKPOLICIES.kind), "")


def active(runs: list[Obj]) -> list[Obj]:
    return [r for r in runs if unfinished(r)]


def finished_order(runs: list[Obj]) -> list[Obj]:
    """Finished runs, newest last (by completionTime, then name)."""
    done = [r for r in runs if not unfinished(r)]
    return sorted(done, key=lambda r: (str((r.get("status") or {}).get("completionTime") or ""), r["metadata"]["name"]))


def beyond_history(runs: list[Obj], successful: int, failed: int) -> list[Obj]:
    """The finished runs past the history limits, oldest first (CronJob's cleanup)."""
    out: list[Obj] = []
    for phase, keep in ((Phase.SUCCEEDED, successful), (Phase.FAILED, failed)):
        of_phase = [r for r in finished_order(runs) if phase_of(r) == phase]
        out += of_phase[: max(len(of_phase) - keep, 0)]
    return out


def pending_name(policy: str, pod_group_uid: str, attempt: int) -> str:
    """``<policy>-p<8 hex of the PodGroup's UID>-<attempt>``: one name per PodGroup incarnation and try."""
    digest = hashlib.sha256(pod_group_uid.encode()).hexdigest()[:8]
    return f"{policy}-p{digest}-{attempt}"


def run_object(
    policy: Obj, template: Obj, name: str, trigger: str, *, now: datetime, pod_group: str = "",
    scheduled: datetime | None = None,
) -> Obj:  # fmt: skip
    """The RepackRun a trigger creates: the template's labels, annotations and spec, owned by the
    policy; a waiting PodGroup becomes the spec's ``for``."""
    meta = template.get("metadata") or {}
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    annotations = dict(meta.get("annotations") or {})
    if pod_group:
        spec["for"] = {"podGroup": pod_group}
        annotations[POD_GROUP_ANNOTATION] = pod_group
    if scheduled is not None:
        annotations[SCHEDULED_ANNOTATION] = rfc3339(scheduled)
    pmeta = policy["metadata"]
    owner = {
        "apiVersion": REPACKPOLICIES.api_version,
        "kind": REPACKPOLICIES.kind,
        "name": pmeta["name"],
        "uid": pmeta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": False,
    }
    labels = {**(meta.get("labels") or {}), POLICY_LABEL: pmeta["name"], TRIGGER_LABEL: trigger.lower()}
    return {
        "apiVersion": "repack.volcano.sh/v1alpha1",
        "kind": "RepackRun",
        "metadata": {"name": name, "labels": labels, "annotations": annotations, "ownerReferences": [owner]},
        "spec": spec,
    }


def created_at(run: Obj) -> str:
    return str((run.get("metadata") or {}).get("creationTimestamp") or "")
