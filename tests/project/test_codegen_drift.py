"""The committed generated code matches proto/ (regenerate: python -m sidecar.api.codegen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.api import codegen

pytest.importorskip("grpc_tools")


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    fresh = {p.name: p.read_text() for p in codegen.generate(tmp_path)}
    committed = {p.name: p.read_text() for p in codegen.DEFAULT_OUT.iterdir() if p.is_file()}
    assert sorted(fresh) == sorted(committed), "file set differs: run python -m sidecar.api.codegen"
    for name, text in fresh.items():
        assert committed[name] == text, f"{name} is stale: run python -m sidecar.api.codegen"
