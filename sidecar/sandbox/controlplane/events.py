"""core/v1 Events the simulated components report, shaped as the real ones report them: Volcano's
scheduler ``Scheduled`` ("Successfully assigned ns/pod to node", component ``volcano``), the
kubelet's ``Killing`` ("Stopping container c") when a running pod is deleted. ``kubectl describe
pod`` and ``kubectl get events`` then read as on a cluster."""

from __future__ import annotations

import contextlib
import secrets
import time

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.rest import Api
from sidecar.sandbox.apiserver.store import now_iso


def record(api: Api, obj: Obj, kind_type: str, reason: str, message: str, component: str, host: str = "") -> None:
    """One Event about ``obj`` (count 1, first and last seen now); an API refusal is dropped, as a
    real component's event broadcaster drops what it cannot write."""
    meta = obj["metadata"]
    ns = meta.get("namespace") or "default"
    at = now_iso()
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        # client-go's recorder: the object's name and a hex of the time (unique per event)
        "metadata": {"name": f"{meta['name']}.{int(time.time() * 1e9):x}{secrets.token_hex(2)}", "namespace": ns},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", ""),
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "type": kind_type,
        "reason": reason,
        "message": message,
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host,
    }
    with contextlib.suppress(ApiError):
        api.create(api.registry.lookup("", "v1", "events"), ns, event)
