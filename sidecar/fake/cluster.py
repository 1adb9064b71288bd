"""An in-memory fake of the watcher's cluster port (``sidecar.watcher.kit.port.Cluster``).

It stands for the API server as the watcher meets it through that port, and no further: a store
with resourceVersions, watches that replay history from a version and fan out live changes (410
``Gone`` for a version older than the history kept), generation and the status subresource, UID
preconditions, RFC 6902 patches, graceful pod deletion, PodDisruptionBudget-guarded eviction
(:mod:`sidecar.fake.eviction`), a mutating admission hook for pod creates (the placement gate's
``AdmissionReview`` answered in process), injected faults and an audit of every call
(:mod:`sidecar.fake.faults`). Schemas, validation, RBAC, field selectors, tables, discovery and
kubectl are the real control plane's to judge: nothing here imitates them.

The simulated Volcano components (:mod:`sidecar.fake.volcano`) act on it with the extra calls a
scheduler, kubelet or controller makes: ``bind``, ``remove`` (a kubelet confirming a deletion),
``load`` (objects written as stored state). ``list`` and watch events hand out the stored dicts
themselves (never changed in place: every write stores a new dict); single-object calls answer
copies.
"""

from __future__ import annotations

import base64
import copy
import json
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sidecar.fake import eviction, jsonpatch
from sidecar.fake.faults import Audit, Call, Faults
from sidecar.fake.watches import Watch
from sidecar.kubeobj import Obj
from sidecar.watcher.kit import port
from sidecar.watcher.kit.port import PODS, ApiError, Gone, Listing, Resource, Unreachable

JOBS = Resource("jobs", "Job", "batch.volcano.sh", "v1alpha1")
MODELSERVINGS = Resource("modelservings", "ModelServing", "workload.serving.volcano.sh", "v1alpha1")
RESOURCES: tuple[Resource, ...] = (
    port.NAMESPACES, port.NODES, PODS, port.EVENTS, port.SECRETS, port.PDBS, port.LEASES,
    port.WEBHOOK_CONFIGURATIONS, port.PODGROUPS, port.REPACKRUNS, port.REPACKPOLICIES, JOBS, MODELSERVINGS,
)  # fmt: skip
#: kinds served with a status subresource: a write of the object keeps the stored status
WITH_STATUS = frozenset({"namespaces", "nodes", "pods", "poddisruptionbudgets", "podgroups", "repackruns",
                         "repackpolicies", "jobs", "modelservings"})  # fmt: skip
#: (apiVersion, kind) -> resource, for ``load``
BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}
#: an AdmissionReview v1 in, the answered one out (a mutating webhook, called in process)
Admission = Callable[[Obj], Obj]
Key = tuple[str, str]


def now_iso(at: datetime | None = None) -> str:
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Obj) -> Obj:
    return obj.setdefault("metadata", {})  # type: ignore[no-any-return]


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class FakeCluster:
    """``Cluster`` in memory. ``history``: events kept per kind for watches to resume from;
    ``bookmark_every``: seconds of silence after which a watch sends a BOOKMARK (0: never)."""

    def __init__(self, *, history: int = 1000, bookmark_every: float = 0.0, admission: Admission | None = None) -> None:
        self.faults, self.audit = Faults(), Audit()
        self.admission = admission
        self.history, self.bookmark_every = history, bookmark_every
        #: called under the store's lock after each change with (resource, event type, object): enqueue only
        self.listeners: list[Callable[[Resource, str, Obj], None]] = []
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[Resource, dict[Key, Obj]] = {r: {} for r in RESOURCES}
        self._history: dict[Resource, deque[tuple[int, str, Obj]]] = {r: deque() for r in RESOURCES}
        self._oldest: dict[Resource, int] = dict.fromkeys(RESOURCES, 0)
        self._watches: dict[Resource, list[Watch]] = {r: [] for r in RESOURCES}

    # -- the store ---------------------------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    def _write(self, resource: Resource, obj: Obj, kind: str) -> Obj:
        """Store ``obj`` (a new dict, never changed afterwards) at the next version and tell watchers."""
        self._rv += 1
        _meta(obj)["resourceVersion"] = str(self._rv)
        key = _key(obj)
        if kind == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
        events = self._history[resource]
        events.append((self._rv, kind, obj))
        while len(events) > self.history:
            self._oldest[resource] = events.popleft()[0]
        for watch in self._watches[resource]:
            watch.push((kind, obj))
        for listener in self.listeners:
            listener(resource, kind, obj)
        return obj

    def _unwatch(self, resource: Resource, watch: Watch) -> None:
        with self._lock:
            if watch in self._watches[resource]:
                self._watches[resource].remove(watch)

    def _stored(self, resource: Resource, name: str, namespace: str) -> Obj:
        found = self._objects[resource].get((namespace if resource.namespaced else "", name))
        if found is None:
            raise ApiError(404, f'{resource.plural} "{name}" not found', "NotFound")
        return found

    def _serve(self, verb: str, resource: Resource, sub: str, ns: str, name: str, timeout: float | None,
               act: Callable[[], Any], ok: int = 200) -> Any:  # fmt: skip
        """One call: the injected delay and failure first, then ``act``; audited with its code."""
        delay, code, message = self.faults.take(verb, resource.plural, sub)
        if delay:
            if timeout is not None and timeout < delay:
                time.sleep(timeout)
                self.audit.record(Call(verb, resource.plural, sub, ns, name, 0))
                raise Unreachable(f"{verb} {resource.plural}: timed out after {timeout:g} s")
            time.sleep(delay)
        if code:
            self.audit.record(Call(verb, resource.plural, sub, ns, name, code))
            raise ApiError(code, message)
        try:
            result = act()
        except ApiError as exc:
            self.audit.record(Call(verb, resource.plural, sub, ns, name, exc.status))
            raise
        self.audit.record(Call(verb, resource.plural, sub, ns, name, ok))
        return result

    # -- the port ----------------------------------------------------------------------------------
    def listing(self, resource: Resource, *, timeout: float | None = None) -> Listing:
        def act() -> Listing:
            with self._lock:
                items = [self._objects[resource][k] for k in sorted(self._objects[resource])]
                return Listing(items, str(self._rv))

        return self._serve("list", resource, "", "", "", timeout, act)  # type: ignore[no-any-return]

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> Watch:
        def act() -> Watch:
            with self._lock:
                since = int(resource_version or self._rv)
                if since < self._oldest[resource]:
                    raise Gone(f"too old resource version: {since} ({self._oldest[resource]})")
                deadline = time.monotonic() + timeout_seconds
                watch = Watch(resource, deadline, self.bookmark_every, lambda: self.resource_version, self._unwatch)
                for rv, kind, obj in self._history[resource]:
                    if rv > since:
                        watch.push((kind, obj))
                self._watches[resource].append(watch)
                return watch

        return self._serve("watch", resource, "", "", "", None, act)  # type: ignore[no-any-return]

    def get(self, resource: Resource, name: str, namespace: str = "", *, timeout: float | None = None) -> Obj | None:
        def act() -> Obj:
            with self._lock:
                return copy.deepcopy(self._stored(resource, name, namespace))

        try:
            return self._serve("get", resource, "", namespace, name, timeout, act)  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, resource: Resource, obj: Obj, *, timeout: float | None = None) -> Obj:
        new = copy.deepcopy(obj)
        meta = _meta(new)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{secrets.token_hex(3)[:5]}"
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")

        def act() -> Obj:
            nonlocal new
            if not name or (resource.namespaced and not ns):
                raise ApiError(422, f"{resource.kind} needs metadata.name" + (" and a namespace" * resource.namespaced))
            if resource is PODS and self.admission is not None:
                new = self._admit(new, ns, name)
            with self._lock:
                if (ns, name) in self._objects[resource]:
                    raise ApiError(409, f'{resource.plural} "{name}" already exists', "AlreadyExists")
                self._fresh(resource, new)
                return copy.deepcopy(self._write(resource, new, "ADDED"))

        return self._serve("create", resource, "", ns, name, timeout, act, ok=201)  # type: ignore[no-any-return]

    def replace(self, resource: Resource, obj: Obj, *, status: bool = False, timeout: float | None = None) -> Obj:
        ns, name = _key(obj)

        def act() -> Obj:
            with self._lock:
                current = self._stored(resource, name, ns)
                given = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                if given and given != current["metadata"]["resourceVersion"]:
                    raise ApiError(409, f'Operation cannot be fulfilled on {resource.plural} "{name}": the object '
                                        "has been modified; please apply your changes to the latest version and "
                                        "try again", "Conflict")  # fmt: skip
                new = self._merged(resource, current, copy.deepcopy(obj), status)
                return copy.deepcopy(self._write(resource, new, "MODIFIED"))

        sub = "status" if status else ""
        return self._serve("update", resource, sub, ns, name, timeout, act)  # type: ignore[no-any-return]

    def patch(self, resource: Resource, name: str, namespace: str, ops: list[Obj], *, status: bool = False) -> Obj:
        def act() -> Obj:
            with self._lock:
                current = self._stored(resource, name, namespace)
                try:
                    patched = jsonpatch.apply(current, ops)
                except jsonpatch.PatchError as exc:
                    raise ApiError(422, str(exc), "Invalid") from exc
                new = self._merged(resource, current, patched, status)
                return copy.deepcopy(self._write(resource, new, "MODIFIED"))

        sub = "status" if status else ""
        return self._serve("patch", resource, sub, namespace, name, None, act)  # type: ignore[no-any-return]

    def delete(self, resource: Resource, name: str, namespace: str = "", *, uid: str = "") -> None:
        def act() -> None:
            with self._lock:
                current = self._stored(resource, name, namespace)
                self._precondition(resource, current, uid)
                self._delete(resource, current, None)

        self._serve("delete", resource, "", namespace, name, None, act)

    def evict(self, namespace: str, name: str, *, uid: str, grace_seconds: int | None = None) -> None:
        def act() -> None:
            with self._lock:
                pod = self._stored(PODS, name, namespace)
                self._precondition(PODS, pod, uid)
                pdbs = [p for k, p in self._objects[port.PDBS].items() if k[0] == namespace]
                verdict = eviction.decide(pod, pdbs)
                if verdict.code != 201:
                    raise ApiError(verdict.code, verdict.message, verdict.reason)
                if verdict.pdb is not None:
                    self._write(port.PDBS, eviction.charged(verdict.pdb, name, now_iso()), "MODIFIED")
                self._delete(PODS, pod, grace_seconds)

        self._serve("create", PODS, "eviction", namespace, name, None, act, ok=201)

    def close(self) -> None:
        """Nothing to release (the fake outlives its clients)."""

    # -- what the simulated components and tests call ------------------------------------------------
    def load(self, objects: list[Obj]) -> None:
        """Write ``objects`` as stored state (status and all, as a restored etcd would hold them)."""
        with self._lock:
            for obj in objects:
                resource = BY_KIND[(obj.get("apiVersion", ""), obj.get("kind", ""))]
                new = copy.deepcopy(obj)
                self._fresh(resource, new)
                self._write(resource, new, "MODIFIED" if _key(new) in self._objects[resource] else "ADDED")

    def items(self, resource: Resource, namespace: str | None = None) -> list[Obj]:
        """The stored objects (shared: do not change them), in (namespace, name) order, unaudited."""
        with self._lock:
            return [o for k, o in sorted(self._objects[resource].items()) if namespace in (None, k[0])]

    def find(self, resource: Resource, name: str, namespace: str = "") -> Obj | None:
        with self._lock:
            return self._objects[resource].get((namespace if resource.namespaced else "", name))

    def bind(self, namespace: str, name: str, node: str) -> Obj:
        """``pods/binding``, as the scheduler binds: refused (409) when bound, gated or terminating."""
        with self._lock:
            pod = self._stored(PODS, name, namespace)
            spec = pod.get("spec") or {}
            if spec.get("nodeName") or spec.get("schedulingGates") or pod["metadata"].get("deletionTimestamp"):
                raise ApiError(409, f"pod {name} is already assigned, gated or terminating", "Conflict")
            new = copy.deepcopy(pod)
            new["spec"]["nodeName"] = node
            status = new.setdefault("status", {})
            kept = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
            status["conditions"] = [*kept, {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso()}]
            return copy.deepcopy(self._write(PODS, new, "MODIFIED"))

    def store(self, resource: Resource, obj: Obj) -> bool:
        """Write a new version of a stored object (a kubelet's status report); False when the
        object is gone or replaced (another UID) meanwhile."""
        ns, name = _key(obj)
        with self._lock:
            found = self.find(resource, name, ns)
            if found is None or found["metadata"].get("uid") != _meta(obj).get("uid"):
                return False
            self._write(resource, copy.deepcopy(obj), "MODIFIED")
            return True

    def remove(self, resource: Resource, name: str, namespace: str = "", uid: str = "") -> bool:
        """Finish a deletion (a kubelet confirming its pod stopped); False when it is gone or replaced."""
        with self._lock:
            found = self.find(resource, name, namespace)
            if found is None or (uid and found["metadata"].get("uid") != uid):
                return False
            self._write(resource, copy.deepcopy(found), "DELETED")
            return True

    def drop_watches(self) -> int:
        """Cut every open watch (a restarted server or a load balancer would); returns how many."""
        with self._lock:
            watches = [w for ws in self._watches.values() for w in ws]
        for watch in watches:
            watch.cut()
        return len(watches)

    def expire(self) -> None:
        """Forget every event so far: a watch from any older version gets 410 Gone (compaction)."""
        with self._lock:
            for resource in RESOURCES:
                self._history[resource].clear()
                self._oldest[resource] = self._rv

    # -- rules of writes -----------------------------------------------------------------------------
    @staticmethod
    def _fresh(resource: Resource, obj: Obj) -> None:
        """What the server fills on create: kind, uid, creation time, generation, a pod's phase."""
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        meta = _meta(obj)
        if not resource.namespaced:
            meta.pop("namespace", None)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_iso())
        meta.pop("resourceVersion", None)
        if "spec" in obj:
            meta.setdefault("generation", 1)
        if resource is PODS:
            obj.setdefault("status", {}).setdefault("phase", "Pending")

    @staticmethod
    def _merged(resource: Resource, current: Obj, new: Obj, status: bool) -> Obj:
        """The stored result of an update: identity kept; the status subresource writes status only,
        the object's own write keeps the stored status; generation follows spec changes."""
        if status:
            new = {**copy.deepcopy(current), "status": new.get("status") or {}}
        elif resource.plural in WITH_STATUS and "status" in current:
            new["status"] = copy.deepcopy(current["status"])
        meta, old = _meta(new), current["metadata"]
        for field in ("uid", "creationTimestamp", "name", "namespace", "deletionTimestamp"):
            if field in old:
                meta[field] = old[field]
        if "generation" in old:
            meta["generation"] = old["generation"] + (new.get("spec") != current.get("spec"))
        return new

    @staticmethod
    def _precondition(resource: Resource, current: Obj, uid: str) -> None:
        have = current["metadata"].get("uid")
        if uid and have != uid:
            raise ApiError(409, f"Precondition failed: UID in precondition: {uid}, UID in object meta: {have}",
                           "Conflict")  # fmt: skip

    def _delete(self, resource: Resource, current: Obj, grace: int | None) -> None:
        """Delete now, or for a pod on a node with a grace period, mark it terminating (its kubelet
        confirms with ``remove`` once the grace is over)."""
        spec = current.get("spec") or {}
        seconds = int(spec.get("terminationGracePeriodSeconds", 30) if grace is None else grace)
        if resource is PODS and spec.get("nodeName") and seconds > 0:
            if current["metadata"].get("deletionTimestamp"):
                return
            new = copy.deepcopy(current)
            at = datetime.now(UTC) + timedelta(seconds=seconds)
            new["metadata"].update(deletionTimestamp=now_iso(at), deletionGracePeriodSeconds=seconds)
            self._write(resource, new, "MODIFIED")
            return
        self._write(resource, copy.deepcopy(current), "DELETED")

    def _admit(self, pod: Obj, namespace: str, name: str) -> Obj:
        """The mutating hook on a pod create: its JSONPatch applied, a refusal answered 403."""
        assert self.admission is not None
        request = {"uid": str(uuid.uuid4()), "kind": {"group": "", "version": "v1", "kind": "Pod"},
                   "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
                   "namespace": namespace, "name": name, "object": pod}  # fmt: skip
        review = self.admission({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        answer = review.get("response") or {}
        if not answer.get("allowed"):
            raise ApiError(403, f"admission webhook denied the request: {(answer.get('status') or {}).get('message')}")
        if answer.get("patch"):
            pod = jsonpatch.apply(pod, json.loads(base64.b64decode(answer["patch"])))
        return pod
