"""Node order: each plugin's formula checked against a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sidecar.mirror.core import Mirror
from tests.mirror_cases import mirror, n, t

GPU_CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
    arguments:
      mostrequested.weight: 1
  - name: binpack
    arguments:
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 2
"""


def plugin_scores(m: Mirror, subject_task, nodes: list[str] | None = None) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    subj = m.subject_from_message(subject_task)
    idx = m.node_indices(nodes or [])
    verdict = m.prioritize(subj, idx)
    assert verdict.scores is not None
    names = m.state.node_names
    return {
        names[node]: {p: float(v[i]) for p, v in verdict.scores.plugins.items()}
        | {"total": float(verdict.scores.total[i])}
        for i, node in enumerate(verdict.scores.nodes)
    }


def test_resource_plugins_on_an_empty_node() -> None:
    m = mirror([n("a", 8, cpu=32_000, mem=256e9)], [], GPU_CONF)
    s = plugin_scores(m, t("p", cards=2, cpu=1000, mem=1e9))["a"]
    cpu, mem, gpu = 1000 / 32000, 1e9 / 256e9, 2000 / 8000
    assert s["binpack"] == pytest.approx(100 * (cpu * 1 + mem * 1 + gpu * 2) / 4)
    assert s["leastrequested"] == ((31000 * 100 // 32000) * 50 + (int(255e9) * 100 // int(256e9)) * 50) // 100
    assert s["mostrequested"] == ((1000 * 100 // 32000) + (int(1e9) * 100 // int(256e9))) // 2
    mean = (cpu + mem + gpu) / 3
    std = math.sqrt(((cpu - mean) ** 2 + (mem - mean) ** 2 + (gpu - mean) ** 2) / 3)
    # Kubernetes v1.34.1 balanced_allocation.go: (1 - std) x 100 with the pod
    assert s["balancedresource"] == math.floor((1 - std) * 100)
    assert s["tainttoleration"] == 300  # no PreferNoSchedule taints anywhere: 100 x weight 3
    assert s["total"] == pytest.approx(sum(v for k, v in s.items() if k != "total"))


# volcano v1.14.1 pkg/scheduler/plugins/binpack/binpack.go (BinPackingScore: an overflowing
# weighted resource makes ResourceBinPackingScore return an error and the node score 0, since v1.8.0)
def test_binpack_counts_used_and_scores_whole_node_zero_on_overflow() -> None:
    m = mirror(
        [n("a", 8, cpu=10_000, mem=100e9), n("b", 8, cpu=10_000, mem=100e9)],
        [t("x", "a", 6, cpu=5000, mem=50e9)],
        GPU_CONF,
    )
    subj = m.subject_from_message(t("p", cards=4, cpu=1000, mem=10e9))
    from sidecar.mirror.simulation import Simulation

    sim = Simulation(m.state)
    got = m.order.binpack(subj, sim, np.array([0, 1]))
    # a: gpu 6 + 4 > 8 overflows -> the whole node scores 0 (v1.7 kept cpu and memory's share)
    assert got[0] == 0
    assert got[1] == pytest.approx(100 * ((1000 / 10000) + (10e9 / 100e9) + (4000 / 8000) * 2) / 4)


def test_least_requested_uses_non_zero_defaults_for_requestless_pods() -> None:
    m = mirror([n("a", 0, cpu=1000, mem=1e9)], [t("bare", "a", 0, cpu=0, mem=0)])
    s = plugin_scores(m, t("p", cpu=100, mem=0))["a"]
    # node holds 100m / 200MiB by default, the pod asks 100m / 200MiB (its memory is 0 too)
    cpu_score = (1000 - 200) * 100 // 1000
    mem_score = (int(1e9) - 2 * 200 * 1024 * 1024) * 100 // int(1e9)
    assert s["leastrequested"] == (cpu_score * 50 + mem_score * 50) // 100


def test_balanced_two_resources_is_half_the_difference() -> None:
    m = mirror([n("a", 0, cpu=1000, mem=1000)], [t("x", "a", 0, cpu=100, mem=500)])
    s = plugin_scores(m, t("p", cpu=100, mem=100))["a"]
    assert s["balancedresource"] == math.floor((1 - abs(0.2 - 0.6) / 2) * 100) == 80  # with the pod


def test_node_affinity_preferred_weights_are_summed_not_normalised() -> None:
    m = mirror([n("both", labels={"pool": "a", "gpu": "h100"}), n("one", labels={"pool": "a"}), n("none")], [])
    prefs = [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}},
        {"weight": 3, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
    ]
    s = plugin_scores(m, t("p", preferredNodeAffinity=prefs))
    assert (s["both"]["nodeaffinity"], s["one"]["nodeaffinity"], s["none"]["nodeaffinity"]) == (16, 10, 0)


def test_taint_toleration_prefer_no_schedule_is_normalised_and_reversed() -> None:
    nodes = [
        n("clean"),
        n("one", taints=["a=1:PreferNoSchedule"]),
        n("two", taints=["a=1:PreferNoSchedule", "b=2:PreferNoSchedule"]),
    ]
    s = plugin_scores(mirror(nodes, []), t("p"))
    assert [s[x]["tainttoleration"] for x in ("clean", "one", "two")] == [300, 150, 0]
    tolerant = t("q", tolerations=[{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    s = plugin_scores(mirror(nodes, []), tolerant)
    assert [s[x]["tainttoleration"] for x in ("clean", "one", "two")] == [300, 300, 0]


def test_pod_affinity_preferred_is_min_max_normalised() -> None:
    nodes = [n("a1", labels={"zone": "a"}), n("a2", labels={"zone": "a"}), n("b1", labels={"zone": "b"})]
    tasks = [t("db-0", "a1", labels={"app": "db"}), t("db-1", "a2", labels={"app": "db"})]
    pref = [{"weight": 10, "term": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}}]
    s = plugin_scores(mirror(nodes, tasks), t("api", preferredPodAffinity=pref))
    assert [s[x]["podaffinity"] for x in ("a1", "a2", "b1")] == [200, 200, 0]
    anti = [{"weight": 10, "term": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}}]
    s = plugin_scores(mirror(nodes, tasks), t("api", preferredPodAntiAffinity=anti))
    assert [s[x]["podaffinity"] for x in ("a1", "a2", "b1")] == [0, 0, 200]


def test_existing_pods_preferred_terms_attract() -> None:
    nodes = [n("a1", labels={"zone": "a"}), n("b1", labels={"zone": "b"})]
    pref = [{"weight": 7, "term": {"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": "zone"}}]
    s = plugin_scores(
        mirror(nodes, [t("cache", "b1", labels={"app": "cache"}, preferredPodAffinity=pref)]),
        t("api", labels={"app": "api"}),
    )
    assert (s["a1"]["podaffinity"], s["b1"]["podaffinity"]) == (0, 200)


def test_topology_spread_schedule_anyway() -> None:
    nodes = [n("a1", labels={"zone": "a"}), n("a2", labels={"zone": "a"}), n("b1", labels={"zone": "b"}), n("nozone")]
    tasks = [t("w0", "a1", labels={"app": "web"}), t("w1", "a2", labels={"app": "web"})]
    soft = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    s = plugin_scores(mirror(nodes, tasks), t("w2", labels={"app": "web"}, topologySpreadConstraints=soft))
    raw_a = round(2 * math.log(2 + 2) + 0)  # two pods in zone a, two domains among candidates
    assert s["a1"]["podtopologyspread"] == 2 * (100 * (raw_a + 0 - raw_a) // raw_a)
    assert s["b1"]["podtopologyspread"] == 2 * (100 * (raw_a + 0 - 0) // raw_a)
    assert s["nozone"]["podtopologyspread"] == 0  # ignored: lacks the key


def test_ties_are_broken_by_node_name() -> None:
    m = mirror([n("node-b"), n("node-a"), n("node-c")], [])
    verdict = m.prioritize(m.subject_from_message(t("p", cards=1)))
    assert verdict.scores is not None
    order = [m.state.node_names[verdict.scores.nodes[i]] for i in verdict.scores.ranked(m.state.node_names)]
    assert order == ["node-a", "node-b", "node-c"]


def test_conf_weights_and_plugins() -> None:
    only_binpack = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
        "  - name: binpack\n    arguments:\n      binpack.weight: 3\n"
    )
    s = plugin_scores(mirror([n("a", cpu=1000, mem=1000)], [], only_binpack), t("p", cpu=500, mem=250))["a"]
    assert set(s) == {"binpack", "total"}
    assert s["binpack"] == pytest.approx(300 * (0.5 + 0.25) / 2)
