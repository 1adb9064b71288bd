"""The kustomize manifests: the base renders only objects this project owns, the Components patch the
user's render of Volcano's chart (never a placeholder), the scheduler pod gets the sidecar and the
watcher with HTTP probes and a restricted security context, the scheduler conf gains the extender
plugin, every render validates offline against the Kubernetes schemas, and the watcher's RBAC is
exactly what its code paths use (tests/realcluster/test_real_guide.py proves that under kube-apiserver's RBAC
authorizer and audit log)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
CHART = ROOT / "tests" / "fixtures" / "volcano-chart.yaml"
#: the Kubernetes version the schemas are checked against (kubectl v1.32's)
KUBE_VERSION = "1.32.0"

needs_kubectl = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed: the kustomize renders are not checked"
)
RESTRICTED = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
IMAGE = "ghcr.io/volcano-repack/repack-sidecar:0.1.0"
WATCHER_ARGS = ["watch", "--sidecar", "127.0.0.1:50151", "--metrics-port", "9465", "--lease-namespace",
                "volcano-system", "--lease-name", "repack-watcher", "--webhook-port", "9443",
                "--gate-timeout", "60"]  # fmt: skip
#: each container's metrics port: /metrics, /healthz (liveness), /readyz (readiness)
METRICS_PORT = {"repack-sidecar": 9464, "repack-watcher": 9465}
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
#: every argument Volcano's extender plugin reads (volcano-sh/volcano
#: pkg/scheduler/plugins/extender/extender.go, parseExtenderConfig, at ed72c7c8)
EXTENDER_ARGUMENTS = {
    f"extender.{a}"
    for a in ("urlPrefix", "httpTimeout", "onSessionOpenVerb", "onSessionCloseVerb", "predicateVerb",
              "prioritizeVerb", "preemptableVerb", "reclaimableVerb", "queueOverusedVerb", "jobEnqueueableVerb",
              "jobEnqueuedVerb", "jobReadyVerb", "allocateFuncVerb", "deallocateFuncVerb", "ignorable",
              "managedResources")
}  # fmt: skip


def kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60)


def render(directory: str | Path) -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/<directory>`` (kubectl's built-in kustomize), parsed."""
    done = kustomize(MANIFESTS / directory)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """manifests/overlays/volcano-chart rendered as a user would: a copy of manifests/ with the chart's
    render (tests/fixtures/volcano-chart.yaml) saved as the overlay's volcano-chart.yaml."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the kustomize renders are not checked")
    copy = tmp_path_factory.mktemp("manifests") / "manifests"
    shutil.copytree(MANIFESTS, copy)
    shutil.copyfile(CHART, copy / "overlays" / "volcano-chart" / "volcano-chart.yaml")
    return render(copy / "overlays" / "volcano-chart")


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def chart() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(CHART.read_text()) if d]


# -- what renders, and what cannot -------------------------------------------------------------------
@needs_kubectl
@pytest.mark.parametrize(
    ("directory", "kinds"),
    [
        ("crd", ["CustomResourceDefinition", "CustomResourceDefinition"]),
        ("rbac", ["ClusterRole", "ClusterRoleBinding", "Role", "Role", "RoleBinding", "RoleBinding"]),
        ("webhook", ["MutatingWebhookConfiguration", "Service"]),
        (
            "default",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "MutatingWebhookConfiguration",
                "Role",
                "Role",
                "RoleBinding",
                "RoleBinding",
                "Service",
            ],
        ),
    ],
)
def test_every_base_renders_only_objects_this_project_owns(directory: str, kinds: list[str]) -> None:
    objs = render(directory)
    assert sorted(o["kind"] for o in objs) == kinds
    if directory == "crd":  # Volcano's own PodGroup/Job CRDs stay on a cluster: only the project's are installed
        assert [o["metadata"]["name"] for o in objs] == [
            "repackpolicies.repack.volcano.sh",
            "repackruns.repack.volcano.sh",
        ]


@needs_kubectl
@pytest.mark.parametrize("directory", ["sidecar", "extender", "plugin", "overlays/volcano-chart"])
def test_nothing_stands_in_for_the_users_scheduler(directory: str) -> None:
    """The Components create nothing, and the example overlay does not render until the user saves
    their own chart render in it: no object of ours can overwrite the live Deployment or ConfigMap."""
    render_path = MANIFESTS / "overlays" / "volcano-chart" / "volcano-chart.yaml"
    tracked = subprocess.run(["git", "ls-files", str(render_path)], capture_output=True, text=True, cwd=ROOT)
    assert not tracked.stdout.strip(), "a chart render was committed"
    if directory.startswith("overlays/") and render_path.exists():
        pytest.skip(f"{render_path} is your own render (git-ignored): the overlay renders it")
    done = kustomize(MANIFESTS / directory)
    assert done.returncode != 0 or not [d for d in yaml.safe_load_all(done.stdout) if d], done.stdout
    for path in MANIFESTS.rglob("*.yaml"):
        text = yaml.safe_load_all(path.read_text())
        if path.name == "scheduler-sidecar-patch.yaml":
            continue  # a patch (kustomize patches: / kubectl patch --patch-file), never a resource
        assert not [d for d in text if d and d.get("kind") in ("Deployment", "ConfigMap")], path


@needs_kubectl
def test_the_overlay_renders_the_chart_with_our_objects(overlay: list[dict[str, Any]]) -> None:
    ours = sorted((o["kind"], o["metadata"]["name"]) for o in render("default"))
    theirs = sorted((o["kind"], o["metadata"]["name"]) for o in chart())
    assert sorted((o["kind"], o["metadata"]["name"]) for o in overlay) == sorted(ours + theirs)
    for obj in chart():  # only the Deployment and the ConfigMap are changed
        if obj["kind"] not in ("Deployment", "ConfigMap"):
            assert one(overlay, obj["kind"], obj["metadata"]["name"]) == obj


# -- the scheduler pod -------------------------------------------------------------------------------
def _pod_checks(deployment: dict[str, Any]) -> None:
    original = one(chart(), "Deployment", "volcano-scheduler")
    assert deployment["metadata"]["namespace"] == "volcano-system"
    template, pod = deployment["spec"]["template"], deployment["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"volcano-scheduler", "repack-sidecar", "repack-watcher"}
    (scheduler,) = original["spec"]["template"]["spec"]["containers"]
    assert containers["volcano-scheduler"] == scheduler, "the chart's container is left as rendered"
    assert {k: v for k, v in pod.items() if k not in ("containers", "volumes")} == {
        k: v for k, v in original["spec"]["template"]["spec"].items() if k not in ("containers", "volumes")
    }, "pod-level fields (securityContext, serviceAccount...) are the chart's"
    assert template["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == "volcano-scheduler"
    sidecar, watcher = containers["repack-sidecar"], containers["repack-watcher"]
    assert watcher["args"] == WATCHER_ARGS and not any("kubeconfig" in a for a in watcher["args"]), "in-cluster"
    assert sidecar["image"] == watcher["image"] == IMAGE, "one image for both"
    assert sidecar["args"][:5] == ["serve", "--host", "127.0.0.1", "--port", "50151"], "the watcher's --sidecar"
    assert _flag(sidecar["args"], "--metrics-port") == "9464" and _flag(sidecar["args"], "--extender-port") == "8008"
    for name, c in containers.items():
        if name == "volcano-scheduler":
            continue
        assert c["securityContext"] == RESTRICTED, name
        assert c["resources"]["requests"].keys() == {"cpu", "memory"} and "memory" in c["resources"]["limits"], name
        port = c["ports"][0]
        assert port["containerPort"] == METRICS_PORT[name], name
        for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            assert c[probe]["httpGet"] == {"path": path, "port": port["name"]}, (name, probe)
            assert "exec" not in c[probe] and c[probe]["timeoutSeconds"] >= 2, (name, probe)
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert "/tmp" in mounts, f"{name}: a writable /tmp under a read-only root filesystem"
    # the sidecar has no API credentials: an empty dir where the ServiceAccount token would be mounted
    token = [m for m in sidecar["volumeMounts"] if m["mountPath"] == TOKEN_PATH]
    assert token and token[0]["readOnly"] is True
    assert TOKEN_PATH not in {m["mountPath"] for m in watcher["volumeMounts"]}, "the watcher needs its token"
    assert [p["name"] for p in sidecar["ports"]] == ["repack-metrics"], "the sidecar listens on loopback only"
    assert watcher["ports"][1:] == [{"name": "repack-webhook", "containerPort": 9443, "protocol": "TCP"}]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert {v["name"] for v in original["spec"]["template"]["spec"]["volumes"]} <= set(volumes), "chart's kept"
    assert "emptyDir" in volumes[token[0]["name"]]
    assert pod.get("serviceAccountName", pod.get("serviceAccount")) == "volcano-scheduler", "RBAC's subject"


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@needs_kubectl
def test_the_component_adds_the_sidecar_and_the_watcher(overlay: list[dict[str, Any]]) -> None:
    _pod_checks(one(overlay, "Deployment", "volcano-scheduler"))


@needs_kubectl
def test_kubectl_patch_on_a_live_deployment_gives_the_same_pod(overlay: list[dict[str, Any]], tmp_path: Path) -> None:
    """The documented live-cluster path, ``kubectl patch deployment volcano-scheduler --type strategic
    --patch-file manifests/sidecar/scheduler-sidecar-patch.yaml``, run with ``--local`` on the chart's
    Deployment: the same pod as the kustomize Component renders."""
    live = tmp_path / "deployment.yaml"
    live.write_text(yaml.safe_dump(one(chart(), "Deployment", "volcano-scheduler")))
    done = subprocess.run(
        ["kubectl", "patch", "--local", "-f", str(live), "--type", "strategic", "--patch-file",
         str(MANIFESTS / "sidecar" / "scheduler-sidecar-patch.yaml"), "-o", "yaml"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    patched = yaml.safe_load(done.stdout)
    _pod_checks(patched)
    rendered = one(overlay, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]

    def by_name(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {i["name"]: i for i in items}

    spec = patched["spec"]["template"]["spec"]
    assert by_name(spec["containers"]) == by_name(rendered["containers"])
    assert by_name(spec["volumes"]) == by_name(rendered["volumes"])


# -- the scheduler conf: the extender plugin -----------------------------------------------------------
@needs_kubectl
def test_the_scheduler_conf_gains_the_extender_tier(overlay: list[dict[str, Any]]) -> None:
    data = one(overlay, "ConfigMap", "volcano-scheduler-configmap")["data"]
    assert set(data) == {"volcano-scheduler.conf"}
    assert data["volcano-scheduler.conf"] == (MANIFESTS / "extender" / "volcano-scheduler.conf").read_text()
    conf = yaml.safe_load(data["volcano-scheduler.conf"])
    default = yaml.safe_load(one(chart(), "ConfigMap", "volcano-scheduler-configmap")["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == default["actions"] and conf["tiers"][:-1] == default["tiers"], "the chart's default"
    (extender,) = conf["tiers"][-1]["plugins"]
    assert extender["name"] == "extender"
    arguments = extender["arguments"]
    assert set(arguments) <= EXTENDER_ARGUMENTS, set(arguments) - EXTENDER_ARGUMENTS
    containers = one(overlay, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]["containers"]
    (sidecar,) = [c for c in containers if c["name"] == "repack-sidecar"]
    assert arguments["extender.urlPrefix"] == f"http://127.0.0.1:{_flag(sidecar['args'], '--extender-port')}"
    assert arguments["extender.ignorable"] is True, "a sidecar outage must never stop scheduling"
    assert arguments["extender.onSessionOpenVerb"] == "onSessionOpen"
    assert arguments["extender.onSessionCloseVerb"] == "onSessionClose"
    assert "predicateVerb" not in str(arguments) and "prioritizeVerb" not in str(arguments), "opt-in only"
    assert arguments["extender.httpTimeout"] == "1s"


# -- the scheduler conf and image: the repack plugin --------------------------------------------------
def plugin_arguments() -> set[str]:
    """Every argument go/plugin/repack reads (its Arg* constants): the one place they are written."""
    source = (ROOT / "go" / "plugin" / "repack" / "plugin.go").read_text()
    return set(re.findall(r'^\s*Arg\w+\s*=\s*"(repack\.\w+)"', source, re.MULTILINE))


@needs_kubectl
def test_the_plugin_component_swaps_the_image_and_adds_the_repack_tier(tmp_path: Path) -> None:
    """The overlay with ../../plugin in place of ../../extender, as manifests/README.md says."""
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    shutil.copyfile(CHART, copy / "overlays" / "volcano-chart" / "volcano-chart.yaml")
    kustomization = copy / "overlays" / "volcano-chart" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("- ../../extender", "- ../../plugin"))
    objs = render(copy / "overlays" / "volcano-chart")
    data = one(objs, "ConfigMap", "volcano-scheduler-configmap")["data"]
    assert data["volcano-scheduler.conf"] == (MANIFESTS / "plugin" / "volcano-scheduler.conf").read_text()
    conf = yaml.safe_load(data["volcano-scheduler.conf"])
    default = yaml.safe_load(one(chart(), "ConfigMap", "volcano-scheduler-configmap")["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == default["actions"] and conf["tiers"][:-1] == default["tiers"], "the chart's default"
    (repack,) = conf["tiers"][-1]["plugins"]
    assert repack["name"] == "repack"
    known = plugin_arguments()
    assert len(known) == 8 and set(repack["arguments"]) <= known, set(repack["arguments"]) - known
    spec = one(objs, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]
    (sidecar,) = [c for c in spec["containers"] if c["name"] == "repack-sidecar"]
    assert repack["arguments"]["repack.address"] == f"127.0.0.1:{_flag(sidecar['args'], '--port')}"
    assert "repack.predicate" not in repack["arguments"] and "repack.nodeOrder" not in repack["arguments"]
    (scheduler,) = [c for c in spec["containers"] if c["name"] == "volcano-scheduler"]
    assert scheduler["image"].startswith("ghcr.io/volcano-repack/vc-scheduler-repack:v1.14.1-")
    volcano = (ROOT / "go" / "plugin" / "go.mod").read_text()
    assert "volcano.sh/volcano v1.14.1" in volcano, "the image tag names the Volcano release go/plugin builds"


# -- offline schema validation -------------------------------------------------------------------------
def _validate(objs: list[dict[str, Any]]) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for obj in objs:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


@needs_kubectl
@pytest.mark.parametrize("directory", ["crd", "rbac", "default"])
def test_bases_validate_against_the_kubernetes_schemas(directory: str) -> None:
    _validate(render(directory))


@needs_kubectl
def test_the_overlay_validates_against_the_kubernetes_schemas(overlay: list[dict[str, Any]]) -> None:
    _validate(overlay)


def test_a_schema_error_is_caught() -> None:
    """The validator is not vacuous: a typo in a probe is refused."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    bad = yaml.safe_load(yaml.safe_dump(one(chart(), "Deployment", "volcano-scheduler")))
    bad["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] = {"httpGet": {"paht": "/healthz", "port": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBE_VERSION, strict=True)


# -- the placement gate's webhook ------------------------------------------------------------------------
@needs_kubectl
def test_the_webhook_manifests_are_what_the_watcher_serves(overlay: list[dict[str, Any]]) -> None:
    """The configuration is ``gates.configuration`` with the Service clientConfig (one definition);
    the Service reaches the watcher's webhook port in the scheduler pod; the watcher's Secret name,
    configuration name and Service name are its flags' defaults."""
    from sidecar.watcher.args import WebhookFlags
    from sidecar.watcher.gate.index import configuration

    flags = WebhookFlags()
    objs = render("webhook")
    service = one(objs, "Service", flags.service)
    deployment = one(overlay, "Deployment", "volcano-scheduler")
    assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"] == "volcano-system"
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    (port,) = service["spec"]["ports"]
    watcher = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}["repack-watcher"]
    assert port["targetPort"] in {p["name"] for p in watcher["ports"]} and port["port"] == 443
    assert _flag(watcher["args"], "--webhook-port") == "9443"
    client_config = {"service": {"name": flags.service, "namespace": "volcano-system", "path": "/mutate-pods",
                                 "port": 443}}  # fmt: skip
    assert one(objs, "MutatingWebhookConfiguration", flags.config) == configuration(client_config)
    role = one(render("rbac"), "Role", "repack-webhook-tls")
    assert {n for r in role["rules"] for n in r.get("resourceNames", [])} == {flags.secret}
