"""Issue 13 items 16 and 17: the file shapes people write (a request body, a run without kind) and
Kubernetes quantity strings in snapshot files, converted to Volcano units at that edge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sidecar.cli import main
from sidecar.errors import InputError
from sidecar.snapshot.io import load_repack_spec, load_snapshot

GUIDE = Path("sidecar/data/guide-ascend.json")
RUN = Path("sidecar/data/guide-ascend-dryrun.yaml")


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data) if path.suffix == ".json" else yaml.safe_dump(data))
    return str(path)


def test_a_request_body_is_a_snapshot_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = json.loads(GUIDE.read_text())
    body = write(tmp_path / "body.json", {"snapshot": bare, "resources": ["huawei.com/ascend-1980"]})
    assert load_snapshot(body) == load_snapshot(GUIDE)
    assert main(["evaluate", "--snapshot", body]) == 0
    assert "33.3%" in capsys.readouterr().out
    assert main(["plan", "--snapshot", write(tmp_path / "body.yaml", {"snapshot": bare}), "--run", str(RUN)]) == 0
    assert "Result: RepackRecommended" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ({"snapshot": {"nodes": []}, "colour": 1}, "", 'unknown key(s) colour beside "snapshot"'),
        ({"snapshot": [1]}, ": snapshot", "expected a Snapshot mapping, got list"),
        ([{"name": "n"}], "", "expected a Snapshot"),
        ({"node": [{"name": "n"}]}, "", 'or a request body {"snapshot"'),
    ],
)
def test_other_shapes_say_what_is_expected(tmp_path: Path, data: Any, field: str, problem: str) -> None:
    path = write(tmp_path / "s.yaml", data)
    with pytest.raises(InputError) as info:
        load_snapshot(path)
    assert info.value.field == path + field
    assert problem in info.value.problem


def test_run_files_in_three_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = yaml.safe_load(RUN.read_text())
    expected = load_repack_spec(RUN)
    no_kind = write(tmp_path / "nokind.yaml", {"spec": run["spec"]})
    bare = write(tmp_path / "bare.yaml", run["spec"])
    assert load_repack_spec(no_kind) == expected == load_repack_spec(bare)
    assert main(["plan", "--snapshot", str(GUIDE), "--run", no_kind, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["status"]["plan"]["freedNodes"] == ["ascend-node-01"]


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ({"kind": "Deployment", "spec": {}}, ": kind", "expected \"RepackRun\", got 'Deployment'"),
        ({"spec": {"mode": "DryRun"}, "spce": 1}, "", "unknown key(s) spce beside spec"),
        ({"mode": "DryRun", "goal": []}, "", "expected a RepackRun (kind: RepackRun, spec: ...), {spec: ...}"),
        ("DryRun", "", "expected a RepackRun"),
    ],
)
def test_bad_run_files_say_what_is_expected(tmp_path: Path, data: Any, field: str, problem: str) -> None:
    path = write(tmp_path / "run.yaml", data)
    with pytest.raises(InputError) as info:
        load_repack_spec(path)
    assert info.value.field == path + field
    assert problem in info.value.problem


QUANTITIES = """
nodes:
  - name: n1
    allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
  - name: n2
    allocatable: {cpu: 64000, memory: 549755813888, pods: 110, nvidia.com/gpu: 8000}
tasks:
  - {namespace: ml, name: w0, node: n1, status: Running, requests: {cpu: 500m, memory: 2Gi, nvidia.com/gpu: "1.5"},
     nonzeroRequests: {cpu: 500m, memory: 2Gi}, profile: {schedulerName: volcano}}
  - {namespace: ml, name: w1, node: n2, status: Running, requests: {cpu: 500, memory: 2147483648, nvidia.com/gpu: 1500},
     nonzeroRequests: {cpu: 500, memory: 2147483648}, profile: {schedulerName: volcano}}
taskColumns:
  uid: [c0]
  name: [c0]
  namespace: [0]
  node: [1]
  status: [Running]
  podGroup: [-1]
  priority: [0]
  profile: [0]
  requests: [{resource: nvidia.com/gpu, values: ["2"]}, {resource: cpu, values: [250m]}]
profiles: [{schedulerName: volcano}]
namespaces: [{name: ml}]
"""


def test_quantity_strings_become_volcano_units(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(QUANTITIES)
    snap = load_snapshot(path)
    n1, n2 = snap.nodes
    assert (
        dict(n1.allocatable)
        == dict(n2.allocatable)
        == {
            "cpu": 64000,
            "memory": 512 * 2**30,
            "pods": 110,
            "nvidia.com/gpu": 8000,
        }
    )
    w0, w1 = snap.tasks
    assert dict(w0.requests) == dict(w1.requests) == {"cpu": 500, "memory": 2 * 2**30, "nvidia.com/gpu": 1500}
    assert (w0.nonzero_requests.cpu, w0.nonzero_requests.memory) == (500, 2 * 2**30)
    assert [(c.resource, list(c.values)) for c in snap.task_columns.requests] == [
        ("nvidia.com/gpu", [2000.0]),
        ("cpu", [250.0]),
    ]
    as_json = tmp_path / "q.json"
    as_json.write_text(json.dumps(yaml.safe_load(QUANTITIES)))
    assert load_snapshot(as_json) == snap


def test_quantities_evaluate_as_cards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trap of the issue: "8" GPUs must be 8 cards (8000), not 0.008."""
    path = tmp_path / "q.yaml"
    path.write_text(QUANTITIES)
    assert main(["evaluate", "--snapshot", str(path), "--resource", "nvidia.com/gpu", "-o", "json"]) == 0
    (frag,) = json.loads(capsys.readouterr().out)["resources"]
    assert (frag["allocatable"], frag["allocated"]) == (16, 5)  # Evaluate answers in cards


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["nodes"][0]["allocatable"].update({"cpu": "lots"}), 'nodes[0].allocatable["cpu"]'),
        (lambda d: d["tasks"][1]["requests"].update({"memory": "2Gb"}), 'tasks[1].requests["memory"]'),
        (lambda d: d["tasks"][0]["nonzeroRequests"].update({"cpu": "1..5"}), "tasks[0].nonzeroRequests.cpu"),
        (lambda d: d["taskColumns"]["requests"][1]["values"].__setitem__(0, "x"), "taskColumns.requests[1].values[0]"),
    ],
)
def test_a_malformed_quantity_names_its_field(tmp_path: Path, edit: Any, field: str) -> None:
    data = yaml.safe_load(QUANTITIES)
    edit(data)
    path = write(tmp_path / "bad.json", {"snapshot": data})
    with pytest.raises(InputError) as info:
        load_snapshot(path)
    assert info.value.field == f"{path}: snapshot.{field}"
    assert "invalid quantity" in info.value.problem and '"500m"' in info.value.problem


def test_a_long_malformed_quantity_is_cut(tmp_path: Path) -> None:
    data = yaml.safe_load(QUANTITIES)
    data["nodes"][0]["allocatable"]["cpu"] = "9" * 5000 + "q"
    with pytest.raises(InputError) as info:
        load_snapshot(write(tmp_path / "bad.yaml", data))
    assert len(str(info.value)) < 400
