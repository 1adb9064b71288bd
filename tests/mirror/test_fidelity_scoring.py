"""Node order against upstream: each test names the upstream behaviour and the file it follows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror import resourcescores as rs
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import DEFAULT_MEMORY, DEFAULT_MILLI_CPU
from tests.mirror.test_scores import GPU_CONF, plugin_scores
from tests.mirror_cases import mirror, n, t

MIB = 1024 * 1024


def _soft(key: str, app: str = "web") -> dict[str, object]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }


# -- 1b PodTopologySpread scoring ----------------------------------------------------------------
# kubernetes v1.34.1 pkg/scheduler/framework/plugins/podtopologyspread/scoring.go:
# initPreScoreState puts nodes missing a constraint's key in IgnoredNodes (and does not count
# their pods); Score gives them 0; NormalizeScore sets them to 0.


def test_pod_topology_spread_scores_every_node_zero_when_no_node_has_the_key() -> None:
    m = mirror([n("a"), n("b")], [t("w0", "a", labels={"app": "web"})])
    s = plugin_scores(m, t("w1", labels={"app": "web"}, topologySpreadConstraints=[_soft("rack")]))
    assert [s[x]["podtopologyspread"] for x in ("a", "b")] == [0, 0]


def test_pod_topology_spread_ignores_nodes_missing_any_constraint_key() -> None:
    nodes = [
        n("a1", labels={"zone": "a", "rack": "r1"}),
        n("b1", labels={"zone": "b", "rack": "r2"}),
        n("a2", labels={"zone": "a"}),  # no rack: ignored, and its pod is not counted
        n("none"),
    ]
    tasks = [t("w0", "a1", labels={"app": "web"}), t("w1", "a2", labels={"app": "web"})]
    pod = t("w2", labels={"app": "web"}, topologySpreadConstraints=[_soft("zone"), _soft("rack")])
    s = plugin_scores(mirror(nodes, tasks), pod)
    raw_a1 = round(1 * math.log(2 + 2) + 1 * math.log(2 + 2))  # zone a: w0 only; rack r1: w0
    assert raw_a1 == 3
    weight = 2  # podtopologyspread.weight
    assert s["a1"]["podtopologyspread"] == weight * (100 * (raw_a1 + 0 - raw_a1) // raw_a1)
    assert s["b1"]["podtopologyspread"] == weight * 100
    assert (s["a2"]["podtopologyspread"], s["none"]["podtopologyspread"]) == (0, 0)


def test_pod_topology_spread_with_one_constraint_key_on_no_node_scores_every_node_zero() -> None:
    nodes = [n("a1", labels={"zone": "a"}), n("b1", labels={"zone": "b"})]
    pod = t("w1", labels={"app": "web"}, topologySpreadConstraints=[_soft("zone"), _soft("rack")])
    s = plugin_scores(mirror(nodes, [t("w0", "a1", labels={"app": "web"})]), pod)
    assert [s[x]["podtopologyspread"] for x in ("a1", "b1")] == [0, 0]


def test_pod_topology_spread_on_hostname_counts_no_pods_in_volcano() -> None:
    """Kubernetes counts a hostname constraint's pods from the scored NodeInfo
    (podtopologyspread/scoring.go Score), and Volcano's nodeorder BatchNodeOrderFn builds
    NodeInfos holding only the Node (volcano v1.14.1 plugins/nodeorder/nodeorder.go): every node
    counts 0, so a node full of matching pods scores as well as an empty one. Found by
    bench.fidelity (seeds 77, 207) against Volcano v1.14.1's compiled node order."""
    nodes = [n(x, labels={"kubernetes.io/hostname": x, "zone": z}) for x, z in (("a", "z1"), ("b", "z1"), ("c", "z2"))]
    tasks = [t(f"w{i}", "a", labels={"app": "web"}) for i in range(3)]
    s = plugin_scores(
        mirror(nodes, tasks),
        t("w9", labels={"app": "web"}, topologySpreadConstraints=[_soft("kubernetes.io/hostname")]),
    )
    assert [s[x]["podtopologyspread"] for x in ("a", "b", "c")] == [200, 200, 200]  # maxScore 0: all MaxNodeScore
    # a zone constraint beside it still counts the shared lister's pods: zone z1 holds all three
    both = [_soft("kubernetes.io/hostname"), _soft("zone")]
    s = plugin_scores(mirror(nodes, tasks), t("w9", labels={"app": "web"}, topologySpreadConstraints=both))
    assert s["c"]["podtopologyspread"] == 200 and s["a"]["podtopologyspread"] == s["b"]["podtopologyspread"] == 0


def test_pod_topology_spread_scoring_applies_each_constraints_taints_policy() -> None:
    """kubernetes v1.34.1 podtopologyspread/scoring.go PreScore: a node's pods count for a soft
    constraint only if the node passes that constraint's inclusion policies; with
    nodeTaintsPolicy Honor, pods on a node whose taint the pod does not tolerate are not counted.
    Found by bench.fidelity (seed 101949) against Volcano v1.14.1's compiled node order."""
    nodes = [n("a", labels={"zone": "z1"}), n("b", labels={"zone": "z2"}),
             n("t", labels={"zone": "z1"}, taints=["maintenance:NoSchedule"])]  # fmt: skip
    tasks = [t(f"w{i}", "t", labels={"app": "web"}) for i in range(2)]
    honor = {**_soft("zone"), "nodeTaintsPolicy": "Honor"}
    s = plugin_scores(mirror(nodes, tasks), t("w9", labels={"app": "web"}, topologySpreadConstraints=[honor]))
    assert (s["a"]["podtopologyspread"], s["b"]["podtopologyspread"]) == (200, 200)  # t's pods not counted
    s = plugin_scores(mirror(nodes, tasks), t("w9", labels={"app": "web"}, topologySpreadConstraints=[_soft("zone")]))
    assert s["a"]["podtopologyspread"] < s["b"]["podtopologyspread"] == 200  # Ignore (default): they count


# -- 2 binpack ---------------------------------------------------------------------------------
# volcano v1.14.1 pkg/scheduler/plugins/binpack/binpack.go (BinPackingScore, ResourceBinPackingScore)


def _binpack(m: Mirror, pod: pb.Task) -> list[float]:
    subj = m.subject_from_message(pod)
    return m.order.binpack(subj, Simulation(m.state), np.arange(m.state.n_nodes)).tolist()


def test_binpack_scores_whole_node_zero_when_any_weighted_resource_overflows() -> None:
    # cpu overflows on "a" (gpu fits): the whole node is 0, not just cpu's share
    m = mirror([n("a", 8, cpu=2000), n("b", 8, cpu=4000)], [t("x", "a", 0, cpu=1500, mem=0)], GPU_CONF)
    got = _binpack(m, t("p", cards=2, cpu=1000, mem=1e9))
    assert got[0] == 0
    assert got[1] == pytest.approx(100 * (1000 / 4000 + 1e9 / 256e9 + 2 * 2000 / 8000) / 4)


def test_binpack_resource_the_node_lacks_scores_zero_but_keeps_its_weight() -> None:
    m = mirror([n("cpu-only", 0, cpu=4000, mem=4e9)], [], GPU_CONF)
    (got,) = _binpack(m, t("p", cards=1, cpu=1000, mem=1e9))
    assert got == pytest.approx(100 * (1000 / 4000 + 1e9 / 4e9 + 0) / (1 + 1 + 2))


def test_binpack_used_includes_releasing_not_pipelined() -> None:
    tasks = [
        t("leaving", "a", 4, cpu=0, mem=0, status=pb.Task.Releasing),
        t("coming", "a", 4, cpu=0, mem=0, status=pb.Task.Pipelined),
    ]
    m = mirror([n("a", 8, cpu=4000, mem=4e9)], tasks, GPU_CONF)
    (got,) = _binpack(m, t("p", cards=4, cpu=1000, mem=1e9))
    # gpu: used 4 (Releasing) + 4 = 8 <= 8 fits; counting Pipelined would overflow
    assert got == pytest.approx(100 * (1000 / 4000 + 1e9 / 4e9 + 2 * 8000 / 8000) / 4)


# -- 4 BalancedAllocation ------------------------------------------------------------------------
# kubernetes v1.34.1 pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go
# (balancedResourceScorer: int64((1 - std) * 100) over (requested + pod) / allocatable; Score
# without a PreScore state returns 0 for a best-effort pod, as Volcano's nodeorder calls it),
# resource_allocation.go (useRequested; extended resources the pod does not request left out)


def test_balanced_allocation_gives_a_best_effort_pod_zero() -> None:
    m = mirror([n("a", cpu=1000, mem=1000), n("b", cpu=1000, mem=1000)], [t("x", "a", cpu=900, mem=0)])
    s = plugin_scores(m, t("p", cpu=0, mem=0))
    assert (s["a"]["balancedresource"], s["b"]["balancedresource"]) == (0, 0)


def test_balanced_allocation_scores_the_balance_with_the_pod() -> None:
    # a memory-only pod onto an empty 3000m / 5000 node: fractions 0 and 1 -> std 0.5 -> 50
    m = mirror([n("empty", 0, cpu=3000, mem=5000)], [])
    assert plugin_scores(m, t("p", cpu=0, mem=5000))["empty"]["balancedresource"] == 50
    # a node full on cpu made whole by a memory pod: 1 and 1 -> 100
    m = mirror([n("cpu-full", 0, cpu=3000, mem=5000)], [t("x", "cpu-full", cpu=3000, mem=0)])
    assert plugin_scores(m, t("p", cpu=0, mem=5000))["cpu-full"]["balancedresource"] == 100
    # equal fractions -> 100, whatever the balance was without the pod
    m = mirror([n("same", 0, cpu=1000, mem=1000)], [])
    assert plugin_scores(m, t("p", cpu=100, mem=100))["same"]["balancedresource"] == 100
    # a fraction above 1 (an overcommitted node, which no feasible node is) is capped: 1 and 0.5 -> 75
    requested, pod, alloc = np.array([[1500.0, 0.0]]), np.array([0.0, 500.0]), np.array([[1000.0, 1000.0]])
    assert rs.balanced(requested, pod, alloc, [("cpu", 0), ("memory", 1)]).tolist() == [75.0]


def test_balanced_allocation_uses_raw_requests_without_non_zero_defaults() -> None:
    # the node's pod requests no memory: raw 0 (not 200Mi); the pod asks cpu only
    m = mirror([n("a", 0, cpu=1000, mem=1000 * MIB)], [t("x", "a", cpu=500, mem=0)])
    got = plugin_scores(m, t("p", cpu=250, mem=0))["a"]["balancedresource"]
    assert got == math.floor((1 - abs(0.75 - 0.0) / 2) * 100)


def test_balanced_allocation_skips_unrequested_extended_and_zero_allocatable_resources() -> None:
    # gpu on the node but not requested: two resources (cpu, memory) -> |f0 - f1| / 2
    m = mirror([n("gpu", 8, cpu=1000, mem=1000)], [])
    assert plugin_scores(m, t("p", cpu=400, mem=200))["gpu"]["balancedresource"] == math.floor((1 - 0.1) * 100)
    # gpu requested on a node with gpu: three fractions, population std
    got = plugin_scores(m, t("q", cards=4, cpu=400, mem=200))["gpu"]["balancedresource"]
    f = [0.4, 0.2, 0.5]
    mean = sum(f) / 3
    std = math.sqrt(sum((x - mean) ** 2 for x in f) / 3)
    assert got == math.floor((1 - std) * 100)
    # memory allocatable 0 on the node: cpu alone -> std 0 -> 100
    m = mirror([n("no-mem", 0, cpu=1000, mem=0)], [])
    assert plugin_scores(m, t("p", cpu=400, mem=0))["no-mem"]["balancedresource"] == 100


# -- 10 non-zero requests --------------------------------------------------------------------------
# kubernetes v1.34.1 pkg/scheduler/util/pod_resources.go (100m / 200Mi), framework/types.go
# (NodeInfo.NonZeroRequested), noderesources/resource_allocation.go (!useRequested -> defaults);
# component-helpers v0.34.1 resource/helpers.go (per container, init containers too, explicit 0 kept)


def test_least_allocated_uses_the_snapshots_per_container_non_zero_requests() -> None:
    # x: two containers without cpu request + a memory request of 0 explicitly -> 200m / 0
    x = t("x", "a", cpu=0, mem=0)
    x.nonzero_requests.cpu, x.nonzero_requests.memory = 200, 0
    # p: pending, one container with cpu 100 and memory explicitly 0 -> 100m / 0
    p = t("p", cpu=100, mem=0, status=pb.Task.Pending)
    p.nonzero_requests.cpu, p.nonzero_requests.memory = 100, 0
    m = mirror([n("a", 0, cpu=1000, mem=1e9)], [x, p])
    verdict = m.prioritize(m.subject_for_task(m.state.task_name.index("p")))
    assert verdict.scores is not None
    got = verdict.scores.plugins["leastrequested"][0]
    assert got == ((1000 - 300) * 100 // 1000 * 50 + 100 * 50) // 100


def test_non_zero_requests_fall_back_to_pod_level_requests_with_defaults() -> None:
    m = mirror([n("a")], [t("x", "a", cpu=0, mem=5e8), t("y", "a", cpu=300, mem=0)])
    np.testing.assert_array_equal(m.state.task_nonzero, [[DEFAULT_MILLI_CPU, 5e8], [300, DEFAULT_MEMORY]])


def test_most_allocated_node_side_sums_each_pods_non_zero_request() -> None:
    x = t("x", "a", cpu=0, mem=0)
    x.nonzero_requests.cpu, x.nonzero_requests.memory = 300, 400 * MIB
    m = mirror([n("a", 0, cpu=1000, mem=1000 * MIB)], [x], GPU_CONF)
    got = plugin_scores(m, t("p", cpu=100, mem=100 * MIB))["a"]["mostrequested"]
    assert got == ((400 * 100 // 1000) + (500 * 100 // 1000)) // 2


def test_non_zero_request_columns_decode_and_are_validated() -> None:
    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=3))
    k = len(snap.task_columns.uid)
    snap.task_columns.nonzero_cpu.extend([float(i) for i in range(k)])
    snap.task_columns.nonzero_memory.extend([0.0] * k)
    state = decode(snap)
    np.testing.assert_array_equal(state.task_nonzero[:k, 0], np.arange(k))
    assert not state.task_nonzero[:k, 1].any()
    snap.task_columns.nonzero_memory.pop()
    with pytest.raises(InputError, match=r"task_columns\.nonzero_memory: has"):
        decode(snap)
    snap.task_columns.nonzero_memory.append(-1.0)
    with pytest.raises(InputError, match=r"task_columns\.nonzero_memory\[\d+\]"):
        decode(snap)


def test_an_inline_task_brings_its_own_non_zero_requests() -> None:
    """Filter/Prioritize with a task described inline score it with its Task.nonzero_requests."""
    m = mirror([n("a", 0, cpu=1000, mem=1e9)], [])
    bare = t("p", cpu=0, mem=0, status=pb.Task.Pending)
    given = t("p", cpu=0, mem=0, status=pb.Task.Pending)
    given.nonzero_requests.cpu, given.nonzero_requests.memory = 500, 0
    scores = {}
    for name, task in (("bare", bare), ("given", given)):
        verdict = m.prioritize(m.subject_from_message(task))
        assert verdict.scores is not None
        scores[name] = verdict.scores.plugins["leastrequested"][0]
    assert scores["given"] == ((1000 - 500) * 100 // 1000 * 50 + 100 * 50) // 100
    assert scores["bare"] != scores["given"]
    given.nonzero_requests.cpu = -1
    with pytest.raises(InputError, match=r"task\.nonzero_requests\.cpu"):
        m.subject_from_message(given)


def test_rows_form_keeps_the_non_zero_request_columns() -> None:
    from sidecar.snapshot.forms import to_rows

    snap = synth(SynthOptions(nodes=4, fill=0.5, seed=3))
    k = len(snap.task_columns.uid)
    snap.task_columns.nonzero_cpu.extend([100.0 + i for i in range(k)])
    snap.task_columns.nonzero_memory.extend([7.0 * i for i in range(k)])
    np.testing.assert_array_equal(decode(to_rows(snap)).task_nonzero, decode(snap).task_nonzero)


def test_a_refused_binding_task_does_not_occupy_its_node_for_fragmentation() -> None:
    """NodeInfo.AddTask refuses a Binding task that does not fit Idle: the node holds nothing of it,
    so it is not occupied and the planner has nothing to move off it."""
    from sidecar.repack.fragmentation import fragmentation
    from sidecar.snapshot.holding import holding_tasks

    nodes = [n("a", 8), n("b", 8)]
    tasks = [
        t("cpu-hog", "a", cpu=32_000),  # takes all of a's cpu, no cards
        t("late", "b", cards=4),
        t("bind", "a", cards=4, status=pb.Task.Binding),  # no cpu left on a: refused
    ]
    state = mirror(nodes, tasks).state
    bind = state.task_name.index("bind")
    assert state.ledger.refused[bind]
    assert not holding_tasks(state)[bind]
    frag = fragmentation(state, "nvidia.com/gpu")
    assert (frag.occupied_nodes, frag.min_occupied_nodes) == (1, 1)
