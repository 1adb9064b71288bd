"""Per-kind REST semantics over the store: status subresources, CRD hooks, patches, deletion, binding.

Every front door (HTTP, ``ApiServer.create`` in tests, ``--load``) goes through ``Api`` so the same
rules hold whichever way an object arrives.
"""

from __future__ import annotations

import base64
import copy
import json
import secrets
from typing import Any

import yaml

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver import admission, fields, podrules
from sidecar.sandbox.apiserver import patch as patches
from sidecar.sandbox.apiserver.apierrors import ApiError, conflict, gone, invalid, not_found, success
from sidecar.sandbox.apiserver.registry import Registry, ResourceType
from sidecar.sandbox.apiserver.selectors import Predicate
from sidecar.sandbox.apiserver.store import Store, now_iso
from sidecar.sandbox.policy import Eviction, decide_eviction, record_eviction

#: an HTTP request's field validation: its mode and the list its warnings go to (None: in process)
Validation = tuple[str, list[str]] | None

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
PDB_KEY = "policy/poddisruptionbudgets"
POD_KEY = "/pods"
#: the label the namespace strategy sets on every create and update (immutable name selector)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    assert isinstance(meta, dict)
    return meta


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON object, several times faster than copy.deepcopy (matters for loads)."""
    out = json.loads(json.dumps(obj))
    assert isinstance(out, dict)
    return out


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ApiError(400, f"invalid continue token: {exc}") from exc


def encode_continue(rv: int, start: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(start)}).encode()).decode()


class Api:
    """The emulator's REST operations; ``lifecycle`` (set by the server) schedules graceful removals;
    a client's create passes the mutating admission webhooks the stored configurations name."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store, self.registry = store, registry
        self.lifecycle: Any = None

    # -- create / read -----------------------------------------------------------------------
    def _check_namespace(self, rt: ResourceType, namespace: str, obj: Obj) -> None:
        meta = _meta(obj)
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = namespace or meta.get("namespace") or "default"
        if self.store.find("/namespaces", "", meta["namespace"]) is None:
            raise not_found("", "namespaces", meta["namespace"])

    def _custom(self, rt: ResourceType, obj: Obj, old: Obj | None) -> Obj:
        """Defaults and structural validation from the crd module (422 with field causes)."""
        if rt.custom is None:
            return obj
        obj = rt.custom.default(obj)
        causes = rt.custom.validate(obj, old)
        if causes:
            raise invalid(rt.kind, rt.group, _meta(obj).get("name", ""), causes)
        return obj

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Obj,
        *,
        keep_status: bool = False,
        stored: bool = False,
        validation: Validation = None,
    ) -> Obj:
        """A client's create; ``stored`` writes an object as stored state (loaders: status, uid and
        deletionTimestamp kept as given, which no client request could set). ``validation`` is an
        HTTP request's (field validation mode, warnings out); in-process callers skip it."""
        obj = clone(body)
        if validation is not None:
            obj = fields.check(rt, obj, *validation)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        if not stored:
            obj = admission.admit(self.store, rt, namespace or _meta(obj).get("namespace", ""), obj)
        meta = _meta(obj)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(
                    rt.kind,
                    rt.group,
                    "",
                    [{"reason": "FieldValueRequired", "message": "Required value", "field": "metadata.name"}],
                )
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        meta.pop("resourceVersion", None)
        self._check_namespace(rt, namespace, obj)
        if rt.has_status and not (keep_status or stored) and rt.status_on_create != "keep":
            obj["status"] = {"phase": "Pending"} if rt.status_on_create == "pending" else {}
        if rt.kind == "Namespace":
            obj.setdefault("status", {})["phase"] = "Active"
            _label_namespace(obj)
        if rt.key == POD_KEY and not stored and (causes := podrules.validate_create(obj)):
            raise invalid("Pod", "", meta["name"], causes)
        obj = self._custom(rt, obj, None)
        if rt.key == CRD_KEY:
            types = self.registry.prepare_crd(obj)
            obj["status"] = _crd_status(obj)
            created = self.store.create(rt.key, obj, stored=stored)
            self.registry.register(meta["name"], types)
            return created
        return self.store.create(rt.key, obj, stored=stored)

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return self.store.get(rt.key, namespace if rt.namespaced else "", name)

    def list_objects(
        self, rt: ResourceType, namespace: str, match: Predicate, limit: int = 0, token: str = ""
    ) -> tuple[list[Obj], int, str, int]:
        """Items, resourceVersion, continue token and remaining count (continue keeps the first page's rv)."""
        after = None
        if token:
            rv0, after = decode_continue(token)
            if rv0 < self.store.floor:
                raise gone(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter."
                )
        items, rv = self.store.scan(rt.key, namespace if rt.namespaced else None, after)
        if token:
            rv = rv0
        items = [o for o in items if match(o)]
        if limit and len(items) > limit:
            last = _meta(items[limit - 1])
            nxt = encode_continue(rv, (last.get("namespace", ""), last["name"]))
            return items[:limit], rv, nxt, len(items) - limit
        return items, rv, "", 0

    # -- update / patch ----------------------------------------------------------------------
    def replace(
        self, rt: ResourceType, namespace: str, name: str, body: Obj, sub: str = "", validation: Validation = None
    ) -> Obj:
        old = self.get(rt, namespace, name)
        obj = copy.deepcopy(body)
        if validation is not None:
            obj = fields.check(rt, obj, *validation)
        meta = _meta(obj)
        if meta.get("name", name) != name:
            raise ApiError(
                400, f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        return self._write(rt, old, obj, sub)

    def _write(self, rt: ResourceType, old: Obj, obj: Obj, sub: str, *, check_rv: bool = True) -> Obj:
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        meta = _meta(obj)
        meta["name"] = old["metadata"]["name"]
        if rt.namespaced:
            meta["namespace"] = old["metadata"]["namespace"]
        if sub == "status":
            rv = meta.get("resourceVersion")
            obj = {**copy.deepcopy(old), "status": obj.get("status", {})}
            if rv:
                obj["metadata"]["resourceVersion"] = rv
        elif rt.has_status:
            obj["status"] = copy.deepcopy(old.get("status", {}))
        if rt.kind == "Namespace":
            _label_namespace(obj)
        if rt.key == POD_KEY and (causes := podrules.validate_update(obj, old)):
            raise invalid("Pod", "", meta["name"], causes)
        obj = self._custom(rt, obj, old)
        if rt.key == CRD_KEY:
            types = self.registry.prepare_crd(obj)
            written = self.store.update(rt.key, obj, check_rv=check_rv)
            self.registry.register(meta["name"], types)
            return written
        return self.store.update(rt.key, obj, check_rv=check_rv)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str,
        sub: str = "",
        validation: Validation = None,
    ) -> tuple[int, Obj]:
        """PATCH in any of the four content types; apply-patch creates the object when absent (201)."""
        ctype = content_type.split(";")[0].strip()
        try:
            doc = yaml.safe_load(body) if ctype == "application/apply-patch+yaml" else json.loads(body or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, f"invalid patch body: {exc}") from exc
        found = self.store.find(rt.key, namespace if rt.namespaced else "", name)
        if found is None:
            if ctype == "application/apply-patch+yaml" and not sub:
                return 201, self.create(rt, namespace, doc, validation=validation)
            raise not_found(rt.group, rt.plural, name)
        old = copy.deepcopy(found)
        if ctype == "application/merge-patch+json" or ctype == "application/apply-patch+yaml":
            new = patches.merge_patch(old, doc)
        elif ctype == "application/strategic-merge-patch+json":
            if rt.custom is not None or rt.key == CRD_KEY:
                raise ApiError(
                    415, f"strategic merge patch is not supported for {rt.kind}", reason="UnsupportedMediaType"
                )
            new = patches.strategic_merge_patch(old, doc)
        elif ctype == "application/json-patch+json":
            new = patches.json_patch(old, doc)
        else:
            raise ApiError(415, f"the body of the request was in an unknown format: {ctype}")
        if not isinstance(new, dict):
            raise ApiError(422, "patch did not produce an object", reason="Invalid")
        if validation is not None:
            new = fields.check(rt, new, *validation)
        sent_rv = _meta(new).get("resourceVersion")
        if sent_rv == found["metadata"]["resourceVersion"] or ctype == "application/apply-patch+yaml":
            _meta(new).pop("resourceVersion", None)
        return 200, self._write(rt, found, new, sub)

    # -- delete ------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, opts: dict[str, Any]) -> Obj:
        """Graceful deletion: finalizers or a pod's grace keep it (deletionTimestamp set); else it is gone now."""
        obj = self.get(rt, namespace, name)
        meta = obj["metadata"]
        pre = opts.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise conflict(rt.group, rt.plural, name, f"Precondition failed: UID in precondition: {pre['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            why = f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}"
            raise conflict(rt.group, rt.plural, name, why)
        grace = self._grace(rt, obj, opts.get("gracePeriodSeconds"))
        if opts.get("propagationPolicy") == "Orphan" or opts.get("orphanDependents"):
            self._orphan(meta.get("uid", ""))
        if meta.get("deletionTimestamp"):
            if grace == 0 and not meta.get("finalizers"):
                return self.store.remove(rt.key, meta.get("namespace", ""), name) or obj
            return obj
        if meta.get("finalizers") or grace > 0:
            marked = self.store.mark_deleting(rt.key, obj, grace)
            if grace > 0 and self.lifecycle is not None:
                self.lifecycle.reap_later(rt.key, marked, grace)
            return marked
        return self.store.remove(rt.key, meta.get("namespace", ""), name) or obj

    @staticmethod
    def _grace(rt: ResourceType, obj: Obj, asked: Any) -> int:
        if rt.kind != "Pod" or rt.group:
            return 0
        if not obj.get("spec", {}).get("nodeName") or obj.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return 0  # never started: nothing to stop
        if asked is not None:
            return max(0, int(asked))
        return int(obj.get("spec", {}).get("terminationGracePeriodSeconds", 30))

    def _orphan(self, uid: str) -> None:
        for key, ns, name in self.store.dependents(uid):
            dep = self.store.find(key, ns, name)
            if dep is not None:
                dep = copy.deepcopy(dep)
                refs = [r for r in dep["metadata"].get("ownerReferences", []) if r.get("uid") != uid]
                dep["metadata"]["ownerReferences"] = refs
                self.store.update(key, dep, check_rv=False)

    # -- pod subresources --------------------------------------------------------------------
    def bind(self, namespace: str, name: str, body: Obj) -> Obj:
        """``pods/binding``: set spec.nodeName once; 409 on pods/binding when the pod is already bound,
        being deleted or still has scheduling gates, as the scheduler sees it."""
        rt = self.registry.lookup("", "v1", "pods")
        pod = copy.deepcopy(self.get(rt, namespace, name))
        node = (body.get("target") or {}).get("name")
        if not node:
            raise invalid(
                "Binding",
                "",
                name,
                [{"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}],
            )
        refusal = podrules.binding_refusal(pod)
        if refusal is not None:
            raise conflict("", "pods/binding", name, refusal)
        pod.setdefault("spec", {})["nodeName"] = node
        conds = [c for c in pod.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso()})
        pod["status"]["conditions"] = conds
        self.store.update(rt.key, pod, check_rv=False)
        return {**success(), "code": 201}

    def evict(self, namespace: str, name: str, body: Obj) -> Obj:
        """``pods/eviction`` as eviction.go: the PDB verdict (429/500/403 refusals), the PDB charged,
        a DisruptionTarget condition, then graceful deletion. The store lock makes it one step, so
        two evictions cannot both spend the last allowed disruption."""
        rt = self.registry.lookup("", "v1", "pods")
        with self.store.lock:
            pod = self.get(rt, namespace, name)
            verdict = decide_eviction(pod, self.store.scan(PDB_KEY, namespace)[0])
            if not verdict.allowed:
                raise _refusal(verdict)
            opts = copy.deepcopy(body.get("deleteOptions") or {})
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != pod["metadata"].get("uid"):
                raise conflict("", "pods", name, f"Precondition failed: UID in precondition: {pre['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != pod["metadata"].get("resourceVersion"):
                why = f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}"
                raise conflict("", "pods", name, why)
            if verdict.pdb is not None:
                pdb = self.store.get(PDB_KEY, namespace, verdict.pdb)
                self.store.update(PDB_KEY, record_eviction(pdb, name), check_rv=True)
            marked = self.store.update(POD_KEY, _disruption_target(pod), check_rv=False)
            if pre.get("resourceVersion") or verdict.precondition:  # the condition write moved it
                opts["preconditions"] = {**pre, "resourceVersion": marked["metadata"]["resourceVersion"]}
            if self.store.find(POD_KEY, namespace, name) is not None:  # else its grace had passed: gone
                self.delete(rt, namespace, name, opts)
        return {**success(), "code": 201}


def _refusal(verdict: Eviction) -> ApiError:
    """The Status a refused eviction answers, worded as the API server's error constructors do."""
    if verdict.code == 429:  # errors.NewTooManyRequests + the DisruptionBudget cause
        return ApiError(429, verdict.message, reason="TooManyRequests", details={"causes": verdict.causes})
    if verdict.code == 500:  # errors.NewInternalError
        details = {"causes": [{"message": verdict.message}]}
        return ApiError(500, f"Internal error occurred: {verdict.message}", reason="InternalError", details=details)
    return ApiError(verdict.code, verdict.message)


def _disruption_target(pod: Obj) -> Obj:
    """The pod with DisruptionTarget=True (EvictionByEvictionAPI), as addConditionAndDeletePod writes it."""
    out = copy.deepcopy(pod)
    want = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    want["message"] = "Eviction API: evicting"
    conds = out.setdefault("status", {}).setdefault("conditions", [])
    old = next((c for c in conds if c.get("type") == "DisruptionTarget"), None)
    if old is None:
        conds.append({**want, "lastTransitionTime": now_iso()})
    else:
        if old.get("status") != "True":
            old["lastTransitionTime"] = now_iso()
        old.update(want)
    return out


def _label_namespace(ns: Obj) -> None:
    meta = _meta(ns)
    meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: meta.get("name", "")}


def _crd_status(crd: Obj) -> Obj:
    spec = crd.get("spec", {})
    conds = [
        {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now_iso()}
        for t, r, m in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    stored = [v["name"] for v in spec.get("versions", []) if v.get("storage")]
    return {"acceptedNames": spec.get("names", {}), "conditions": conds, "storedVersions": stored}
