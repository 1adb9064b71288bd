"""Issue 13, items 1-7: bad input is INVALID_ARGUMENT naming its field, never INTERNAL, and the
answer stays short whatever the input's size."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import MAX_PART, MAX_QUOTED, InputError, bounded
from sidecar.mirror.core import Mirror
from sidecar.repack.spec import MAX_WEIGHT, validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.service import Deadline, NotFound, RepackService
from sidecar.snapshot.decode import Limits, decode
from sidecar.snapshot.units import MAX_QUANTITY
from tests.builders import GPU, node, snapshot, task

HUGE = "x" * 20_000


def service_call(method: str, body: dict[str, Any]) -> Any:
    """``body`` (protobuf JSON) through the in-process service."""
    service = RepackService()
    cls = {
        "plan": service_pb2.PlanRequest,
        "evaluate": service_pb2.EvaluateRequest,
        "filter": service_pb2.FilterRequest,
    }
    request = json_format.ParseDict(body, cls[method]())
    return getattr(service, method)(request, Deadline.none())


def dry_run(goal: str = GPU, **planner: float) -> dict[str, Any]:
    return {"mode": "DryRun", "goals": [{"resource": goal}], "planner": planner}


# -- 1. spec enums ---------------------------------------------------------------------------


def test_unknown_spec_mode_names_the_field() -> None:
    body = {"snapshot": {"nodes": [{"name": "n"}]}, "spec": {"mode": 9, "goals": [{"resource": GPU}]}}
    with pytest.raises(InputError, match=r"^spec\.mode: unknown mode 9 \(DryRun or Execute\)$"):
        service_call("plan", body)


# -- 2. task columns -------------------------------------------------------------------------


def test_columns_without_uid_are_refused_not_misnamed() -> None:
    with pytest.raises(InputError) as err:
        service_call("evaluate", {"snapshot": {"taskColumns": {"name": ["x"]}}})
    assert str(err.value) == "task_columns.uid: has 0 entries, expected 1 (one per task: task_columns.name has 1)"


PER_TASK = ("uid", "name", "namespace", "node", "status", "pod_group", "priority", "profile")


@pytest.mark.parametrize("column", (*PER_TASK, "role", "nonzero_cpu", "nonzero_memory", "requests"))
@pytest.mark.parametrize("change", ["short", "long"])
def test_every_column_length_mismatch_names_the_column(column: str, change: str) -> None:
    snap = synth(SynthOptions(nodes=6, fill=0.6, seed=3))
    cols = snap.task_columns
    n = len(cols.uid)
    for name, fill in (("role", "worker"), ("nonzero_cpu", 100.0), ("nonzero_memory", 1.0)):
        if not getattr(cols, name):
            getattr(cols, name).extend([fill] * n)
    decode(snap)  # consistent as built
    values = cols.requests[1].values if column == "requests" else getattr(cols, column)
    if change == "short":
        values.pop()
    else:
        values.append(values[0])
    with pytest.raises(InputError) as err:
        decode(snap)
    field = "task_columns.requests[1].values" if column == "requests" else f"task_columns.{column}"
    if change == "long":  # the longest column sets the count: every other column is named short
        assert err.value.field.startswith("task_columns."), str(err.value)
        assert f"task_columns.{column if column != 'requests' else 'requests[1].values'} has {n + 1}" in str(err.value)
    else:
        assert err.value.field == field, str(err.value)
        assert f"has {n - 1} entries, expected" in err.value.problem


def test_optional_columns_may_be_empty_but_not_half_given() -> None:
    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=1))
    n = len(snap.task_columns.uid)
    snap.task_columns.nonzero_cpu.extend([100.0] * n)
    with pytest.raises(
        InputError, match=r"^task_columns\.nonzero_memory: has 0 entries, expected \d+ \(nonzero_cpu and"
    ):
        decode(snap)


@pytest.mark.parametrize(
    "column,value,field,words",
    [
        ("namespace", -1, "task_columns.namespace[2]", "unknown namespace index -1"),
        ("profile", -1, "task_columns.profile[2]", "missing"),
        ("status", 3, "task_columns.status[2]", "invalid task status 3"),
        ("node", 2**31 - 1, "task_columns.node[2]", "unknown node index 2147483647"),
        ("pod_group", -(2**31), "task_columns.pod_group[2]", "unknown pod_group index"),
    ],
)
def test_out_of_range_column_values_name_the_entry(column: str, value: int, field: str, words: str) -> None:
    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=1))
    getattr(snap.task_columns, column)[2] = value
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == field and words in err.value.problem, str(err.value)


@pytest.mark.parametrize(
    "pdb,field",
    [
        (pb.PodDisruptionBudget(name="b"), "pdbs[0].namespace"),
        (pb.PodDisruptionBudget(namespace="default"), "pdbs[0].name"),
        (pb.PodDisruptionBudget(namespace="default", name="b", disruptions_allowed=-1), "pdbs[0].disruptions_allowed"),
        (
            pb.PodDisruptionBudget(
                namespace="default",
                name="b",
                selector=pb.LabelSelector(match_expressions=[pb.Requirement(key="a", operator="Near")]),
            ),
            "pdbs[0].selector.match_expressions[0].operator",
        ),
    ],
)
def test_pdbs_are_validated_with_the_snapshot(pdb: pb.PodDisruptionBudget, field: str) -> None:
    snap = snapshot([node("n")], [task("a", "n")])
    snap.pdbs.append(pdb)
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == field


# -- 3. integers beyond int64 ----------------------------------------------------------------


def _gt_filter(label: str, operator: str, bound: str) -> list[str]:
    snap = snapshot([node("a", labels={"rank": label}), node("b", labels={"rank": "7"})], [])
    req = pb.Requirement(key="rank", operator=operator, values=[bound])
    profile = pb.TaskProfile(required_node_affinity=[pb.NodeSelectorTerm(match_expressions=[req])])
    mirror = Mirror(decode(snap))
    subject = mirror.subject_from_message(pb.Task(name="p", namespace="default", profile=profile))
    return mirror.names(mirror.filter(subject).feasible)


@pytest.mark.parametrize(
    "label,operator,bound,feasible",
    [
        (str(2**70), "Gt", "5", ["b"]),  # a label beyond int64 does not parse: that node never matches
        (str(2**63), "Lt", "100", ["b"]),
        (str(2**63 - 1), "Gt", "5", ["a", "b"]),  # int64's largest still parses
        (str(-(2**63)), "Lt", "5", ["a"]),
        ("9", "Gt", str(2**70), []),  # a bound beyond int64: the term matches no node (Kubernetes)
        ("9", "Lt", str(-(2**64)), []),
    ],
)
def test_gt_lt_beyond_int64_never_overflow(label: str, operator: str, bound: str, feasible: list[str]) -> None:
    assert _gt_filter(label, operator, bound) == feasible


def test_scheduler_weights_beyond_int64_are_refused_by_name() -> None:
    snap = snapshot([node("n")], [task("a", "n")])
    plugin = snap.scheduler_config.tiers.add().plugins.add(name="binpack")
    plugin.arguments["binpack.weight"] = str(2**70)
    with pytest.raises(InputError, match=r'plugins\[0\]\.arguments\["binpack\.weight"\]: not an integer within int64'):
        Mirror(decode(snap))  # the scheduler conf is read when the mirror is built


# -- 4. spread on a missing topology key -----------------------------------------------------


def _spread_cluster(when: str) -> tuple[Mirror, Any]:
    nodes = [node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"}), node("c"), node("d")]
    sel = pb.LabelSelector(match_labels={"app": "x"})
    profile = pb.TaskProfile(
        labels={"app": "x"},
        topology_spread_constraints=[
            pb.TopologySpreadConstraint(max_skew=1, topology_key="zone", when_unsatisfiable=when, label_selector=sel)
        ],
    )
    tasks = [task(f"t{i}", n) for i, n in enumerate(["a", "c", "c", "d"])]
    for t in tasks:
        t.profile.CopyFrom(profile)
    mirror = Mirror(decode(snapshot(nodes, tasks)))
    return mirror, mirror.subject_from_message(pb.Task(name="new", namespace="default", profile=profile))


def test_spread_do_not_schedule_fails_nodes_without_the_key_and_does_not_count_their_pods() -> None:
    mirror, subject = _spread_cluster("DoNotSchedule")
    result = mirror.filter(subject)
    # c and d lack "zone": they fail, and their three pods are not counted, so z2 (0 pods) is
    # the only domain within maxSkew 1 of the minimum (z1 has 1 pod: skew 1+1-0 = 2 > 1).
    assert mirror.names(result.feasible) == ["b"]
    reasons = {r: mirror.names(m) for rs, m in result.groups for r in rs}
    assert reasons["node(s) didn't match pod topology spread constraints (missing required label)"] == ["c", "d"]


def test_spread_on_a_key_no_node_has_fails_every_node_without_crashing() -> None:
    mirror, subject = _spread_cluster("DoNotSchedule")
    subject.profile.topology_spread_constraints[0].topology_key = "rack"
    assert mirror.names(mirror.filter(subject).feasible) == []


def test_spread_schedule_anyway_scores_nodes_without_the_key_zero() -> None:
    mirror, subject = _spread_cluster("ScheduleAnyway")
    scores = mirror.prioritize(subject).scores
    assert scores is not None
    spread = dict(zip(mirror.names(scores.nodes), scores.plugins["podtopologyspread"], strict=True))
    assert spread["c"] == spread["d"] == 0 and spread["b"] > spread["a"], spread


# -- 5. bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [2.0**63, 1e19, 1e300])
@pytest.mark.parametrize(
    "where", ["allocatable", "row request", "column request", "nonzero column", "nonzero row", "pods"]
)
def test_quantities_at_or_over_2_63_name_the_field(where: str, value: float) -> None:
    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=2))
    n = len(snap.task_columns.uid)
    snap.tasks.append(task("row", "gpu-node-0000", 0))
    gpu_column = [c.resource for c in snap.task_columns.requests].index(GPU)
    expected = {
        "allocatable": f'nodes[1].allocatable["{GPU}"]',
        "pods": 'nodes[1].allocatable["pods"]',
        "row request": f'tasks[0].requests["{GPU}"]',
        "column request": f"task_columns.requests[{gpu_column}].values[3]",
        "nonzero column": "task_columns.nonzero_memory[3]",
        "nonzero row": "tasks[0].nonzero_requests.cpu",
    }[where]
    if where in ("allocatable", "pods"):
        snap.nodes[1].allocatable[GPU if where == "allocatable" else "pods"] = value
    elif where == "row request":
        snap.tasks[0].requests[GPU] = value
    elif where == "column request":
        next(c for c in snap.task_columns.requests if c.resource == GPU).values[3] = value
    elif where == "nonzero column":
        snap.task_columns.nonzero_cpu.extend([1.0] * n)
        snap.task_columns.nonzero_memory.extend([1.0] * n)
        snap.task_columns.nonzero_memory[3] = value
    else:
        snap.tasks[0].nonzero_requests.cpu = value
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == expected and "2^63" in err.value.problem, str(err.value)


def test_totals_that_would_wrap_int64_are_refused_where_they_pass_2_63() -> None:
    half = MAX_QUANTITY * 0.6  # each fine, any two together over int64
    snap = snapshot([node("a", cards=0), node("b", cards=0)], [task("p", "a", 0), task("q", "b", 0)])
    snap.tasks[0].requests[GPU] = half
    decode(snap)
    snap.tasks[1].requests[GPU] = half
    with pytest.raises(InputError, match=rf'^tasks\[1\]\.requests\["{GPU}"\]: the total request'):
        decode(snap)
    snap = snapshot([node("a", cards=0), node("b", cards=0)], [])
    for n in snap.nodes:
        n.allocatable[GPU] = half
    with pytest.raises(InputError, match=rf'^nodes\[1\]\.allocatable\["{GPU}"\]: the total allocatable'):
        decode(snap)


def test_evaluate_at_the_largest_quantity_stays_sane() -> None:
    """Just below the bound the answer is still right: no wrap-around into negative cards."""
    big = float(2**62)
    snap = snapshot([node("a", cards=0)], [task("p", "a", 0)])
    snap.nodes[0].allocatable[GPU] = big
    snap.tasks[0].requests[GPU] = big / 2
    reply = RepackService().evaluate(service_pb2.EvaluateRequest(snapshot=snap), Deadline.none())
    (f,) = reply.resources
    assert f.allocated == pytest.approx(big / 2 / 1000) and f.allocated > 0 and f.min_occupied_nodes == 1


@pytest.mark.parametrize("weight", [1e308, -1.0, MAX_WEIGHT * 1.01, float("nan"), float("inf")])
def test_planner_weights_outside_the_range_are_refused(weight: float) -> None:
    spec = json_format.ParseDict({"mode": "DryRun", "goals": [{"resource": GPU}]}, spec_pb2.RepackSpec())
    spec.planner.moved_pods_weight = weight
    with pytest.raises(InputError, match=r"^spec\.planner\.moved_pods_weight: must be within \[0, 1000\]"):
        validate(spec)
    spec.planner.moved_pods_weight = MAX_WEIGHT
    assert validate(spec).weights.moved_pods == MAX_WEIGHT


def test_max_per_run_resources_beyond_int64_are_refused() -> None:
    spec = json_format.ParseDict(
        {"mode": "DryRun", "goals": [{"resource": GPU}], "maxPerRun": {"resources": {GPU: 1e17}}}, spec_pb2.RepackSpec()
    )
    with pytest.raises(InputError, match=rf'^spec\.maxPerRun\.resources\["{GPU}"\]: .* over 2\^63'):
        validate(spec)


def test_distinct_resource_names_are_limited_and_the_error_says_the_limit() -> None:
    names = [f"example.com/r{i}" for i in range(300)]
    snap = snapshot([node("a")], [task("p", "a")])
    for i, name in enumerate(names):
        snap.tasks[0].requests[name] = float(i)
    with pytest.raises(InputError, match=r"^resources: 304 distinct resource names .* exceed the limit of 256$"):
        decode(snap)
    decode(snap, Limits(max_resources=400))
    del snap.tasks[0].requests[names[0]]
    snap.tasks[0].requests[""] = 1.0
    with pytest.raises(InputError, match=r'^tasks\[0\]\.requests\[""\]: empty resource name$'):
        decode(snap, Limits(max_resources=400))


# -- 6. quoted input is clipped --------------------------------------------------------------


def test_error_messages_clip_quoted_input() -> None:
    err = InputError(f'tasks[0].requests["{HUGE}"]', f'unknown node "{HUGE}"')
    assert len(str(err)) < 2 * MAX_QUOTED + 60
    assert f'"{"x" * (MAX_QUOTED - 1)}…"' in err.field and err.problem.endswith('"')
    assert bounded("short") == "short"
    unquoted = InputError("spec", "y" * 50_000)
    assert len(unquoted.problem.encode()) == MAX_PART and unquoted.problem.endswith("…")
    wide = InputError(f'a["{"é" * 20_000}"]', "😀" * 20_000)  # bytes count: gRPC percent-encodes them
    assert len(wide.field.encode()) <= MAX_PART and len(wide.problem.encode()) <= MAX_PART
    assert len(str(NotFound(f'session_id: no open session "{HUGE}"'))) < MAX_QUOTED + 40


def test_a_20_kb_name_over_grpc_answers_invalid_argument_with_a_short_message(server) -> None:  # type: ignore[no-untyped-def]
    stub = service_pb2_grpc.RepackStub(grpc.insecure_channel(server.target))
    wide = pb.Snapshot(nodes=[pb.Node(name="😀" * 20_000), pb.Node(name="😀" * 20_000)])
    with pytest.raises(grpc.RpcError) as err:
        stub.Evaluate(service_pb2.EvaluateRequest(snapshot=wide), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details() or ""
    assert details.startswith('nodes[1].name: duplicate node "😀😀') and details.endswith('…" (first at nodes[0])')
    assert len(details.encode()) <= 2 * MAX_PART + 2
    snap = snapshot([node("n")], [task("p", HUGE)])  # on a node the snapshot does not list: a warning
    snap.tasks[0].requests[HUGE] = 1.0
    (warning,) = stub.Evaluate(service_pb2.EvaluateRequest(snapshot=snap), timeout=30).warnings
    assert warning.startswith('1 task on nodes the snapshot does not list (e.g. tasks[0] "default/p" on "xxx')
    assert len(warning) < 300, warning[:400]
    with pytest.raises(grpc.RpcError) as err:
        stub.Evaluate(service_pb2.EvaluateRequest(session_id=HUGE), timeout=30)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and len(err.value.details() or "") < 300


# -- 7. field paths and the JSON log ---------------------------------------------------------


def test_snapshot_profile_errors_name_the_profile_not_the_question() -> None:
    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=1))
    first = len(snap.profiles[0].tolerations)
    snap.profiles[0].tolerations.add(key="k", operator="Maybe")
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == f"profiles[0].tolerations[{first}].operator"
    snap.profiles[0].ClearField("tolerations")
    snap.profiles[0].topology_spread_constraints.add(max_skew=1, topology_key="z", when_unsatisfiable="Sometimes")
    with pytest.raises(InputError) as err:
        decode(snap)
    assert err.value.field == "profiles[0].topology_spread_constraints[0].when_unsatisfiable"
    snap.profiles[0].ClearField("topology_spread_constraints")
    snap.profiles[0].preferred_node_affinity.add(weight=0)
    with pytest.raises(InputError, match=r"^profiles\[0\]\.preferred_node_affinity\[0\]\.weight: must be in the range"):
        decode(snap)


def test_a_hand_built_affinity_term_without_topology_key_names_a_field() -> None:
    mirror = Mirror(decode(snapshot([node("a")], [])))
    profile = pb.TaskProfile(pod_affinity=[pb.PodAffinityTerm()])
    subject = mirror.subject_from_message(pb.Task(name="p", namespace="default"))
    subject = type(subject)(subject.name, subject.namespace, subject.req, profile, None, ())
    with pytest.raises(InputError, match=r"^profile\.pod_affinity\.topology_key: can not be empty$"):
        mirror.filter(subject)


def test_python_warnings_reach_the_log_as_json_lines() -> None:
    code = (
        "from sidecar import logs; logs.configure('json', 'info'); import numpy as np;"
        "np.array([np.nan]).astype(np.int64); np.log(np.zeros(1))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    lines = out.stderr.splitlines()
    events = [json.loads(line) for line in lines]  # every line is JSON
    assert {e["category"] for e in events} == {"RuntimeWarning"} and len(events) == 2
    assert all(e["event"] == "python_warning" and e["level"] == "warning" for e in events)


def test_request_cells_are_limited_so_a_small_request_cannot_claim_gigabytes() -> None:
    """One node naming 250 resources and 200 tasks: 200 x 253 cells, over a limit of 40,000."""
    snap = snapshot([node("a")], [task(f"t{i}", "a") for i in range(200)])
    for i in range(250):
        snap.nodes[0].allocatable[f"example.com/r{i}"] = 1.0
    decode(snap)
    with pytest.raises(InputError, match=r"^tasks: 200 tasks x 254 resource names = 50800 request cells exceed"):
        decode(snap, Limits(max_task_cells=40_000))


@pytest.mark.parametrize("field", ["requests", "nonzero_requests"])
def test_an_inline_filter_task_has_the_same_quantity_bounds(field: str) -> None:
    mirror = Mirror(decode(snapshot([node("a")], [])))
    message = pb.Task(name="p", namespace="default")
    if field == "requests":
        message.requests[GPU] = 1e19
    else:
        message.nonzero_requests.memory = 1e19
    with pytest.raises(InputError, match="not below 2\\^63") as err:
        mirror.subject_from_message(message)
    assert err.value.field == (f'task.requests["{GPU}"]' if field == "requests" else "task.nonzero_requests.memory")


def test_a_supplement_with_a_bad_pdb_is_refused_up_front_and_changes_nothing() -> None:
    service = RepackService()
    bad = service_pb2.SupplementRequest(pdbs=[pb.PodDisruptionBudget(namespace="default")])
    with pytest.raises(InputError, match=r"^pdbs\[0\]\.name: missing$"):
        service.supplement(bad, Deadline.none())
    # a session published afterwards is not poisoned by the refused supplement
    session = service.publish("latest", snapshot([node("a")], [task("p", "a")]), Deadline.none())
    assert session.state.pdbs == []


def test_evaluate_refuses_a_repeated_resource_rather_than_repeating_the_work() -> None:
    request = service_pb2.EvaluateRequest(snapshot=snapshot([node("a")], [task("p", "a")]), resources=[GPU] * 10_000)
    with pytest.raises(InputError, match=rf'^resources\[1\]: duplicate resource "{GPU}" \(first at resources\[0\]\)$'):
        RepackService().evaluate(request, Deadline.none())
