"""A kubeconfig for the emulator: plain HTTP on loopback with a fake bearer token (no TLS, no auth)."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig(url: str, *, name: str = "sandbox", token: str = "sandbox-token") -> dict[str, object]:
    """kubectl and the official client use this as is; the token only satisfies clients that want one."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, url: str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(kubeconfig(url), sort_keys=False))
    p.chmod(0o600)
    return p
