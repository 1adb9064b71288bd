"""One table per predicate, derived from the Kubernetes/Volcano documented semantics."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from tests.mirror_cases import NO_PREDICATES, check, mirror, n, t

OK: list[str] = []
INS_GPU = ["Insufficient nvidia.com/gpu"]
AFF = ["node(s) didn't match Pod's node affinity/selector"]


def test_resource_fit_reasons_and_order() -> None:
    m = mirror(
        [n("a", 8), n("b", 8, cpu=2000), n("c", 2), n("d", 0)],
        [t("busy", "b", 0, cpu=1500)],
    )
    got = check(m, t("p", cards=4, cpu=1000))
    assert got == {"a": OK, "b": ["Insufficient cpu"], "c": INS_GPU, "d": INS_GPU}
    # cpu is checked before the scalar: both short -> cpu named.
    assert check(m, t("q", cards=4, cpu=1600))["b"] == ["Insufficient cpu"]


@pytest.mark.parametrize("request_milli,fits", [(1000.05, True), (1000.09, True), (1000.1, False), (1001, False)])
def test_less_equal_tolerance_is_point_one(request_milli: float, fits: bool) -> None:
    m = mirror([n("a", cpu=1000)], [])
    assert (check(m, t("p", cpu=request_milli))["a"] == OK) is fits


def test_unrequested_scalar_is_not_compared() -> None:
    # An overcommitted GPU dimension does not block a CPU-only pod (Volcano compares only requested scalars).
    m = mirror([n("a", 1)], [t("x", "a", 2)])
    assert check(m, t("cpu-pod", cards=0))["a"] == OK
    assert check(m, t("gpu-pod", cards=1))["a"] == INS_GPU


def test_future_idle_counts_releasing_and_pipelined() -> None:
    m = mirror(
        [n("rel", 8), n("pipe", 8)],
        [t("leaving", "rel", 6, status=pb.Task.Releasing), t("coming", "pipe", 6, status=pb.Task.Pipelined)],
    )
    result = m.filter(m.subject_from_message(t("p", cards=4)))
    names = m.state.node_names
    assert [names[i] for i in result.feasible.nonzero()[0]] == ["rel"]
    assert not result.fits_idle[names.index("rel")]  # only FutureIdle: Volcano would pipeline it
    assert result.reasons()[names.index("pipe")] == INS_GPU


def test_pod_slots_are_a_resource_and_pod_number_is_recorded_with_later_reasons() -> None:
    """Volcano v1.14.1: every task requests ``pods: 1``, so a node without a free pod slot in
    FutureIdle fails allocate's resource check ("Insufficient pods", final); a Releasing pod gives
    its slot back to FutureIdle but still counts in the predicates' pod number check (recorded)."""
    m = mirror(
        [n("a", pods=2, labels={"pool": "x"}), n("b", pods=3), n("r", pods=2)],
        [t("1", "a"), t("2", "a"), t("3", "b"), t("4", "r"), t("5", "r", status=pb.Task.Releasing)],
    )
    got = check(m, t("p", nodeSelector={"pool": "y"}))
    assert got["a"] == ["Insufficient pods"]
    assert got["b"] == AFF
    assert got["r"] == ["node(s) pod number exceeded", *AFF]


def test_without_the_predicates_plugin_only_allocates_fit_counts_pod_slots() -> None:
    """The pod-number check belongs to the predicates plugin (v1.14.1 plugins/predicates/
    predicates.go ``Predicate``). Without it a Releasing pod's slot is free (allocate's fit on
    FutureIdle), while a node whose slots are all held still fails that fit. Found by the
    differential harness (bench.fidelity seeds 1001374 and 1004606)."""
    nodes = [n("a", pods=2), n("r", pods=2)]
    tasks = [t("1", "a"), t("2", "a"), t("4", "r"), t("5", "r", status=pb.Task.Releasing)]
    got = check(mirror(nodes, tasks, NO_PREDICATES), t("p"))
    assert got == {"a": ["Insufficient pods"], "r": OK}
    assert check(mirror(nodes, tasks), t("p"))["r"] == ["node(s) pod number exceeded"]


def test_pods_is_named_after_every_other_insufficient_resource() -> None:
    m = mirror([n("a", 1, pods=1)], [t("1", "a", 1)])
    assert check(m, t("p", cards=1))["a"] == INS_GPU  # gpu and pods both short: the card is named
    assert check(m, t("q", cpu=10**9))["a"] == ["Insufficient cpu"]


def test_unschedulable_node() -> None:
    m = mirror([n("a", unschedulable=True), n("b")], [])
    assert check(m, t("p")) == {"a": ["node(s) were unschedulable"], "b": OK}
    tolerant = t(
        "q", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert check(m, tolerant)["a"] == OK


NODE_AFFINITY_CASES = [
    ("selector match", {"nodeSelector": {"pool": "a"}}, {"pool": "a"}, True),
    ("selector mismatch", {"nodeSelector": {"pool": "a"}}, {"pool": "b"}, False),
    ("selector missing label", {"nodeSelector": {"pool": "a"}}, {}, False),
    (
        "In",
        {
            "requiredNodeAffinity": [
                {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100", "a100"]}]}
            ]
        },
        {"gpu": "a100"},
        True,
    ),
    (
        "NotIn absent label",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["t4"]}]}]},
        {},
        True,
    ),
    (
        "NotIn listed",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["t4"]}]}]},
        {"gpu": "t4"},
        False,
    ),
    (
        "Exists",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]},
        {"gpu": ""},
        True,
    ),
    (
        "DoesNotExist",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]},
        {"gpu": "x"},
        False,
    ),
    (
        "Gt",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "cards", "operator": "Gt", "values": ["4"]}]}]},
        {"cards": "8"},
        True,
    ),
    (
        "Gt equal",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "cards", "operator": "Gt", "values": ["8"]}]}]},
        {"cards": "8"},
        False,
    ),
    (
        "Gt missing label",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "cards", "operator": "Gt", "values": ["1"]}]}]},
        {},
        False,
    ),
    (
        "Lt non-integer label",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "cards", "operator": "Lt", "values": ["9"]}]}]},
        {"cards": "eight"},
        False,
    ),
    (
        "Lt",
        {"requiredNodeAffinity": [{"matchExpressions": [{"key": "cards", "operator": "Lt", "values": ["9"]}]}]},
        {"cards": "8"},
        True,
    ),
    (
        "terms ORed",
        {
            "requiredNodeAffinity": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]},
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]},
            ]
        },
        {"pool": "a"},
        True,
    ),
    (
        "expressions ANDed",
        {
            "requiredNodeAffinity": [
                {
                    "matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["a"]},
                        {"key": "gpu", "operator": "Exists"},
                    ]
                }
            ]
        },
        {"pool": "a"},
        False,
    ),
    ("empty term matches nothing", {"requiredNodeAffinity": [{}]}, {"pool": "a"}, False),
    (
        "selector and affinity both",
        {
            "nodeSelector": {"pool": "a"},
            "requiredNodeAffinity": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}],
        },
        {"pool": "a"},
        False,
    ),
    (
        "matchFields metadata.name",
        {"requiredNodeAffinity": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node"]}]}]},
        {},
        True,
    ),
]


@pytest.mark.parametrize(
    "profile,labels,fits", [c[1:] for c in NODE_AFFINITY_CASES], ids=[c[0] for c in NODE_AFFINITY_CASES]
)
def test_node_affinity(profile: dict, labels: dict[str, str], fits: bool) -> None:  # type: ignore[type-arg]
    m = mirror([n("node", labels=labels)], [])
    assert check(m, t("p", **profile))["node"] == (OK if fits else AFF)


def test_gt_needs_exactly_one_value_but_a_non_integer_term_matches_nothing() -> None:
    # kubernetes v1.34.1 pkg/apis/core/validation/validation.go (ValidateNodeSelectorRequirement):
    # Gt/Lt need exactly one value, but the API does not check it is an integer; the scheduler's
    # labels.NewRequirement then fails and the term matches nothing (no error).
    m = mirror([n("node", labels={"c": "5"})], [])
    two = t("p", requiredNodeAffinity=[{"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["1", "2"]}]}])
    with pytest.raises(InputError, match=r"required_node_affinity\[0\]\.match_expressions\[0\]\.values"):
        check(m, two)
    word = t("p", requiredNodeAffinity=[{"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["x"]}]}])
    assert check(m, word)["node"] == AFF


# kubernetes v1.34.1 pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go: the reason
# names the first untolerated NoSchedule/NoExecute taint (1.35 dropped the name, PR #134740)
TAINTED = ["node(s) had untolerated taint {dedicated: gpu}"]
TAINT_CASES = [
    ("untolerated NoSchedule", ["dedicated=gpu:NoSchedule"], [], TAINTED),
    ("untolerated NoExecute", ["x=y:NoExecute"], [], ["node(s) had untolerated taint {x: y}"]),
    (
        "the first untolerated is named",
        ["soft=1:PreferNoSchedule", "a=1:NoSchedule", "b=2:NoExecute"],
        [],
        ["node(s) had untolerated taint {a: 1}"],
    ),
    ("PreferNoSchedule is not a filter", ["soft=1:PreferNoSchedule"], [], OK),
    ("Equal matches", ["dedicated=gpu:NoSchedule"], [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], OK),
    (
        "Equal wrong value",
        ["dedicated=gpu:NoSchedule"],
        [{"key": "dedicated", "value": "cpu"}],
        TAINTED,
    ),
    ("Exists on key", ["dedicated=gpu:NoSchedule"], [{"key": "dedicated", "operator": "Exists"}], OK),
    ("empty key Exists tolerates all", ["a=1:NoSchedule", "b=2:NoExecute"], [{"operator": "Exists"}], OK),
    (
        "effect must match",
        ["dedicated=gpu:NoExecute"],
        [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        TAINTED,
    ),
    (
        "one untolerated among tolerated",
        ["a=1:NoSchedule", "b=2:NoSchedule"],
        [{"key": "a", "operator": "Exists"}],
        ["node(s) had untolerated taint {b: 2}"],
    ),
]


@pytest.mark.parametrize("taints,tolerations,reasons", [c[1:] for c in TAINT_CASES], ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration(taints: list[str], tolerations: list[dict], reasons: list[str]) -> None:  # type: ignore[type-arg]
    m = mirror([n("node", taints=taints)], [])
    assert check(m, t("p", tolerations=tolerations))["node"] == reasons


def test_static_failures_stop_at_the_first() -> None:
    # Unschedulable and a taint and a selector miss: only the first (unschedulable) is reported.
    m = mirror([n("node", unschedulable=True, taints=["a=b:NoSchedule"])], [])
    assert check(m, t("p", nodeSelector={"x": "y"}))["node"] == ["node(s) were unschedulable"]


PORT_CASES = [
    ("same port and protocol", [{"port": 8080}], [{"port": 8080}], False),
    ("other protocol", [{"port": 8080, "protocol": "UDP"}], [{"port": 8080}], True),
    ("hostPort 0 claims nothing", [{"port": 0}], [{"port": 0}], True),
    ("specific IP vs every address", [{"port": 80, "hostIp": "10.0.0.1"}], [{"port": 80}], False),
    ("two specific IPs", [{"port": 80, "hostIp": "10.0.0.1"}], [{"port": 80, "hostIp": "10.0.0.2"}], True),
]


@pytest.mark.parametrize("existing,wanted,fits", [c[1:] for c in PORT_CASES], ids=[c[0] for c in PORT_CASES])
def test_node_ports(existing: list[dict], wanted: list[dict], fits: bool) -> None:  # type: ignore[type-arg]
    m = mirror([n("node")], [t("old", "node", hostPorts=existing)])
    reasons = check(m, t("p", hostPorts=wanted))["node"]
    assert reasons == (OK if fits else ["node(s) didn't have free ports for the requested pod ports"])


def _zones() -> list[pb.Node]:
    return [n("a1", labels={"zone": "a"}), n("a2", labels={"zone": "a"}), n("b1", labels={"zone": "b"}), n("nozone")]


ANTI = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}
AFFINE = {"podAffinity": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}


def test_anti_affinity_to_itself() -> None:
    m = mirror(_zones(), [t("web-0", "a1", labels={"app": "web"}, **ANTI)])
    got = check(m, t("web-1", labels={"app": "web"}, **ANTI))
    assert got["b1"] == OK and got["nozone"] == OK  # no zone label: the term cannot match there
    # Both its own term and web-0's match; the pod's own anti-affinity is checked first
    # (kubernetes v1.34.1 interpodaffinity/filtering.go), one reason per InterPodAffinity failure.
    assert got["a1"] == ["node(s) didn't match pod anti-affinity rules"]
    assert got["a2"] == ["node(s) didn't match pod anti-affinity rules"]


def test_own_anti_affinity_against_plain_pods() -> None:
    m = mirror(_zones(), [t("web-0", "a1", labels={"app": "web"})])
    got = check(m, t("x", labels={"app": "other"}, **ANTI))
    assert got == {
        "a1": ["node(s) didn't match pod anti-affinity rules"],
        "a2": ["node(s) didn't match pod anti-affinity rules"],
        "b1": OK,
        "nozone": OK,
    }


def test_affinity_needs_a_match_in_the_domain_and_the_key() -> None:
    m = mirror(_zones(), [t("db-0", "b1", labels={"app": "db"})])
    got = check(m, t("api", labels={"app": "api"}, **AFFINE))
    assert got["b1"] == OK
    assert got["a1"] == ["node(s) didn't match pod affinity rules"]
    assert got["nozone"] == ["node(s) didn't match pod affinity rules"]  # unknown topology key


def test_first_pod_with_affinity_to_itself() -> None:
    m = mirror(_zones(), [])
    got = check(m, t("db-0", labels={"app": "db"}, **AFFINE))
    assert got["a1"] == OK and got["b1"] == OK
    assert got["nozone"] == ["node(s) didn't match pod affinity rules"]
    assert check(m, t("api", labels={"app": "api"}, **AFFINE))["a1"] == ["node(s) didn't match pod affinity rules"]


def test_affinity_namespaces_and_namespace_selector() -> None:
    nodes = _zones()
    snap_tasks = [t("db-0", "b1", ns="data", labels={"app": "db"})]
    m = mirror(nodes, snap_tasks)
    assert check(m, t("api", labels={"app": "api"}, **AFFINE))["b1"] != OK  # own namespace only
    other = {
        "podAffinity": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", "namespaces": ["data"]}
        ]
    }
    assert check(m, t("api", labels={"app": "api"}, **other))["b1"] == OK
    everywhere = {
        "podAffinity": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", "namespaceSelector": {}}
        ]
    }
    assert check(m, t("api", labels={"app": "api"}, **everywhere))["b1"] == OK


def spread(max_skew: int = 1, key: str = "zone", **kw: object) -> dict:  # type: ignore[type-arg]
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                **kw,
            }
        ]
    }


def test_topology_spread_skew_and_missing_label() -> None:
    m = mirror(_zones(), [t("w0", "a1", labels={"app": "web"}), t("w1", "a2", labels={"app": "web"})])
    got = check(m, t("w2", labels={"app": "web"}, **spread()))
    # zone a has 2, zone b 0: placing in a makes skew 3 - 0 = 3 > 1.
    assert got["a1"] == ["node(s) didn't match pod topology spread constraints"]
    assert got["b1"] == OK
    assert got["nozone"] == ["node(s) didn't match pod topology spread constraints (missing required label)"]
    assert check(m, t("w2", labels={"app": "web"}, **spread(max_skew=3)))["a1"] == OK


def test_topology_spread_min_domains_and_schedule_anyway() -> None:
    m = mirror(_zones(), [t("w0", "b1", labels={"app": "web"})])
    # Only 2 zones exist but minDomains 3: the global minimum is taken as 0.
    got = check(m, t("w1", labels={"app": "web"}, **spread(minDomains=3)))
    assert got["b1"] == ["node(s) didn't match pod topology spread constraints"]  # 1 + 1 - 0 = 2 > 1
    assert got["a1"] == OK
    soft = spread()
    soft["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"
    assert check(m, t("w1", labels={"app": "web"}, **soft))["nozone"] == OK


def test_conf_switches_turn_predicates_off() -> None:
    nodes = [n("node", labels={"pool": "b"}, taints=["t=1:NoSchedule"])]
    subject = t("p", nodeSelector={"pool": "a"})
    assert check(mirror(nodes, []), subject)["node"] == AFF
    conf = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: predicates
    arguments:
      predicate.NodeAffinityEnable: false
      predicate.TaintTolerationEnable: "false"
"""
    assert check(mirror(nodes, [], conf), subject)["node"] == OK
    no_predicates = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n'
    assert check(mirror([n("u", unschedulable=True)], [], no_predicates), subject)["u"] == OK


def test_existing_task_is_checked_off_its_own_node() -> None:
    m = mirror([n("a", 4), n("b", 4)], [t("big", "a", 4)])
    result = m.filter(m.subject_for_uid("default/big"))
    assert result.feasible.tolist() == [True, True]  # its own 4 cards are free while it is checked


def test_unknown_resource_is_insufficient_everywhere() -> None:
    m = mirror([n("a")], [])
    subject = t("p")
    subject.requests["example.com/fpga"] = 1000
    assert check(m, subject)["a"] == ["Insufficient example.com/fpga"]


def test_feasible_counts_honour_existing_anti_affinity_toward_a_plain_pod() -> None:
    import numpy as np

    anti = {"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}
    m = mirror(
        _zones(),
        [
            t("web-0", "a1", labels={"app": "web"}, **anti),
            t("plain", "", labels={"app": "web"}, status=pb.Task.Pending),
        ],
    )
    plain = m.state.task_uid.index("default/plain")
    filtered = int(m.filter(m.subject_for_task(plain)).feasible.sum())
    assert filtered == 2  # b1 and nozone: zone a is closed by web-0's anti-affinity
    assert m.feasible_counts(np.array([plain])).tolist() == [filtered]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"labels": {"app": "a"}, "scheduler_name": "volcano", "owner_kind": "Pod"},
        {"node_selector": {"zone": "a"}},
        {"required_node_affinity": [pb.NodeSelectorTerm()]},
        {"tolerations": [pb.Toleration(key="k", operator="Exists")]},
    ],
)
def test_static_key_is_the_serialised_node_only_fields(fields: dict[str, Any]) -> None:
    """The shortcut for a profile without node-only constraints gives the key the full form gives."""
    from sidecar.mirror.nodechecks import static_key

    profile = pb.TaskProfile(**fields)
    full = pb.TaskProfile(
        node_selector=profile.node_selector,
        required_node_affinity=profile.required_node_affinity,
        tolerations=profile.tolerations,
    ).SerializeToString(deterministic=True)
    assert static_key(profile) == full
