"""The YAML examples in docs/waiting-jobs.md are what the product accepts: a RepackRun's spec passes
the planner's validation, a RepackPolicy's spec the watcher's (its schedule, time zone and run
template), and both validate offline against the CRDs' schemas."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar.api.v1alpha1 import spec_pb2
from sidecar.repack.spec import validate
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.policy.spec import read

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "waiting-jobs.md"


def examples() -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    return [yaml.safe_load(b) for b in blocks]


def test_the_doc_shows_a_targeted_run_and_a_policy() -> None:
    assert sorted(d["kind"] for d in examples()) == ["RepackPolicy", "RepackRun"]


@pytest.mark.parametrize("doc", examples(), ids=lambda d: d["kind"])
def test_each_example_is_accepted(doc: dict[str, Any]) -> None:
    if doc["kind"] == "RepackRun":
        run = validate(parse_dict(doc["spec"], spec_pb2.RepackSpec(), source="spec"))
        assert run.target is not None and run.target.kind == "Job"
    else:
        policy = read({"metadata": {"name": doc["metadata"]["name"]}, "spec": doc["spec"]})
        assert policy.schedule is not None and policy.pending is not None


@pytest.mark.parametrize("doc", examples(), ids=lambda d: d["kind"])
def test_each_example_validates_against_its_crd(doc: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    plural = {"RepackRun": "repackruns", "RepackPolicy": "repackpolicies"}[doc["kind"]]
    crd = yaml.safe_load((ROOT / "manifests" / "crd" / f"repack.volcano.sh_{plural}.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    schema = _plain(version["schema"]["openAPIV3Schema"])
    jsonschema.validate(doc, schema)


def _plain(schema: Any) -> Any:
    """The OpenAPI schema as JSON Schema: Kubernetes' x- extensions dropped."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema
