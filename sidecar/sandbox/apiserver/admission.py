"""Mutating admission webhooks, as kube-apiserver calls them: the stored
``MutatingWebhookConfiguration`` objects decide which webhook sees a client's CREATE, and each is
called over HTTPS with an AdmissionReview v1, its certificate checked against ``caBundle``.

What is followed (admissionregistration/v1, the generic webhook dispatcher): configurations in
name order, webhooks in list order; ``rules`` (operations, apiGroups, apiVersions, resources and
``*``, scope); ``namespaceSelector`` on the namespace's labels and ``objectSelector`` on the
object's; ``timeoutSeconds`` (default 10); ``failurePolicy`` (default Fail: an unreachable webhook
refuses the request with 500, Ignore leaves the object as it was); a denial answers the webhook's
status code (400 without one); a ``JSONPatch`` response is applied before the next webhook.
Not followed: ``clientConfig.service`` (the sandbox has no Service network: such a webhook counts
as unreachable, so its failurePolicy decides), ``matchConditions``, ``reinvocationPolicy``.
"""

from __future__ import annotations

import base64
import http.client
import json
import secrets
import ssl
import urllib.error
import urllib.request
from typing import Any

import structlog

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver import patch as patches
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.registry import ResourceType
from sidecar.sandbox.apiserver.store import Store
from sidecar.sandbox.policy import selector_matches

CONFIG_KEY = "admissionregistration.k8s.io/mutatingwebhookconfigurations"
log = structlog.get_logger("sidecar.sandbox")


def _rule_matches(rule: Obj, rt: ResourceType, operation: str) -> bool:
    def has(values: Any, value: str) -> bool:
        return "*" in (values or []) or value in (values or [])

    scope = rule.get("scope") or "*"
    return (
        has(rule.get("operations"), operation)
        and has(rule.get("apiGroups"), rt.group)
        and has(rule.get("apiVersions"), rt.version)
        and has(rule.get("resources"), rt.plural)
        and (scope == "*" or scope == ("Namespaced" if rt.namespaced else "Cluster"))
    )


def _labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _call(hook: Obj, review: Obj) -> Obj:
    """POST ``review`` to the webhook's url; its answer's ``response``. Raises on any failure."""
    config = hook.get("clientConfig") or {}
    url = config.get("url")
    if not url:
        raise ConnectionError("clientConfig.service is not reachable in the sandbox (no Service network)")
    context = ssl.create_default_context()
    if config.get("caBundle"):
        context = ssl.create_default_context(cadata=base64.b64decode(config["caBundle"]).decode())
    request = urllib.request.Request(
        url, data=json.dumps(review).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=float(hook.get("timeoutSeconds") or 10), context=context) as answer:
        body = json.loads(answer.read())
    response = body.get("response") if isinstance(body, dict) else None
    if not isinstance(response, dict):
        raise ValueError("the webhook's answer has no response")
    return response


def admit(store: Store, rt: ResourceType, namespace: str, obj: Obj, operation: str = "CREATE") -> Obj:
    """``obj`` after every matching mutating webhook (an ApiError when one denies it, or fails
    under failurePolicy Fail)."""
    configs, _ = store.scan(CONFIG_KEY)
    if not configs:
        return obj
    ns_obj = store.find("/namespaces", "", namespace) if rt.namespaced else None
    for config in configs:
        for hook in config.get("webhooks") or []:
            if not any(_rule_matches(r, rt, operation) for r in hook.get("rules") or []):
                continue
            if rt.namespaced and not selector_matches(hook.get("namespaceSelector") or {}, _labels(ns_obj)):
                continue
            if not selector_matches(hook.get("objectSelector") or {}, _labels(obj)):
                continue
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            request = {"uid": secrets.token_hex(16), "kind": gvk, "requestKind": gvk,
                       "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
                       "namespace": namespace, "name": (obj.get("metadata") or {}).get("name", ""),
                       "operation": operation, "object": obj, "dryRun": False,
                       "userInfo": {"username": "system:sandbox"}}  # fmt: skip
            try:
                response = _call(hook, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                        "request": request})  # fmt: skip
            except (OSError, ValueError, urllib.error.URLError, http.client.HTTPException) as exc:
                name = hook.get("name", "")
                if (hook.get("failurePolicy") or "Fail") == "Ignore":
                    log.warning("admission webhook failed; ignored", webhook=name, error=f"{type(exc).__name__}: {exc}")
                    continue
                raise ApiError(500, f'Internal error occurred: failed calling webhook "{name}": {exc}') from exc
            if not response.get("allowed"):
                status = response.get("status") or {}
                message = f'admission webhook "{hook.get("name", "")}" denied the request: {status.get("message", "")}'
                raise ApiError(int(status.get("code") or 400), message)
            if response.get("patchType") == "JSONPatch" and response.get("patch"):
                obj = patches.json_patch(obj, json.loads(base64.b64decode(response["patch"])))
    return dict(obj)
