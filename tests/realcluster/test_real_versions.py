"""The real control plane's versions are written once, in go/controlplane/*/go.mod; the README
states them and must agree (a go.mod bump without the README, or the reverse, fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GO = ROOT / "go" / "controlplane"


def required(component: str, module: str) -> str:
    text = (GO / component / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", text, re.M)
    assert found, f"{module} not required in go/controlplane/{component}/go.mod"
    return found.group(1)


def test_readme_states_the_versions_the_go_modules_pin() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    kube = required("kube", "k8s.io/kubernetes")
    etcd = required("kube", "go.etcd.io/etcd/server/v3")
    volcano = required("volcano", "volcano.sh/volcano")
    kwok = required("kwok", "sigs.k8s.io/kwok")
    staging = f"v0.{kube.split('.', 1)[1]}"
    assert f"**Kubernetes {kube}**" in readme and f"etcd {etcd}" in readme
    assert f"**Volcano {volcano}**" in readme and f"**KWOK {kwok}**" in readme
    # Volcano's Kubernetes libraries are the server's release (Volcano reads the server's version)
    volcano_mod = (GO / "volcano" / "go.mod").read_text()
    assert f"k8s.io/client-go => k8s.io/client-go {staging}" in volcano_mod
    assert f"k8s.io/client-go => k8s.io/client-go {staging}" in (GO / "kube" / "go.mod").read_text()
