"""Predicates against their upstream: Volcano v1.14.1 on Kubernetes v1.34.1.

Each test is named after the upstream behaviour it pins; the tables cite the file they follow.
"""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.api.v1alpha1 import service_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror.explain import UNRESOLVABLE, UNSCHEDULABLE, failure_code
from sidecar.mirror.simulation import Simulation
from sidecar.service.core import RepackService
from sidecar.service.deadline import Deadline
from sidecar.snapshot.decode import decode
from tests.mirror_cases import GPU, check, mirror, n, t
from tests.plan_cases import Cluster, plan, reason

OK: list[str] = []
POD_NUMBER = "node(s) pod number exceeded"
PORTS = "node(s) didn't have free ports for the requested pod ports"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _zones() -> list[pb.Node]:
    return [n("a1", labels={"zone": "a"}), n("a2", labels={"zone": "a"}), n("b1", labels={"zone": "b"}), n("nozone")]


def _spread(*keys: str, min_domains: int = 0) -> dict:  # type: ignore[type-arg]
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": min_domains,
            }
            for key in keys
        ]
    }


# -- 1. PodTopologySpread: missing topology key -------------------------------------------------
# kubernetes v1.34.1 pkg/scheduler/framework/plugins/podtopologyspread/filtering.go: per constraint,
# in order, a node without the key is UnschedulableAndUnresolvable (ErrReasonNodeLabelNotMatch),
# a skew above maxSkew is Unschedulable (ErrReasonConstraintsNotMatch); the first failure decides.
SPREAD_MISSING_KEY_CASES = [
    ("key on no node", _spread("rack"), {"a1": [SPREAD_LABEL], "a2": [SPREAD_LABEL], "b1": [SPREAD_LABEL]}),
    ("key on no node, minDomains", _spread("rack", min_domains=2), {"a1": [SPREAD_LABEL], "nozone": [SPREAD_LABEL]}),
    ("key on some nodes", _spread("zone"), {"a1": [SPREAD], "b1": OK, "nozone": [SPREAD_LABEL]}),
    # Only nodes with every key count (no node has rack: w0 is not counted), so zone passes and
    # the missing rack decides.
    ("several constraints", _spread("zone", "rack"), {"a1": [SPREAD_LABEL], "b1": [SPREAD_LABEL]}),
    ("absent key first", _spread("rack", "zone"), {"a1": [SPREAD_LABEL], "b1": [SPREAD_LABEL]}),
]


@pytest.mark.parametrize(
    "profile,expected", [c[1:] for c in SPREAD_MISSING_KEY_CASES], ids=[c[0] for c in SPREAD_MISSING_KEY_CASES]
)
def test_podtopologyspread_node_without_the_key_is_missing_required_label(profile: dict, expected: dict) -> None:  # type: ignore[type-arg]
    m = mirror(_zones(), [t("w0", "a1", labels={"app": "web"})])
    got = check(m, t("w1", labels={"app": "web"}, **profile))
    assert {k: got[k] for k in expected} == expected


def test_podtopologyspread_first_failing_constraint_decides() -> None:
    nodes = [
        n("a1", labels={"zone": "a", "rack": "r1"}),
        n("a2", labels={"zone": "a"}),
        n("b1", labels={"zone": "b", "rack": "r2"}),
    ]
    m = mirror(nodes, [t("w0", "a1", labels={"app": "web"})])
    got = check(m, t("w1", labels={"app": "web"}, **_spread("zone", "rack")))
    # a2: zone a holds w0 (counted on a1), zone b none: skew 2 fails before rack is looked at.
    assert got == {"a1": [SPREAD], "a2": [SPREAD], "b1": OK}
    got = check(m, t("w1", labels={"app": "web"}, **_spread("rack", "zone")))
    assert got == {"a1": [SPREAD], "a2": [SPREAD_LABEL], "b1": OK}


def test_podtopologyspread_key_on_no_node_does_not_break_feasibility_counts_or_a_plan() -> None:
    m = mirror(_zones(), [t("w0", "a1", labels={"app": "web"}, **_spread("rack"))])
    w0 = m.state.task_uid.index("default/w0")
    sim = Simulation(m.state)
    assert m.predicates.feasible_nodes(m.subject_for_task(w0), sim, np.arange(4)).size == 0
    assert m.feasible_counts(np.array([w0])).tolist() == [0]
    cluster = (
        Cluster()
        .node("n1")
        .node("n2")
        .group("g", 1)
        .pod("p0", "n1", 2, "g", topologySpreadConstraints=_spread("rack")["topologySpreadConstraints"])
        .group("h", 1)
        .pod("q0", "n2", 2, "h")
    )
    assert reason(plan(cluster))  # answered, not an internal error


# -- 3. InterPodAffinity order and Volcano's ShouldAbort ----------------------------------------
# kubernetes v1.34.1 pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: own affinity
# (UnschedulableAndUnresolvable), own anti-affinity, existing pods' anti-affinity (Unschedulable).
# volcano v1.14.1 pkg/scheduler/plugins/predicates/predicates.go: stop only on ShouldAbort.


def test_interpodaffinity_checks_own_affinity_before_existing_anti_affinity() -> None:
    guard = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": "zone"}]}
    affine = {"podAffinity": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}
    m = mirror(_zones(), [t("guard", "a1", labels={"app": "guard"}, **guard), t("db", "b1", labels={"app": "db"})])
    got = check(m, t("api", labels={"app": "api"}, **affine, **_spread("zone")))
    assert got["a1"] == [AFFINITY]  # affinity fails first and aborts: no spread, no existing anti
    assert got["b1"] == OK


def test_podtopologyspread_applies_each_constraints_own_inclusion_policies() -> None:
    """kubernetes v1.34.1 podtopologyspread/filtering.go calPreFilterState: a node's pods count for
    constraint i only if the node passes constraint i's own nodeTaintsPolicy/nodeAffinityPolicy.
    Here the taint-honouring constraint must not take the tainted zone z0 away from the other
    one, whose global minimum stays 0. Found by bench.fidelity (seed 100271) against Volcano
    v1.14.1's compiled predicates."""
    nodes = [n("t0", labels={"zone": "z0"}, taints=["maintenance:NoSchedule"]), n("a", labels={"zone": "z2"})]
    tasks = [t("w", "a", labels={"app": "web"}), t("x", "a", labels={"app": "train"})]
    ignore = {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}  # fmt: skip
    honor = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "train"}}, "nodeTaintsPolicy": "Honor"}  # fmt: skip
    got = check(mirror(nodes, tasks), t("p", labels={"app": "infer"}, topologySpreadConstraints=[ignore, honor]))
    assert got["a"] == [SPREAD]  # z2 holds 2 (+1 for the pod) against z0's 0: skew 3 > 2
    got = check(mirror(nodes, tasks), t("p", labels={"app": "infer"}, topologySpreadConstraints=[honor]))
    assert got["a"] == OK  # alone, the honouring constraint sees only z2


def test_interpodaffinity_first_pod_counts_only_pods_on_nodes_with_the_topology_key() -> None:
    """kubernetes v1.34.1 interpodaffinity/filtering.go: affinityCounts hold only
    pods on nodes that carry the term's topology key, and satisfyPodAffinity lets the first pod of
    a group (no counted match, the pod matching its own terms) onto any node with the key. A
    matching pod on a node without the key is not counted. Found by bench.fidelity (seed 159)
    against Volcano v1.14.1's compiled predicates."""
    affine = {"podAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "rack"}]}
    nodes = [n("r1", labels={"rack": "r1"}), n("r2", labels={"rack": "r2"}), n("norack")]
    m = mirror(nodes, [t("web-0", "norack", labels={"app": "web"})])
    got = check(m, t("web-1", labels={"app": "web"}, **affine))
    assert (got["r1"], got["r2"]) == (OK, OK)  # web-0 is not counted: the first pod of the group
    assert got["norack"] == [AFFINITY]  # every term's key must be on the node
    # once a matching pod sits on a node with the key, only its domain passes
    m = mirror(nodes, [t("web-0", "norack", labels={"app": "web"}), t("web-2", "r2", labels={"app": "web"})])
    got = check(m, t("web-1", labels={"app": "web"}, **affine))
    assert (got["r1"], got["r2"]) == ([AFFINITY], OK)


def test_interpodaffinity_checks_own_anti_affinity_before_existing_anti_affinity() -> None:
    mine = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}
    theirs = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": "zone"}]}
    m = mirror(_zones(), [t("db", "a1", labels={"app": "db"}, **theirs), t("x", "b1", labels={"app": "x"}, **theirs)])
    got = check(m, t("api", labels={"app": "api"}, **mine))
    assert got["a1"] == [ANTI]  # both match: one reason, the pod's own
    assert got["b1"] == [EXISTING_ANTI]


def test_predicates_continue_after_unschedulable_and_report_every_reason_in_order() -> None:
    anti = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}
    # a1's second pod slot is Releasing: FutureIdle has a slot (the resource check passes) but the
    # predicates' pod number check counts every pod on the node (volcano v1.14.1 predicates.go)
    m = mirror(
        [n("a1", labels={"zone": "a"}, pods=2), n("a2", labels={"zone": "a"}), n("b1", labels={"zone": "b"})],
        [
            t("w0", "a1", labels={"app": "web"}, hostPorts=[{"port": 80}]),
            t("gone", "a1", status=pb.Task.Releasing),
            t("w1", "a2", labels={"app": "web"}),
        ],
    )
    got = check(m, t("w2", labels={"app": "web"}, hostPorts=[{"port": 80}], **anti, **_spread("zone")))
    assert got["a1"] == [POD_NUMBER, PORTS, ANTI, SPREAD]
    assert got["a2"] == [ANTI, SPREAD]
    assert got["b1"] == OK
    assert failure_code(got["a1"]) == UNSCHEDULABLE  # moving pods could free a1


def test_predicates_stop_after_unschedulable_and_unresolvable() -> None:
    m = mirror(
        [n("full", labels={"zone": "a", "pool": "x"}, pods=2), n("nozone", labels={"pool": "y"})],
        [
            t("w0", "full", labels={"app": "web"}, hostPorts=[{"port": 80}]),
            t("gone", "full", status=pb.Task.Releasing),
        ],
    )
    # pod count recorded, then NodeAffinity aborts (ports and spread are not reached)
    got = check(m, t("w1", labels={"app": "web"}, nodeSelector={"pool": "y"}, hostPorts=[{"port": 80}]))
    assert got["full"] == [POD_NUMBER, NODE_AFFINITY]
    assert failure_code(got["full"]) == UNRESOLVABLE
    got = check(m, t("w1", labels={"app": "web"}, **_spread("zone")))
    assert got["nozone"] == [SPREAD_LABEL] and failure_code(got["nozone"]) == UNRESOLVABLE


# -- 5. Requirements that do not parse: the term matches nothing --------------------------------
# component-helpers v0.34.1 scheduling/corev1/nodeaffinity/nodeaffinity.go (LazyErrorNodeSelector)
# and apimachinery v0.34.1 pkg/labels/selector.go (NewRequirement).


def _expr(op: str, *values: str, key: str = "gpu") -> dict:  # type: ignore[type-arg]
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


BAD_TERM_CASES = [
    ("NotIn with an invalid label value", _expr("NotIn", "not a value!"), {"gpu": "t4"}),
    ("In with an invalid label value", _expr("In", "t4", "bad value"), {"gpu": "t4"}),
    ("Gt with a word", _expr("Gt", "bar"), {"gpu": "5"}),
    ("Gt beyond int64", _expr("Gt", "1" + "0" * 309), {"gpu": "5"}),
    ("Lt beyond int64", _expr("Lt", "9223372036854775808"), {"gpu": "5"}),
    ("Gt with a float", _expr("Gt", "1.5"), {"gpu": "5"}),
    ("Gt with a negative (not a label value)", _expr("Gt", "-1"), {"gpu": "5"}),
    ("Exists with values", _expr("Exists", "x"), {"gpu": "t4"}),
    ("NotIn without values", _expr("NotIn"), {"gpu": "t4"}),
    ("invalid key", _expr("DoesNotExist", key="bad key"), {}),
]


@pytest.mark.parametrize("term,labels", [c[1:] for c in BAD_TERM_CASES], ids=[c[0] for c in BAD_TERM_CASES])
def test_nodeaffinity_term_that_does_not_parse_matches_nothing_but_other_terms_count(term: dict, labels: dict) -> None:  # type: ignore[type-arg]
    m = mirror([n("node", labels={**labels, "pool": "a"})], [])
    assert check(m, t("p", requiredNodeAffinity=[term]))["node"] == [NODE_AFFINITY]
    other = _expr("In", "a", key="pool")
    assert check(m, t("p", requiredNodeAffinity=[term, other]))["node"] == OK


def test_nodeaffinity_int64_bounds_compare_exactly() -> None:
    m = mirror([n("big", labels={"v": "9223372036854775807"}), n("small", labels={"v": "3"})], [])
    got = check(m, t("p", requiredNodeAffinity=[_expr("Gt", "9223372036854775806", key="v")]))
    assert got == {"big": OK, "small": [NODE_AFFINITY]}


def test_label_selector_that_does_not_parse_selects_no_pod() -> None:
    # LabelSelectorAsSelector runs the same NewRequirement; an unparsable selector selects nothing.
    bad = {
        "podAntiAffinity": [
            {
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a b"]}]},
                "topologyKey": "zone",
            }
        ]
    }
    m = mirror(_zones(), [t("w0", "a1", labels={"app": "web"})])
    assert check(m, t("p", labels={"app": "x"}, **bad))["a1"] == OK


# -- 6. Which resource an insufficiency names ---------------------------------------------------
# volcano v1.14.1 pkg/scheduler/api/resource_info.go LessEqualWithResourcesName: cpu, memory,
# then the task's scalars, pods among them (Go map order; the mirror's is by name, pods last).


def test_insufficient_names_cpu_before_a_resource_no_node_provides() -> None:
    m = mirror([n("a", 0, cpu=1000, mem=4e9)], [])
    task = t("p", cpu=2000)
    task.requests[GPU] = 1000  # on the resource axis (allocatable 0 on the node)
    task.requests["example.com/fpga"] = 1000  # on no node at all: not on the resource axis
    assert check(m, task)["a"] == ["Insufficient cpu"]
    task.requests["cpu"] = 500
    task.requests["memory"] = 8e9
    assert check(m, task)["a"] == ["Insufficient memory"]
    task.requests["memory"] = 1e9
    assert check(m, task)["a"] == ["Insufficient example.com/fpga"]  # before nvidia.com/gpu by name


def test_insufficient_names_a_known_scalar_before_an_unknown_one_by_name() -> None:
    m = mirror([n("a", 0)], [])
    task = t("p", cards=1)
    task.requests["zz.io/thing"] = 1
    assert check(m, task)["a"] == [f"Insufficient {GPU}"]


def test_insufficient_gpu_on_a_cluster_without_gpus_names_cpu_first() -> None:
    snap = pb.Snapshot(nodes=[pb.Node(name="a", allocatable={"cpu": 1000, "memory": 8e9, "pods": 110})])
    reply = RepackService().filter(
        service_pb2.FilterRequest(snapshot=snap, task=t("p", cpu=2000, cards=1)), Deadline.none()
    )
    assert [list(g.reasons) for g in reply.failures] == [["Insufficient cpu"]]


# -- 9. Status codes in the contract -----------------------------------------------------------


def test_failure_groups_carry_volcanos_status_code() -> None:
    snap = pb.Snapshot(
        nodes=[
            n("small", cpu=500),
            n("tainted", taints=["x=y:NoSchedule"]),
            n("full", pods=1, labels={"pool": "a"}),
            n("ok"),
        ],
        tasks=[t("busy", "full")],
    )
    reply = RepackService().filter(service_pb2.FilterRequest(snapshot=snap, task=t("p")), Deadline.none())
    codes = {tuple(g.nodes): (list(g.reasons), g.code) for g in reply.failures}
    assert codes == {
        ("small",): (["Insufficient cpu"], service_pb2.UNSCHEDULABLE),
        ("full",): (["Insufficient pods"], service_pb2.UNSCHEDULABLE),
        ("tainted",): (["node(s) had untolerated taint {x: y}"], service_pb2.UNSCHEDULABLE_AND_UNRESOLVABLE),
    }
    pri = RepackService().prioritize(service_pb2.PrioritizeRequest(snapshot=snap, task=t("p")), Deadline.none())
    assert {tuple(g.nodes): g.code for g in pri.failures} == {k: v[1] for k, v in codes.items()}


# -- 12. What the API server refuses -----------------------------------------------------------
# kubernetes v1.34.1 pkg/apis/core/validation/validation.go.

INVALID_PROFILE_CASES = [
    (
        "matchFields In with two values",
        {"requiredNodeAffinity": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]},
        r"required_node_affinity\[0\]\.match_fields\[0\]\.values: must be only one value when `operator` is 'In'",
    ),
    (
        "matchFields NotIn without values",
        {"requiredNodeAffinity": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn"}]}]},
        r"required_node_affinity\[0\]\.match_fields\[0\]\.values",
    ),
    (
        "Gt with two values",
        {"requiredNodeAffinity": [_expr("Gt", "1", "2")]},
        r"required_node_affinity\[0\]\.match_expressions\[0\]\.values: must be specified single value",
    ),
    (
        "Lt in a preferred term without a value",
        {"preferredNodeAffinity": [{"weight": 1, "preference": _expr("Lt")}]},
        r"preferred_node_affinity\[0\]\.preference\.match_expressions\[0\]\.values",
    ),
    (
        "pod affinity without topologyKey",
        {"podAffinity": [{"labelSelector": {}}]},
        r"pod_affinity\[0\]\.topology_key: can not be empty",
    ),
    (
        "pod anti-affinity without topologyKey",
        {"podAntiAffinity": [{"labelSelector": {}}]},
        r"pod_anti_affinity\[0\]\.topology_key: can not be empty",
    ),
    (
        "preferred anti-affinity without topologyKey",
        {"preferredPodAntiAffinity": [{"weight": 1, "term": {"labelSelector": {}}}]},
        r"preferred_pod_anti_affinity\[0\]\.term\.topology_key: can not be empty",
    ),
    (
        "spread without topologyKey",
        {"topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]},
        r"topology_spread_constraints\[0\]\.topology_key: can not be empty",
    ),
]


@pytest.mark.parametrize(
    "profile,message", [c[1:] for c in INVALID_PROFILE_CASES], ids=[c[0] for c in INVALID_PROFILE_CASES]
)
def test_api_server_validation_is_an_input_error_naming_the_field(profile: dict, message: str) -> None:  # type: ignore[type-arg]
    m = mirror([n("node")], [])
    with pytest.raises(InputError, match=r"^task\.profile\." + message):
        m.subject_from_message(t("p", **profile))
    snap = pb.Snapshot(nodes=[n("node")], tasks=[t("ok"), t("bad", **profile)])
    with pytest.raises(InputError, match=r"^tasks\[1\]\.profile\." + message):
        decode(snap)
    columns = pb.Snapshot(nodes=[n("node")], profiles=[t("bad", **profile).profile])
    columns.task_columns.uid.append("x")
    columns.task_columns.name.append("x")
    columns.task_columns.namespace.append(0)
    columns.task_columns.node.append(-1)
    columns.task_columns.status.append(pb.Task.Pending)
    columns.task_columns.pod_group.append(-1)
    columns.task_columns.priority.append(0)
    columns.task_columns.profile.append(0)
    columns.namespaces.add(name="default")
    with pytest.raises(InputError, match=r"^profiles\[0\]\." + message):
        decode(columns)
