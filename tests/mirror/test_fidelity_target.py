"""One target: the mirror follows the Volcano release (and its Kubernetes libraries) that go/plugin,
``volcano-oracle`` and the real control plane build. The go.mod files pin it; the mirror names it
once (``sidecar.mirror``), and README's "Fidelity target" line says it."""

from __future__ import annotations

import re
from pathlib import Path

from sidecar.mirror import KUBERNETES_RELEASE, VOLCANO_RELEASE

ROOT = Path(__file__).resolve().parents[2]


def _pinned(gomod: str, module: str) -> str:
    found = re.search(rf"^\s*{re.escape(module)} (v\S+)", (ROOT / gomod).read_text(), re.M)
    assert found, f"{gomod} does not require {module}"
    return found.group(1)


def test_the_mirror_the_plugin_and_the_control_plane_name_one_release() -> None:
    for gomod in ("go/plugin/go.mod", "go/controlplane/volcano/go.mod"):
        assert _pinned(gomod, "volcano.sh/volcano") == VOLCANO_RELEASE, gomod
    for gomod in ("go/plugin/go.mod", "go/controlplane/kube/go.mod", "go/controlplane/volcano/go.mod"):
        assert _pinned(gomod, "k8s.io/kubernetes") == KUBERNETES_RELEASE, gomod


def test_readme_names_the_target_once_where_the_mirror_is_described() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = [line for line in readme.splitlines() if line.startswith("**Fidelity target**")]
    assert len(lines) == 1, lines
    assert f"Volcano {VOLCANO_RELEASE}" in lines[0] and f"Kubernetes {KUBERNETES_RELEASE}" in lines[0], lines[0]
