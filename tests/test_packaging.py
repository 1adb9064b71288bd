"""What ships: the package installs without a C compiler and then runs on the Python twins; the wheel
carries the CRDs; the kustomize manifests render the scheduler pod with the sidecar and the watcher, and
RBAC that covers what the watcher does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_builds_without_a_compiler(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    pytest.importorskip("Cython")
    env = {**os.environ, "CC": "/bin/false", "CXX": "/bin/false"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".so")], "a kernel was built with no compiler?"
    assert "sidecar/data/guide-ascend.json" in names
    for crd in ("repack.volcano.sh_repackruns", "scheduling.volcano.sh_podgroups", "batch.volcano.sh_jobs"):
        assert f"sidecar/data/crd/{crd}.yaml" in names, "sandbox serve --load registers these CRDs"
    assert "sidecar/api/v1alpha1/service_pb2.pyi" in names
    assert "sidecar/py.typed" in names


def test_python_twins_answer_like_the_kernels() -> None:
    code = (
        "from sidecar.dispatch import kernels_built; assert not kernels_built();"
        "from sidecar.cli import main; raise SystemExit(main(['evaluate', '--snapshot', "
        "'sidecar/data/guide-ascend.json', '-o', 'json']))"
    )
    twin = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "REPACK_KERNELS": "python"},
    )
    assert twin.returncode == 0, twin.stderr
    default = subprocess.run(
        [sys.executable, "-m", "sidecar", "evaluate", "--snapshot", "sidecar/data/guide-ascend.json", "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert twin.stdout == default.stdout


# -- deployment manifests (kustomize) ----------------------------------------------------------------
needs_kubectl = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed: the kustomize renders are not checked"
)
RESTRICTED = {
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
WATCHER_ARGS = ["watch", "--sidecar", "127.0.0.1:50151", "--lease-namespace", "volcano-system",
                "--lease-name", "repack-watcher"]  # fmt: skip
#: (apiGroup, resource, verb) the watcher needs cluster-wide, exactly
CLUSTER_GRANTS = {
    *(("repack.volcano.sh", "repackruns", v) for v in ("get", "list", "watch", "delete")),
    *(("repack.volcano.sh", "repackruns/status", v) for v in ("get", "update", "patch")),
    *(("", "pods", v) for v in ("get", "list", "watch", "patch")),
    *(("", "pods/status", v) for v in ("patch", "update")),
    ("", "pods/eviction", "create"),
    *((g, r, v) for g, r in (("", "nodes"), ("", "namespaces"), ("scheduling.volcano.sh", "podgroups"),
                             ("policy", "poddisruptionbudgets")) for v in ("get", "list", "watch")),
    *((g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")),
}  # fmt: skip
LEASE_GRANTS = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
SUBJECT = [{"kind": "ServiceAccount", "name": "volcano-scheduler", "namespace": "volcano-system"}]


def render(directory: str) -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/<directory>`` (kubectl's built-in kustomize), parsed."""
    done = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "manifests" / directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


@needs_kubectl
@pytest.mark.parametrize(
    ("directory", "kinds"),
    [
        ("crd", ["CustomResourceDefinition"]),
        ("rbac", ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]),
        ("sidecar", ["Deployment"]),
        ("default", ["ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Role",
                     "RoleBinding"]),
    ],
)  # fmt: skip
def test_every_kustomization_renders(directory: str, kinds: list[str]) -> None:
    objs = render(directory)
    assert sorted(o["kind"] for o in objs) == kinds
    if directory == "crd":  # Volcano's own PodGroup/Job CRDs stay on a cluster: only RepackRun is installed
        assert [o["metadata"]["name"] for o in objs] == ["repackruns.repack.volcano.sh"]


@needs_kubectl
def test_the_scheduler_pod_gets_the_sidecar_and_the_watcher() -> None:
    deployment = one(render("default"), "Deployment", "volcano-scheduler")
    assert deployment["metadata"]["namespace"] == "volcano-system"
    template = deployment["spec"]["template"]
    pod = template["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"volcano-scheduler", "repack-sidecar", "repack-watcher"}
    assert template["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == "volcano-scheduler"
    sidecar, watcher = containers["repack-sidecar"], containers["repack-watcher"]
    assert watcher["args"] == WATCHER_ARGS and not any("kubeconfig" in a for a in watcher["args"]), "in-cluster"
    assert watcher["image"] == sidecar["image"]
    assert sidecar["args"][:5] == ["serve", "--host", "127.0.0.1", "--port", "50151"], "the watcher's --sidecar"
    assert pod["serviceAccountName"] == "volcano-scheduler", "the account the RBAC is bound to"
    for c in (sidecar, watcher):
        context = dict(c["securityContext"])
        seccomp = context.pop("seccompProfile", None) or (pod.get("securityContext") or {}).get("seccompProfile")
        assert context == RESTRICTED and seccomp == {"type": "RuntimeDefault"}, c["name"]
    assert "securityContext" not in containers["volcano-scheduler"], "the chart's container is left as rendered"


@needs_kubectl
def test_rbac_grants_the_watcher_what_it_needs_and_no_more() -> None:
    objs = render("rbac")
    role = one(objs, "ClusterRole", "repack-watcher")
    assert grants(role["rules"]) == CLUSTER_GRANTS
    assert not any(r.get("resourceNames") for r in role["rules"])
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


#: API group of each resource the sandbox audits (its audit log names resources by plural)
_GROUP_OF = {"repackruns": "repack.volcano.sh", "podgroups": "scheduling.volcano.sh", "leases": "coordination.k8s.io",
             "poddisruptionbudgets": "policy"}  # fmt: skip


@needs_kubectl
def test_the_watcher_makes_only_requests_its_rbac_allows(tmp_path: Path) -> None:
    """The watcher's requests on the sandbox (a DryRun planned, then deleted by its TTL), each checked
    against the rendered roles: a request the roles would refuse fails here before a cluster says 403."""
    from datetime import UTC, datetime, timedelta

    from kubernetes import config

    from sidecar.sandbox.apiserver import ApiServer
    from sidecar.snapshot.io import load_snapshot
    from sidecar.watcher.controller import Controller, dry_run
    from sidecar.watcher.dryrun import InProcessPlanner
    from sidecar.watcher.ttl import TTLReconciler

    objs = render("rbac")
    run = yaml.safe_load((ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml").read_text())
    run["spec"]["ttlSecondsAfterFinished"] = 0
    with ApiServer() as api:
        api.load(load_snapshot(ROOT / "sidecar" / "data" / "guide-ascend.json"))
        api.create(run, keep_status=False)
        api.audit.clear()
        k8s = config.new_client_from_config(str(api.kubeconfig(tmp_path / "kubeconfig")))
        try:
            assert Controller(k8s, [dry_run(k8s, InProcessPlanner())]).run_once() == {
                run["metadata"]["name"]: "Succeeded"
            }
            finished = api.api.get(api.registry.by_kind(run["apiVersion"], "RepackRun"), "", run["metadata"]["name"])
            later = datetime.now(UTC) + timedelta(days=1)
            assert TTLReconciler(k8s, clock=lambda: later).reconcile(finished) == "Deleted"
        finally:
            k8s.close()
        records = [r for r in api.audit.records() if not r.resource.startswith("/")]
    assert_allowed(records, objs)


def assert_allowed(records: list[Any], objs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every audited request is one the rendered roles grant (Leases only in volcano-system); returns
    the (apiGroup, resource, verb) triples used."""
    allowed = grants(one(objs, "ClusterRole", "repack-watcher")["rules"])
    lease_allowed = grants(one(objs, "Role", "repack-watcher-lease")["rules"])
    assert records, "the watcher made no request?"
    used = set()
    for r in records:
        resource = f"{r.resource}/{r.subresource}" if r.subresource else r.resource
        need = (_GROUP_OF.get(r.resource, ""), resource, r.verb)
        used.add(need)
        if r.resource == "leases":
            assert r.namespace == "volcano-system" and need in lease_allowed, r
        else:
            assert need in allowed, r
    return used


@needs_kubectl
def test_an_execute_run_with_leader_election_makes_only_requests_its_rbac_allows(tmp_path: Path) -> None:
    """The deployed shape: informers, the Lease elector and the event-driven controller with
    ``runner.reconcilers`` run the guide's Execute run on the sandbox with its control plane (rebuilt
    pods gated), the TTL then deletes it; every request is checked against the rendered roles, and the
    requests Execute needs (evictions, nominations, gate removals, Lease writes) are among them."""
    from kubernetes import config

    from sidecar.sandbox.apiserver import ApiServer
    from sidecar.sandbox.controlplane import ControlPlaneConfig
    from sidecar.watcher.args import ExecuteFlags, WatchOptions
    from sidecar.watcher.cluster import ClusterCache
    from sidecar.watcher.controller import Controller
    from sidecar.watcher.dryrun import InProcessPlanner
    from sidecar.watcher.informer import Backoff
    from sidecar.watcher.lease import LeaderElector, LeaseConfig
    from sidecar.watcher.placement import PLACEMENT_GATE
    from sidecar.watcher.runner import reconcilers
    from tests.execute_fixtures import execute_run, guide_objects
    from tests.sandbox_fixtures import wait_for

    objs = render("rbac")
    run = execute_run(ttlSecondsAfterFinished=0)
    name = run["metadata"]["name"]
    phases: list[str] = []

    def note(key: str, event: tuple[str, dict[str, Any], int]) -> None:  # under the store lock: note only
        if key == "repack.volcano.sh/repackruns" and event[1]["metadata"]["name"] == name:
            phases.append(event[0] if event[0] == "DELETED" else (event[1].get("status") or {}).get("phase", ""))

    conf = ControlPlaneConfig(scheduler_period=0.05, rebuild_gates=(PLACEMENT_GATE,))
    with ApiServer(history=500, control_plane=conf) as api:
        api.load(guide_objects(grace=0))
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
        api.store.listeners.append(note)
        api.audit.clear()
        k8s = config.new_client_from_config(str(api.kubeconfig(tmp_path / "kubeconfig")))
        options = WatchOptions(execute=ExecuteFlags(cooldown=0.0))
        cache = ClusterCache(k8s, backoff=Backoff(initial=0.05, cap=0.5))
        controller = Controller(k8s, reconcilers(k8s, InProcessPlanner(), cache, options), cache=cache, period=0.2)
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
            cache.stop()
            k8s.close()
    records = [r for r in api.audit.records() if not r.resource.startswith("/")]
    assert "Succeeded" in phases, phases
    used = assert_allowed(records, objs)
    needed = {
        ("", "pods/eviction", "create"),
        ("", "pods/status", "patch"),  # status.nominatedNodeName
        ("", "pods", "patch"),  # the placement gate removed
        ("", "events", "create"),
        ("repack.volcano.sh", "repackruns/status", "update"),
        ("repack.volcano.sh", "repackruns", "delete"),
        *(("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
        *((g, r, v) for g, r in (("", "pods"), ("", "nodes"), ("", "namespaces"), ("repack.volcano.sh", "repackruns"),
                                 ("scheduling.volcano.sh", "podgroups"), ("policy", "poddisruptionbudgets"))
          for v in ("list", "watch")),
    }  # fmt: skip
    assert needed <= used, needed - used
