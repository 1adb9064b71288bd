"""The placement gate: which pods are created behind ``repack.volcano.sh/placement``, and who lifts
a gate the Execute pass did not.

* **Admission** (``GateIndex.review``, an AdmissionReview v1 in and out): a Pod CREATE is gated
  when it is the rebuild of a relocation an Execute run has journaled and not finished — the
  victim's namespace and name, not the victim's UID, in the victim's PodGroup or in one whose
  controller owner is the recorded workload (``placement.replacement_group``: the rule the pass
  itself recognises replacements by). Nothing else is touched, and the answer always allows:
  the webhook can delay a pod's scheduling, never refuse a pod. The index of active relocations
  is rebuilt from the RepackRun informer on every run event; an admission reads it and the
  PodGroup informer only (no API call), so it answers in microseconds.
* **Release**: the pass removes the gate right after its nomination, or at once when it has no
  node to suggest. The leader releases every other gated pod (``Lifter``): one no active
  relocation claims (its run finished or was deleted — also what a restarted watcher finds), and
  one gated for ``timeout`` seconds since it was created (a pass that died or cannot decide).
  So a dead watcher strands no pod longer than until the next leader's first resync.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from sidecar.api.repackrun import EvictionPhase, Mode, Phase
from sidecar.kubeobj import Obj
from sidecar.watcher import observer as observe
from sidecar.watcher.execute.journal import Relocation, done, key, relocations_of
from sidecar.watcher.execute.placement import (
    PLACEMENT_GATE,
    controller_uid,
    gate_index,
    is_pending,
    replacement_group,
    ungate,
)
from sidecar.watcher.kit.informer import DELETED
from sidecar.watcher.kit.port import Cluster
from sidecar.watcher.kit.status import Hook, mode_of, parse_time, phase_of

#: (namespace, PodGroup) → the UID of its controller owner ("" when unknown)
OwnerOf = Callable[[str, str], str]
log = structlog.get_logger("sidecar.watcher")


@dataclass(frozen=True)
class Claim:
    """An unfinished relocation of a Running Execute run, which a pod of its name may rebuild."""

    run: str
    relocation: Relocation


def claims_of(runs: Iterable[Obj]) -> dict[tuple[str, str], list[Claim]]:
    """(namespace, victim name) → the relocations whose rebuild would carry that name: those of
    Running Execute runs not placed yet, whose victim is evicted or about to be."""
    out: dict[tuple[str, str], list[Claim]] = {}
    for run in runs:
        if mode_of(run) != Mode.EXECUTE or phase_of(run) != Phase.RUNNING:
            continue
        name = str(run["metadata"]["name"])
        for rel in relocations_of(run.get("status") or {}):
            if not done(rel) and rel.eviction.phase in (EvictionPhase.PENDING, EvictionPhase.EVICTED):
                out.setdefault((rel.namespace, rel.victim_pod_name), []).append(Claim(name, rel))
    return out


def gate_ops(pod: Obj) -> list[Obj]:
    """The JSON patch adding this project's gate to ``pod`` (nothing when it already has it)."""
    if gate_index(pod) is not None:
        return []
    if (pod.get("spec") or {}).get("schedulingGates"):
        return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": PLACEMENT_GATE}}]
    return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": PLACEMENT_GATE}]}]


class GateIndex:
    """Active relocations by victim name, kept from the runs; the admission decision and the
    release rule both read it. ``runs`` lists the cached RepackRuns, ``owner_of`` reads the cached
    PodGroups; ``refresh`` (an informer handler) rebuilds it."""

    def __init__(self, runs: Callable[[], list[Obj]], owner_of: OwnerOf) -> None:
        self._runs, self._owner_of = runs, owner_of
        self._lock = threading.Lock()
        self._claims: dict[tuple[str, str], list[Claim]] = {}

    def refresh(self, *_event: object) -> None:
        """Rebuild from the runs as cached now; under the lock, so two refreshers (the runs
        informer's handler, the Lifter) can never install an older view after a newer one."""
        with self._lock:
            self._claims = claims_of(self._runs())

    def __len__(self) -> int:
        with self._lock:
            return sum(len(c) for c in self._claims.values())

    def claim(self, pod: Obj, namespace: str = "", name: str = "") -> Claim | None:
        """The relocation ``pod`` rebuilds, if any (namespace and name: the request's, when the
        object being admitted does not carry them yet)."""
        meta = pod.get("metadata") or {}
        key = (namespace or str(meta.get("namespace") or ""), name or str(meta.get("name") or ""))
        with self._lock:
            candidates = self._claims.get(key, [])
        for c in candidates:
            if replacement_group(c.relocation, pod, self._owner_of) is not None:
                return c
        return None

    def review(self, review: Obj) -> Obj:
        """An AdmissionReview v1 answered: allowed always; gated (a JSON patch) when ``claim`` says so."""
        request = review.get("request") or {}
        response: Obj = {"uid": request.get("uid", ""), "allowed": True}
        pod = request.get("object") or {}
        resource = request.get("resource") or {}
        is_pod_create = (
            request.get("operation") == "CREATE"
            and resource.get("group", "") == ""
            and resource.get("resource") == "pods"
            and not request.get("subResource")
        )
        if is_pod_create and not (pod.get("spec") or {}).get("nodeName"):  # a bound pod cannot be gated
            namespace, name = str(request.get("namespace") or ""), str(request.get("name") or "")
            found = self.claim(pod, namespace, name)
            ops = gate_ops(pod) if found is not None else []
            if found is not None and ops:
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
                response["auditAnnotations"] = {"gated": f"RepackRun {found.run} relocation {key(found.relocation)}"}
                if not request.get("dryRun"):
                    observe.gate("added", f"{namespace}/{name}", found.run)
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def owner_from(pod_groups: Callable[[str, str], Obj | None]) -> OwnerOf:
    """``owner_of`` over a PodGroup lookup (the informer's ``get(name, namespace)``)."""

    def owner_of(namespace: str, group: str) -> str:
        found = pod_groups(group, namespace)
        return controller_uid(found) if found is not None else ""

    return owner_of


def release_reason(pod: Obj, index: GateIndex, now: datetime, timeout: float) -> str:
    """Why the leader lifts ``pod``'s gate now ("" to leave it to the pass): no active relocation
    claims it, or it has been gated ``timeout`` seconds since creation."""
    if gate_index(pod) is None or not is_pending(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return ""
    if index.claim(pod) is None:
        return "no unfinished Execute relocation claims it"
    created = (pod.get("metadata") or {}).get("creationTimestamp")
    if created and now - parse_time(str(created)) >= timedelta(seconds=timeout):
        return f"not nominated within {timeout:g}s of its creation"
    return ""


class Lifter:
    """The leader's chore each resync: lift the gates ``release_reason`` names. The pods informer
    tells it which pods carry the gate (``on_pod``), so a resync looks at those, not every pod."""

    def __init__(
        self,
        cluster: Cluster,
        index: GateIndex,
        pod: Callable[[str, str], Obj | None],
        *,
        clock: Callable[[], datetime],
        timeout: float,
        hook: Hook = lambda _: None,
    ) -> None:
        self._cluster, self._index, self._pod, self._clock = cluster, index, pod, clock
        self.timeout, self._hook = timeout, hook
        self._lock = threading.Lock()
        self._gated: set[tuple[str, str]] = set()

    def on_pod(self, kind: str, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if kind != DELETED and gate_index(pod) is not None:
                self._gated.add(key)
            else:
                self._gated.discard(key)

    def __call__(self) -> int:
        """Lift what is due; returns how many gates were removed."""
        with self._lock:
            keys = sorted(self._gated)
        if not keys:
            return 0
        self._index.refresh()
        now, lifted = self._clock(), 0
        for namespace, name in keys:
            pod = self._pod(name, namespace)
            why = release_reason(pod, self._index, now, self.timeout) if pod is not None else ""
            if pod is not None and why and ungate(self._cluster, pod, self._hook):
                observe.gate("lifted", f"{namespace}/{name}", why=why)
                lifted += 1
        return lifted


#: the MutatingWebhookConfiguration's name, and (label key → webhook name) of the workloads whose rebuilt
#: pods it may see; manifests/webhook/mutatingwebhookconfiguration.yaml is this with the Service clientConfig
CONFIGURATION = "repack-placement-gate"
WORKLOAD_LABELS = {
    "vcjob.placement.repack.volcano.sh": "volcano.sh/job-name",
    "modelserving.placement.repack.volcano.sh": "modelserving.volcano.sh/name",
}
#: namespaces never sent to the webhook (the scheduler's own pod must not wait on its own webhook)
SYSTEM_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease", "volcano-system"]


def configuration(client_config: Obj, *, timeout: int = 2) -> Obj:
    """The webhook configuration: Pod CREATEs of Volcano Job and ModelServing pods outside the system
    namespaces, failurePolicy Ignore (the gate may delay a pod, never refuse or strand one)."""
    hooks = [{"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
              "timeoutSeconds": timeout, "reinvocationPolicy": "Never", "clientConfig": client_config,
              "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                         "scope": "Namespaced"}],
              "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                          "values": SYSTEM_NAMESPACES}]},
              "objectSelector": {"matchExpressions": [{"key": label, "operator": "Exists"}]}}
             for name, label in WORKLOAD_LABELS.items()]  # fmt: skip
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": CONFIGURATION, "labels": {"app.kubernetes.io/name": "repack-watcher",
                                                           "app.kubernetes.io/part-of": "volcano-repack"}},
            "webhooks": hooks}  # fmt: skip
