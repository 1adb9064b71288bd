"""``as=Table`` answers: the columns kubectl prints, computed server-side as the real API server does.

Custom resources ask ``CustomResource.table`` (their additionalPrinterColumns); built-in kinds get
the familiar columns, with the ``-o wide`` extras at priority 1.
"""

from __future__ import annotations

import time
from calendar import timegm
from typing import Any

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.registry import ResourceType
from sidecar.sandbox.apiserver.selectors import field_value

Column = tuple[str, str, int]  # name, type, priority


def age(stamp: str | None) -> str:
    """kubectl's short duration (``5s``, ``3m``, ``2h``, ``4d``) since an RFC 3339 time (MicroTime too)."""
    if not stamp:
        return "<unknown>"
    secs = max(0, int(time.time() - timegm(time.strptime(stamp.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S"))))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size * (2 if unit != "d" else 1):
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _pod(o: Obj) -> list[Any]:
    st, spec = o.get("status", {}), o.get("spec", {})
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    phase = "Terminating" if o["metadata"].get("deletionTimestamp") else st.get("phase", "Pending")
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    return [
        f"{ready}/{len(spec.get('containers') or [])}",
        phase,
        restarts,
        age(o["metadata"].get("creationTimestamp")),
        st.get("podIP", "<none>"),
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _node(o: Obj) -> list[Any]:
    conds = {c.get("type"): c.get("status") for c in o.get("status", {}).get("conditions") or []}
    status = "Ready" if conds.get("Ready") == "True" else "NotReady" if "Ready" in conds else "Unknown"
    if o.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))) or "<none>"
    info = o.get("status", {}).get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in o.get("status", {}).get("addresses") or []}
    return [
        status,
        roles,
        age(o["metadata"].get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
    ]


def _event(o: Obj) -> list[Any]:
    """The API server's event printer (pkg/printers/internalversion printEvent): last seen, type,
    reason, object, subobject, source, message, first seen, count, name."""
    first = age(o.get("firstTimestamp") or o.get("eventTime"))
    last = age(o["lastTimestamp"]) if o.get("lastTimestamp") else first
    count = int(o.get("count") or 0) or 1
    series = o.get("series") or {}
    if series:
        last, count = age(series.get("lastObservedTime")), int(series.get("count") or 1)
    involved = o.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = o.get("source") or {}
    component = source.get("component") or o.get("reportingComponent", "")
    host = source.get("host") or o.get("reportingInstance", "")
    return [
        last,
        o.get("type", ""),
        o.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        str(o.get("message", "")).strip(),
        first,
        count,
        o["metadata"]["name"],
    ]


def _pdb(o: Obj) -> list[Any]:
    spec, st = o.get("spec", {}), o.get("status", {})
    return [
        str(spec.get("minAvailable", "N/A")),
        str(spec.get("maxUnavailable", "N/A")),
        st.get("disruptionsAllowed", 0),
        age(o["metadata"].get("creationTimestamp")),
    ]


BUILTIN: dict[str, tuple[list[Column], Any]] = {
    "Pod": (
        [
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "integer", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod,
    ),
    "Node": (
        [
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("OS-Image", "string", 1),
        ],
        _node,
    ),
    "PodDisruptionBudget": (
        [
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            ("Age", "string", 0),
        ],
        _pdb,
    ),
    "Namespace": (
        [("Status", "string", 0), ("Age", "string", 0)],
        lambda o: [field_value(o, "status.phase"), age(o["metadata"].get("creationTimestamp"))],
    ),
    "Lease": (
        [("Holder", "string", 0), ("Age", "string", 0)],
        lambda o: [field_value(o, "spec.holderIdentity"), age(o["metadata"].get("creationTimestamp"))],
    ),
    "Event": (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "integer", 1),
            ("Name", "string", 1),
        ],
        _event,
    ),
    "CustomResourceDefinition": ([("Created At", "date", 0)], lambda o: [o["metadata"].get("creationTimestamp")]),
}


def table(rt: ResourceType, objs: list[Obj], rv: int, cont: str = "") -> Obj:
    """A meta.k8s.io/v1 Table whose rows carry the full object (kubectl reads names and labels from it)."""
    if rt.custom is not None:
        out: Obj = dict(rt.custom.table(objs))
        for row, obj in zip(out.get("rows", []), objs, strict=False):
            row.setdefault("object", obj)
    else:
        cols, cells = BUILTIN.get(
            rt.kind, ([("Age", "string", 0)], lambda o: [age(o["metadata"].get("creationTimestamp"))])
        )
        # the name leads every built-in table but the events', whose printer names it last (wide only)
        lead = rt.kind != "Event"
        defs = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}] * lead
        defs += [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": n, "priority": p}
            for n, t, p in cols
        ]
        rows = [{"cells": [o["metadata"]["name"]] * lead + cells(o), "object": o} for o in objs]
        out = {"columnDefinitions": defs, "rows": rows}
    out.update({"kind": "Table", "apiVersion": "meta.k8s.io/v1"})
    out["metadata"] = {"resourceVersion": str(rv), **({"continue": cont} if cont else {})}
    return out
