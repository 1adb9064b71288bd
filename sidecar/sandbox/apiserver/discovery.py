"""Discovery and OpenAPI documents: just what kubectl and the Python client need to find resources.

Aggregated discovery (apidiscovery.k8s.io/v2) is not served: kubectl also accepts plain JSON and
falls back to the legacy per-group documents, which these are. OpenAPI v2 is 404 (kubectl then
uses v3); the v3 documents declare that PATCH takes ``fieldValidation``, so kubectl validates
server-side, and carry each custom resource's schema as the API server publishes it, so
``kubectl explain`` works on them (built-in kinds have no schema here).
"""

from __future__ import annotations

import copy
from typing import Any

from sidecar.sandbox.apiserver.registry import VERBS, Registry, ResourceType

VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}
SUB_KINDS = {"eviction": ("policy", "v1", "Eviction", ["create"]), "binding": ("", "v1", "Binding", ["create"])}


def api_versions(host: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_groups(registry: Registry) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    return None if not versions or not name else {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _entry(t: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": ["create"] if t.kind == "Binding" else VERBS,
        "storageVersionHash": "",
    }
    if t.short_names:
        main["shortNames"] = list(t.short_names)
    if t.categories:
        main["categories"] = list(t.categories)
    out = [main]
    for sub in t.subresources:
        entry = {"name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced}
        if sub in SUB_KINDS:
            group, version, kind, verbs = SUB_KINDS[sub]
            entry.update({"group": group, "version": version, "kind": kind, "verbs": verbs})
        else:
            entry.update({"kind": t.kind, "verbs": ["get", "patch", "update"]})
        out.append(entry)
    return out


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    gv = f"{group}/{version}" if group else version
    resources = [e for t in types for e in _entry(t)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def openapi_v3(registry: Registry) -> dict[str, Any]:
    """The v3 index: one document per group-version, as kubectl's field-validation check reads them."""
    gvs = {(t.group, t.version) for t in registry.all()}
    paths = {}
    for group, version in sorted(gvs):
        gv = f"apis/{group}/{version}" if group else f"api/{version}"
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash=sandbox"}
    return {"paths": paths}


def openapi_v3_gv(registry: Registry, gv: str) -> dict[str, Any] | None:
    """PATCH operations with their kind and ``fieldValidation``: kubectl then validates server-side, no schemas."""
    paths: dict[str, Any] = {}
    for t in registry.all():
        prefix = f"apis/{t.group}/{t.version}" if t.group else f"api/{t.version}"
        if prefix != gv:
            continue
        item = (
            f"/{prefix}/namespaces/{{namespace}}/{t.plural}/{{name}}"
            if t.namespaced
            else f"/{prefix}/{t.plural}/{{name}}"
        )
        patch = {
            "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}},
        }
        paths[item] = {"patch": patch}
    if not paths:
        return None
    info = {"title": "Kubernetes (sandbox)", "version": VERSION["gitVersion"]}
    custom = [t for t in registry.all() if t.custom is not None and f"apis/{t.api_version}" == gv]
    schemas = {_schema_name(t): _published(t) for t in custom}
    return {"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": schemas}}


#: the descriptions the API server gives the standard fields of every custom resource (crd builder.go)
_STANDARD = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may infer "
    "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "metadata": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


def _schema_name(t: ResourceType) -> str:
    """``sh.volcano.repack.v1alpha1.RepackRun``: the group reversed, as the API server names CRD schemas."""
    return ".".join([*reversed(t.group.split(".")), t.version, t.kind])


def _published(t: ResourceType) -> dict[str, Any]:
    assert t.custom is not None
    doc = copy.deepcopy(t.custom.openapi_schema)
    props = doc.setdefault("properties", {})
    for name, text in _STANDARD.items():
        props.setdefault(name, {"type": "string" if name != "metadata" else "object"})
        props[name] = {**props[name], "description": props[name].get("description", text)}
    doc["x-kubernetes-group-version-kind"] = [{"group": t.group, "kind": t.kind, "version": t.version}]
    return doc
