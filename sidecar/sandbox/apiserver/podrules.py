"""The API server's pod rules about scheduling readiness, as the sandbox enforces them.

``spec.schedulingGates`` (Pod Scheduling Readiness, GA in Kubernetes 1.30): gates are qualified
names without duplicates, set when the pod is created and afterwards only removed; a gated pod is
created without ``spec.nodeName`` and cannot be bound (pkg/apis/core/validation/validation.go
validateSchedulingGates, validateOnlyDeletedSchedulingGates, ValidatePodCreate;
pkg/registry/core/pod/storage/storage.go setPodNodeAndMetadata). Other pod validation (container
specs, which fields an update may change) is not emulated.
"""

from __future__ import annotations

import re
from typing import Any

from sidecar.sandbox.fielderrors import Cause, cause, invalid

_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(f"^{_QUALIFIED_FMT}$")
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_QUALIFIED_FMT}')"
)
_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character "
    f"(e.g. 'example.com', regex used for validation is '{_SUBDOMAIN_FMT}')"
)


def gates(pod: dict[str, Any]) -> list[str]:
    """The names in ``spec.schedulingGates`` (empty when the pod is ready for scheduling)."""
    return [str((g or {}).get("name", "")) for g in ((pod.get("spec") or {}).get("schedulingGates") or [])]


def qualified_name_problems(value: str) -> list[str]:
    """apimachinery IsQualifiedName: ``[prefix/]name``, prefix a DNS subdomain, name at most 63 characters."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {_QUALIFIED_MSG} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    out: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                out.append("prefix part must be no more than 253 characters")
            if not _SUBDOMAIN.match(prefix):
                out.append(f"prefix part {_SUBDOMAIN_MSG}")
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if not _QUALIFIED.match(name):
        out.append(f"name part {_QUALIFIED_MSG}")
    return out


def _gate_names(names: list[str]) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, name in enumerate(names):
        at = f"spec.schedulingGates[{i}]"
        errs += [invalid(at, name, problem) for problem in qualified_name_problems(name)]
        if name in seen:
            errs.append(cause("FieldValueDuplicate", at, f'Duplicate value: "{name}"'))
        seen.add(name)
    return errs


def validate_create(pod: dict[str, Any]) -> list[Cause]:
    """Causes a pod create is refused for (422)."""
    names = gates(pod)
    errs = _gate_names(names)
    if names and (pod.get("spec") or {}).get("nodeName"):
        why = "Forbidden: cannot be set until all schedulingGates have been cleared"
        errs.append(cause("FieldValueForbidden", "spec.nodeName", why))
    return errs


def validate_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """Causes a pod update is refused for: a gate may be removed, never added (nor renamed)."""
    names = gates(new)
    errs = _gate_names(names)
    before = set(gates(old))
    for i, name in enumerate(names):
        if name not in before:
            why = f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'"
            errs.append(cause("FieldValueForbidden", f"spec.schedulingGates[{i}].name", why))
    return errs


def binding_refusal(pod: dict[str, Any]) -> str | None:
    """Why ``pods/binding`` cannot assign the pod (answered as a 409 on pods/binding), or None."""
    name, spec = pod["metadata"]["name"], pod.get("spec") or {}
    if pod["metadata"].get("deletionTimestamp"):
        return f"pod {name} is being deleted, cannot be assigned to a host"
    if spec.get("nodeName"):
        return f'pod {name} is already assigned to node "{spec["nodeName"]}"'
    if gates(pod):
        return f"pod {name} has non-empty .spec.schedulingGates"
    return None
