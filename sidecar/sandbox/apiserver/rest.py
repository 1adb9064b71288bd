"""Per-kind REST semantics over the store: status subresources, CRD hooks, patches, deletion, binding.

Every front door (HTTP, ``ApiServer.create`` in tests, ``--load``) goes through ``Api`` so the same
rules hold whichever way an object arrives.
"""

from __future__ import annotations

import base64
import copy
import importlib
import json
import secrets
from typing import Any

import yaml

from sidecar.sandbox.apiserver import patch as patches
from sidecar.sandbox.apiserver.apierrors import ApiError, conflict, gone, invalid, not_found, success
from sidecar.sandbox.apiserver.registry import Registry, ResourceType
from sidecar.sandbox.apiserver.selectors import Predicate
from sidecar.sandbox.apiserver.store import Obj, Store, now_iso

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
PDB_KEY = "policy/poddisruptionbudgets"


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    assert isinstance(meta, dict)
    return meta


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ApiError(400, f"invalid continue token: {exc}") from exc


def encode_continue(rv: int, start: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(start)}).encode()).decode()


class Api:
    """The emulator's REST operations; ``lifecycle`` (set by the server) schedules graceful removals."""

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

    def create(self, rt: ResourceType, namespace: str, body: Obj, *, keep_status: bool = False) -> Obj:
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
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
        if rt.has_status and not keep_status and rt.status_on_create != "keep":
            obj["status"] = {"phase": "Pending"} if rt.status_on_create == "pending" else {}
        if rt.kind == "Namespace":
            obj.setdefault("status", {})["phase"] = "Active"
        obj = self._custom(rt, obj, None)
        if rt.key == CRD_KEY:
            types = self.registry.prepare_crd(obj)
            obj["status"] = _crd_status(obj)
            created = self.store.create(rt.key, obj)
            self.registry.register(meta["name"], types)
            return created
        return self.store.create(rt.key, obj)

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
    def replace(self, rt: ResourceType, namespace: str, name: str, body: Obj, sub: str = "") -> Obj:
        old = self.get(rt, namespace, name)
        obj = copy.deepcopy(body)
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
        obj = self._custom(rt, obj, old)
        if rt.key == CRD_KEY:
            types = self.registry.prepare_crd(obj)
            written = self.store.update(rt.key, obj, check_rv=check_rv)
            self.registry.register(meta["name"], types)
            return written
        return self.store.update(rt.key, obj, check_rv=check_rv)

    def patch(
        self, rt: ResourceType, namespace: str, name: str, body: bytes, content_type: str, sub: str = ""
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
                return 201, self.create(rt, namespace, doc)
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
        """``pods/binding``: set spec.nodeName once (409 when already bound, as the scheduler sees it)."""
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
        if pod.get("spec", {}).get("nodeName"):
            raise conflict("", "pods", name, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        pod.setdefault("spec", {})["nodeName"] = node
        conds = [c for c in pod.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso()})
        pod["status"]["conditions"] = conds
        self.store.update(rt.key, pod, check_rv=False)
        return {**success(), "code": 201}

    def evict(self, namespace: str, name: str, body: Obj) -> Obj:
        """``pods/eviction``: ask the policy module about PDBs (429 when refused), then delete gracefully."""
        rt = self.registry.lookup("", "v1", "pods")
        pod = self.get(rt, namespace, name)
        try:
            policy = importlib.import_module("sidecar.sandbox.policy")
        except ImportError:
            policy = None
        if policy is not None:
            pdbs, _ = self.store.scan(PDB_KEY, namespace)
            allowed, message = policy.eviction_allowed(pod, pdbs)
            if not allowed:
                details = {"causes": [{"reason": "DisruptionBudget", "message": message}]}
                raise ApiError(429, message, reason="TooManyRequests", details=details)
        opts = body.get("deleteOptions") or {}
        self.delete(rt, namespace, name, opts)
        return {**success(), "code": 201}


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
