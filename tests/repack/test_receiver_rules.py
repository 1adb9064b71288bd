"""Receiver rules 1-3 and the PodDisruptionBudget rules, each from the reproducer that showed it broken."""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from tests.plan_cases import GPU, Cluster, explanation, moves, plan


def two_broken_gangs() -> Cluster:
    """Four 8-card nodes; job-a (minMember 2) holds 4 cards on node-1 and node-2, job-b the same on
    node-3 and node-4. Any single move takes one gang below MinAvailable."""
    c = Cluster()
    for i in range(1, 5):
        c.node(f"node-{i}")
    for job, nodes in (("job-a", ("node-1", "node-2")), ("job-b", ("node-3", "node-4"))):
        c.group(job, min_member=2)
        for k, n in enumerate(nodes, 1):
            c.pod(f"{job}-{k}", n, 4, group=job)
    return c


def test_receiver_rule_3_costs_receivers_against_the_plan_so_far() -> None:
    """Once job-a is broken, its other node is cheap to empty: the planner keeps it for later and
    fills job-b's nodes instead, so one gang pays for both freed nodes."""
    status = plan(two_broken_gangs())
    s = status.plan.summary
    assert moves(status) == [("job-a-1", "node-1", "node-3"), ("job-a-2", "node-2", "node-4")]
    assert list(status.plan.freed_nodes) == ["node-1", "node-2"]
    assert (s.cost.affected_workloads, s.cost.pod_groups_below_min_available) == (1, 1)
    assert s.cost.affected_cards == 8


def pdb_cluster(**pdb: object) -> Cluster:
    """Three 8-card nodes: a-pdb holds 1 card under a PodDisruptionBudget, b-src 1, c-other 4."""
    c = Cluster().node("a-pdb").node("b-src").node("c-other")
    for name in ("a", "b", "c"):
        c.group(name, min_member=1)
    c.pod("a-0", "a-pdb", 1, group="a", labels={"app": "a"})
    c.pod("b-0", "b-src", 1, group="b")
    c.pod("c-0", "c-other", 4, group="c")
    c.snap.pdbs.add(namespace="ml", name="pdb-a", **pdb)
    return c


def test_receiver_rule_2_prefers_nodes_a_pdb_keeps_occupied() -> None:
    status = plan(pdb_cluster(selector=pb.LabelSelector(match_labels={"app": "a"}), disruptions_allowed=0))
    s = status.plan.summary
    assert sorted(moves(status)) == [("b-0", "b-src", "a-pdb"), ("c-0", "c-other", "a-pdb")]
    assert (round(s.frag_before_percent, 1), s.frag_after_percent, s.freed_node_count) == (66.7, 0, 2)
    r, message = explanation(status, "a-pdb")
    assert r == "PodDisruptionBudget"
    assert "ml/pdb-a" in message and "disruptionsAllowed 0" in message


def test_receiver_rule_2_counts_a_pdb_exhausted_by_the_node_alone() -> None:
    """disruptionsAllowed 1 but two covered pods on the node: it can never be emptied either."""
    c = pdb_cluster(selector=pb.LabelSelector(match_labels={"app": "a"}), disruptions_allowed=1)
    c.pod("a-1", "a-pdb", 1, group="a", labels={"app": "a"})
    status = plan(c)
    assert explanation(status, "a-pdb")[0] == "PodDisruptionBudget"
    assert status.plan.summary.freed_node_count == 2
    assert {to for _, _, to in moves(status)} == {"a-pdb"}


def test_pdb_with_a_null_selector_selects_no_pods() -> None:
    """policy/v1: a null selector matches no pods, so the PDB protects nothing: the plan is the
    one without it, and a-0 may move."""
    null = plan(pdb_cluster(disruptions_allowed=0))
    c = pdb_cluster(disruptions_allowed=0)
    del c.snap.pdbs[:]
    assert null == plan(c)
    assert not [x for x in null.plan.candidates if x.reason == "PodDisruptionBudget"]
    assert null.plan.summary.freed_node_count == 2


def test_pdb_with_an_empty_selector_selects_the_whole_namespace() -> None:
    """policy/v1: an empty ({}) selector selects every pod of its namespace, labelled or not."""
    status = plan(pdb_cluster(selector=pb.LabelSelector(), disruptions_allowed=0))
    assert all(c.reason == "PodDisruptionBudget" for c in status.plan.candidates)
    assert not status.plan.moves


def test_receiver_rule_1_the_node_being_emptied_is_not_its_own_receiver() -> None:
    """p (4 cards, zone 1, with an anti-affinity term) can only go where its node checks pass: its
    own node src. No other receiver passes them, so src is dropped (NoReceiver, with the pod named)
    instead of being kept for a retry that can never succeed."""
    anti = {
        "podAntiAffinity": [
            {"labelSelector": {"matchLabels": {"app": "none"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
    c = Cluster().node("src", zone="1").node("r1", zone="1").node("r2", zone="2")
    c.group("j", 1)
    c.pod("p", "src", 4, group="j", nodeSelector={"zone": "1"}, **anti)
    c.pod("x1", "r1", 6, scheduler="x").pod("x2", "r2", 1, scheduler="x")
    status = plan(c)
    assert not moves(status)
    r, message = explanation(status, "src")
    assert r == "NoReceiver"
    assert message.startswith(f"no receiver takes all 1 pods (largest: ml/p, 4 {GPU})")
