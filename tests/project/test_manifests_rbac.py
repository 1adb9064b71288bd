"""The watcher's RBAC, least privilege in both directions, proved on the sandbox API server's audit log:
the watcher runs a DryRun (then its TTL deletes it) and, in the deployed shape (informers, Lease
election, the event-driven controller), an Execute run with gated rebuilt pods (then its TTL); every
request it makes is granted by the rendered roles, and every rendered grant is used by one of those
runs or listed in ``UNEXERCISED`` with the code path that needs it."""

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
    *(("repack.volcano.sh", "repackruns", v) for v in ("get", "list", "watch", "delete")),
    ("repack.volcano.sh", "repackruns/status", "update"),
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
#: grants the sandbox runs below need not exercise, each with the code path that uses it on a cluster
UNEXERCISED: dict[Grant, str] = {}
SUBJECT = [{"kind": "ServiceAccount", "name": "volcano-scheduler", "namespace": "volcano-system"}]
#: API group of each resource the sandbox audits (its audit log names resources by plural)
_GROUP_OF = {"repackruns": "repack.volcano.sh", "podgroups": "scheduling.volcano.sh", "leases": "coordination.k8s.io",
             "poddisruptionbudgets": "policy",
             "mutatingwebhookconfigurations": "admissionregistration.k8s.io"}  # fmt: skip


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


def _requests(records: list[Any]) -> list[tuple[Grant, Any]]:
    out = []
    for r in records:
        if r.resource.startswith("/"):  # discovery, /version...
            continue
        resource = f"{r.resource}/{r.subresource}" if r.subresource else r.resource
        out.append(((_GROUP_OF.get(r.resource, ""), resource, r.verb), r))
    return out


def _dry_run_then_ttl(tmp_path: Path) -> list[Any]:
    """The watcher's start on a fresh install (its webhook certificate issued, the CA injected), a
    DryRun planned by ``Controller.run_once``, then deleted by its TTL."""
    from datetime import UTC, datetime, timedelta

    from kubernetes import config

    from sidecar.cli.localgate import free_port, local_flags
    from sidecar.sandbox.apiserver import ApiServer
    from sidecar.snapshot.io import load_snapshot
    from sidecar.watcher.args import LeaseFlags, WatchOptions
    from sidecar.watcher.cluster import ClusterCache
    from sidecar.watcher.controller import Controller, dry_run
    from sidecar.watcher.gates import configuration
    from sidecar.watcher.planner import InProcessPlanner
    from sidecar.watcher.runner import placement_gate, serve_webhook
    from sidecar.watcher.ttl import TTLReconciler

    run = yaml.safe_load((ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml").read_text())
    run["spec"]["ttlSecondsAfterFinished"] = 0
    with ApiServer() as api:
        api.load(load_snapshot(ROOT / "sidecar" / "data" / "guide-ascend.json"))
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
        api.create(configuration({"service": {"name": "repack-webhook", "namespace": "volcano-system"}}))
        api.create(run, keep_status=False)
        api.audit.clear()
        k8s = config.new_client_from_config(str(api.kubeconfig(tmp_path / "kubeconfig")))
        # a first install: the watcher issues its webhook certificate (create) and injects the CA
        options = WatchOptions(lease=LeaseFlags(namespace="volcano-system"), webhook=local_flags(free_port()))
        serve_webhook(k8s, options, placement_gate(k8s, ClusterCache(k8s), 60.0)[0]).close()
        try:
            assert Controller(k8s, [dry_run(k8s, InProcessPlanner())]).run_once() == {
                run["metadata"]["name"]: "Succeeded"
            }
            finished = api.api.get(api.registry.by_kind(run["apiVersion"], "RepackRun"), "", run["metadata"]["name"])
            later = datetime.now(UTC) + timedelta(days=1)
            assert TTLReconciler(k8s, clock=lambda: later).reconcile(finished).phase == "Deleted"
        finally:
            k8s.close()
    return list(api.audit.records())


def _execute_with_leader_election(tmp_path: Path) -> list[Any]:
    """The deployed shape: informers, the Lease elector, the event-driven controller with
    ``runner.reconcilers`` and the placement gate's webhook (its Secret issued, its CA injected into
    the configuration an operator applied, the sandbox calling it over HTTPS) run the guide's Execute
    run on the sandbox with its control plane; the TTL then deletes it."""
    from kubernetes import config

    from sidecar.cli.localgate import free_port, local_flags
    from sidecar.sandbox.apiserver import ApiServer
    from sidecar.sandbox.controlplane import ControlPlaneConfig
    from sidecar.watcher import certs
    from sidecar.watcher.args import ExecuteFlags, LeaseFlags, WatchOptions
    from sidecar.watcher.cluster import ClusterCache
    from sidecar.watcher.controller import Controller
    from sidecar.watcher.gates import configuration
    from sidecar.watcher.informer import Backoff
    from sidecar.watcher.lease import LeaderElector, LeaseConfig
    from sidecar.watcher.planner import InProcessPlanner
    from sidecar.watcher.runner import placement_gate, reconcilers, serve_webhook
    from sidecar.watcher.status import utcnow
    from tests.execute_fixtures import execute_run, guide_objects
    from tests.sandbox_fixtures import wait_for

    run = execute_run(ttlSecondsAfterFinished=0)
    name = run["metadata"]["name"]
    phases: list[str] = []

    gated: list[str] = []

    def note(key: str, event: tuple[str, dict[str, Any], int]) -> None:  # under the store lock: note only
        if key == "/pods" and event[0] == "ADDED" and (event[1].get("spec") or {}).get("schedulingGates"):
            gated.append(event[1]["metadata"]["name"])
        if key == "repack.volcano.sh/repackruns" and event[1]["metadata"]["name"] == name:
            phases.append(event[0] if event[0] == "DELETED" else (event[1].get("status") or {}).get("phase", ""))

    conf = ControlPlaneConfig(scheduler_period=0.05)
    port = free_port()
    with ApiServer(history=500, control_plane=conf) as api:
        api.load(guide_objects(grace=0))
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
        api.create(configuration({"url": f"https://127.0.0.1:{port}/mutate-pods"}))  # the operator's install
        # a certificate from an earlier install that lacks the name this one is called by: renewed (update)
        old = certs.issue(["repack-webhook.volcano-system.svc"], utcnow())
        api.create(certs.secret_object("volcano-system", "repack-webhook-tls", old, ""))
        api.store.listeners.append(note)
        api.audit.clear()
        k8s = config.new_client_from_config(str(api.kubeconfig(tmp_path / "kubeconfig")))
        options = WatchOptions(
            execute=ExecuteFlags(cooldown=0.0), lease=LeaseFlags(namespace="volcano-system"), webhook=local_flags(port)
        )
        cache = ClusterCache(k8s, backoff=Backoff(initial=0.05, cap=0.5))
        gates, lifter = placement_gate(k8s, cache, options.webhook.gate_timeout)
        controller = Controller(k8s, reconcilers(k8s, InProcessPlanner(), cache, options), cache=cache, period=0.2,
                                chores=[lifter])  # fmt: skip
        webhook = serve_webhook(k8s, options, gates)
        lease = LeaseConfig(namespace="volcano-system", lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
        elector = LeaderElector(
            k8s, lease, on_started_leading=controller.start_leading, on_stopped_leading=controller.stop_leading
        )
        cache.start()
        elector.start()
        try:
            wait_for(elector.is_leader, timeout=10)
            api.create(run, keep_status=False)
            wait_for(lambda: "DELETED" in phases, timeout=30)  # Succeeded, then deleted by its TTL
        finally:
            elector.stop()  # stops the worker, then releases the Lease
            webhook.close()
            cache.stop()
            k8s.close()
    # after the server stopped: a watch is audited when it ends
    assert "Succeeded" in phases, phases
    assert gated == ["ascend-batch-training-worker-0", "ascend-batch-training-worker-1"], "created behind the gate"
    return list(api.audit.records())


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[Grant, Any]]]:
    """Every request of each watcher run, from the sandbox's audit log (run once for the module)."""
    return {
        "dryrun+ttl": _requests(_dry_run_then_ttl(tmp_path_factory.mktemp("dryrun"))),
        "execute+lease+ttl": _requests(_execute_with_leader_election(tmp_path_factory.mktemp("execute"))),
    }


def test_every_request_the_watcher_makes_is_granted(audited: dict[str, list[tuple[Grant, Any]]]) -> None:
    """A request the roles would refuse fails here before a cluster says 403."""
    objs = render("rbac")
    allowed = grants(one(objs, "ClusterRole", "repack-watcher")["rules"])
    lease_allowed = grants(one(objs, "Role", "repack-watcher-lease")["rules"])
    tls_allowed = grants(one(objs, "Role", "repack-webhook-tls")["rules"])
    for scenario, requests in audited.items():
        assert requests, f"{scenario}: the watcher made no request?"
        for need, record in requests:
            if need[1] == "leases":
                assert record.namespace == "volcano-system" and need in lease_allowed, (scenario, record)
            elif need[1] == "secrets":
                assert record.namespace == "volcano-system" and need in tls_allowed, (scenario, record)
                assert need[2] == "create" or record.name == "repack-webhook-tls", (scenario, record)
            elif need[1] == "mutatingwebhookconfigurations":
                assert need in allowed and record.name == "repack-placement-gate", (scenario, record)
            else:
                assert need in allowed, (scenario, record)


def test_every_grant_is_used_by_some_watcher_path(audited: dict[str, list[tuple[Grant, Any]]]) -> None:
    """No grant is there 'just in case': each is exercised by a run above, or named in UNEXERCISED with
    the path that needs it."""
    objs = render("rbac")
    granted = (
        grants(one(objs, "ClusterRole", "repack-watcher")["rules"])
        | grants(one(objs, "Role", "repack-watcher-lease")["rules"])
        | grants(one(objs, "Role", "repack-webhook-tls")["rules"])
    )
    used = {need for requests in audited.values() for need, _ in requests}
    unused = granted - used - set(UNEXERCISED)
    assert not unused, f"granted but never used: {sorted(unused)}"
    assert not (set(UNEXERCISED) & used), "UNEXERCISED lists a grant a run does use: drop it from the list"
    # the Execute path's own needs are among what it used
    execute = {need for need, _ in audited["execute+lease+ttl"]}
    assert {
        ("", "pods/eviction", "create"),
        ("", "pods/status", "patch"),  # status.nominatedNodeName
        ("", "pods", "patch"),  # the placement gate removed
        *(("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
    } <= execute
