"""The RepackPolicy's shape has one source, as the RepackRun's does: the CRD
(manifests/crd/repack.volcano.sh_repackpolicies.yaml) declares exactly policy.proto's
``RepackPolicySpec`` and ``RepackPolicyStatus`` (the same checker as tests/project/test_repackrun_schema.py),
its ``runTemplate.spec`` is the RepackRun CRD's spec schema without the immutability rule, and the
watcher's words (verdicts, trigger kinds, concurrency) are the CRD's enums.

``python -m tests.project.test_repackpolicy_schema`` prints the runTemplate.spec block to paste
after the RepackRun CRD's spec changed."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from sidecar.api.repackrun import Waits
from sidecar.api.v1alpha1 import policy_pb2
from sidecar.watcher.policy.runs import PENDING, SCHEDULE
from sidecar.watcher.policy.spec import Concurrency
from tests.project.test_repackrun_schema import CRD as RUN_CRD
from tests.project.test_repackrun_schema import _message

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "manifests" / "crd" / "repack.volcano.sh_repackpolicies.yaml"


def _schema(path: Path) -> dict[str, Any]:
    (version,) = yaml.safe_load(path.read_text())["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def template_spec() -> dict[str, Any]:
    """The RepackRun CRD's spec schema as a template's: without ``self == oldSelf``."""
    spec = copy.deepcopy(_schema(RUN_CRD)["properties"]["spec"])
    spec["x-kubernetes-validations"] = [v for v in spec["x-kubernetes-validations"] if v["rule"] != "self == oldSelf"]
    spec["description"] = (
        "The RepackRun spec each trigger creates (the RepackRun CRD's spec schema, without its immutability)."
    )
    return dict(spec)


def test_the_spec_and_status_are_the_contracts() -> None:
    schema = _schema(CRD)["properties"]
    spec = copy.deepcopy(schema["spec"])
    spec["properties"]["runTemplate"]["properties"]["spec"] = {"type": "object"}  # checked below, as a whole
    problems = _message(spec, policy_pb2.RepackPolicySpec.DESCRIPTOR, "spec")
    problems = [p for p in problems if not p.startswith("spec.runTemplate.spec.")]
    problems += _message(schema["status"], policy_pb2.RepackPolicyStatus.DESCRIPTOR, "status")
    assert problems == []


def test_the_run_template_is_the_repackrun_spec() -> None:
    got = _schema(CRD)["properties"]["spec"]["properties"]["runTemplate"]["properties"]["spec"]
    assert got == template_spec(), "paste the block `python -m tests.project.test_repackpolicy_schema` prints"


def test_the_words_are_the_crds_enums() -> None:
    schema = _schema(CRD)["properties"]
    assert schema["spec"]["properties"]["concurrencyPolicy"]["enum"] == [c.value for c in Concurrency]
    assert schema["status"]["properties"]["lastTrigger"]["properties"]["kind"]["enum"] == [SCHEDULE, PENDING]
    verdicts = schema["status"]["properties"]["waiting"]["items"]["properties"]["verdict"]["enum"]
    assert verdicts == [w.value for w in Waits]


if __name__ == "__main__":
    block = yaml.safe_dump(template_spec(), width=110, sort_keys=False)
    sys.stdout.write("".join(" " * 22 + line if line.strip() else line for line in block.splitlines(keepends=True)))
