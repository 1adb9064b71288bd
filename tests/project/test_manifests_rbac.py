"""The watcher's RBAC as rendered: exactly the grants below, each role bound to the scheduler's
ServiceAccount, the webhook configuration and the TLS Secret limited by name. That the watcher is
allowed everything it does and granted nothing it does not use is proved against the real RBAC
authorizer and audit log: tests/realcluster/test_real_guide.py
(``test_rbac_the_watcher_is_allowed_all_it_does_and_granted_no_more``), which reads these sets."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed: the kustomize renders are not checked"
)
Grant = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)
#: (apiGroup, resource, verb) the watcher is granted cluster-wide, exactly
CLUSTER_GRANTS: set[Grant] = {
    *(("repack.volcano.sh", "repackruns", v) for v in ("get", "list", "watch", "create", "delete")),
    ("repack.volcano.sh", "repackruns/status", "update"),
    *(("repack.volcano.sh", "repackpolicies", v) for v in ("get", "list", "watch")),
    ("repack.volcano.sh", "repackpolicies/status", "update"),
    ("scheduling.volcano.sh", "podgroups", "get"),
    *(("", "pods", v) for v in ("get", "list", "watch", "patch")),
    ("", "pods/status", "patch"),
    ("", "pods/eviction", "create"),
    *((g, r, v) for g, r in (("", "nodes"), ("", "namespaces"), ("scheduling.volcano.sh", "podgroups"),
                             ("policy", "poddisruptionbudgets")) for v in ("list", "watch")),
    ("", "events", "create"),
    *(("admissionregistration.k8s.io", "mutatingwebhookconfigurations", v) for v in ("get", "patch")),
}  # fmt: skip
#: in volcano-system only (the leader-election Lease)
LEASE_GRANTS: set[Grant] = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
#: in volcano-system only (the webhook's certificate Secret: get and update by name, create)
TLS_GRANTS: set[Grant] = {("", "secrets", v) for v in ("get", "create", "update")}
#: grants the guide's steps on the real control plane need not exercise, each with the code path that uses it
UNEXERCISED: dict[Grant, str] = {}
SUBJECT = [{"kind": "ServiceAccount", "name": "volcano-scheduler", "namespace": "volcano-system"}]


def render(directory: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "manifests" / directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def grants(rules: list[dict[str, Any]]) -> set[Grant]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_rbac_grants_the_watcher_what_it_needs_and_no_more() -> None:
    objs = render("rbac")
    role = one(objs, "ClusterRole", "repack-watcher")
    assert grants(role["rules"]) == CLUSTER_GRANTS
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert [(r["resources"], r["resourceNames"]) for r in named] == [
        (["mutatingwebhookconfigurations"], ["repack-placement-gate"])
    ], "only the webhook configuration is limited by name (its CA injection)"
    tls = one(objs, "Role", "repack-webhook-tls")
    assert tls["metadata"]["namespace"] == "volcano-system" and grants(tls["rules"]) == TLS_GRANTS
    assert [r.get("resourceNames") for r in tls["rules"]] == [None, ["repack-webhook-tls"]], "create: no name"
    tls_binding = one(objs, "RoleBinding", "repack-webhook-tls")
    assert tls_binding["subjects"] == SUBJECT and tls_binding["roleRef"]["name"] == "repack-webhook-tls"
    binding = one(objs, "ClusterRoleBinding", "repack-watcher")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "repack-watcher",
    }
    assert binding["subjects"] == SUBJECT
    lease = one(objs, "Role", "repack-watcher-lease")
    assert lease["metadata"]["namespace"] == "volcano-system" and grants(lease["rules"]) == LEASE_GRANTS
    lease_binding = one(objs, "RoleBinding", "repack-watcher-lease")
    assert lease_binding["metadata"]["namespace"] == "volcano-system" and lease_binding["subjects"] == SUBJECT
    assert lease_binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                        "name": "repack-watcher-lease"}  # fmt: skip
    assert set(UNEXERCISED) <= CLUSTER_GRANTS | LEASE_GRANTS | TLS_GRANTS, "a reason for a grant that does not exist"
