"""``sandbox serve --faults FILE`` (issue 25 item 12): the fault injection the tests use, reachable
from the CLI so an operator can watch the watcher ride out 429s, 503s and latency with kubectl."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sidecar.errors import InputError
from sidecar.sandbox.apiserver.faults import Faults, load_faults
from sidecar.sandbox.apiserver.store import Store
from tests.k8s_fixtures import serving

ROOT = Path(__file__).resolve().parents[2]
FAULTS = """
failures:
- {verb: list, resource: nodes, code: 503, times: 2}
- {verb: create, resource: pods, subresource: eviction, code: 429, message: "budget says no"}
delays:
- {verb: get, resource: namespaces, seconds: 0.5}
"""


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60
    )


def test_serve_installs_the_faults_file_and_kubectl_meets_them(tmp_path: Path) -> None:
    rules, kubeconfig = tmp_path / "faults.yaml", tmp_path / "kubeconfig"
    rules.write_text(FAULTS)
    with serving("--kubeconfig", str(kubeconfig), "--faults", str(rules)) as first:
        assert f"3 fault rules from {rules}" in first
        for _ in range(2):
            failed = kubectl(kubeconfig, "get", "nodes")
            assert failed.returncode != 0 and "injected" in failed.stderr, failed.stderr
        assert kubectl(kubeconfig, "get", "nodes").returncode == 0  # two times only
        started = time.monotonic()
        assert kubectl(kubeconfig, "get", "namespace", "default").returncode == 0
        assert time.monotonic() - started >= 0.5  # the delay


@pytest.mark.parametrize(
    "data,field,words",
    [
        ({"failures": [{"verb": "get", "resource": "pods", "code": 404}]}, "f.failures[0].code", "must be one of"),
        ({"failures": [{"verb": "fetch", "resource": "pods", "code": 503}]}, "f.failures[0].verb", "must be one of"),
        ({"failures": [{"verb": "get", "code": 503}]}, "f.failures[0].resource", "missing"),
        ({"failures": [{"verb": "get", "resource": "pods", "code": 503, "times": 0}]}, "f.failures[0].times", ">= 1"),
        ({"failures": [{"resource": "pods", "code": 503, "tims": 2}]}, "f.failures[0].tims", "unknown field"),
        ({"delays": [{"seconds": -1}]}, "f.delays[0].seconds", "(0, 60]"),
        ({"delay": []}, "f.delay", "unknown field"),
        ({"failures": {"verb": "get"}}, "f.failures", "a list of mappings"),
        (["x"], "f", "a mapping"),
    ],
)
def test_a_bad_faults_file_names_the_field_and_installs_nothing(data: object, field: str, words: str) -> None:
    faults = Faults(Store())
    good = {"verb": "get", "resource": "pods", "code": 503}
    if isinstance(data, dict) and "failures" in data and isinstance(data["failures"], list):
        data = {**data, "failures": [good, *data["failures"]]}  # a good rule first: not installed either
        field = field.replace("failures[0]", "failures[1]")
    with pytest.raises(InputError) as err:
        load_faults(faults, data, "f")
    assert err.value.field == field and words in err.value.problem
    assert faults.pending() == 0


def test_an_unreadable_faults_file_is_a_one_line_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sidecar", "sandbox", "serve", "--kubeconfig", str(tmp_path / "k"),
         "--faults", str(tmp_path / "missing.yaml")],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert re.search(r"--faults: cannot read .*missing\.yaml", done.stderr), done.stderr
