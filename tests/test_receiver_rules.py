"""Receiver rules 1-3 and the PodDisruptionBudget rules, each from the reproducer that showed it broken."""

from __future__ import annotations

from plan_cases import GPU, Cluster, explanation, moves, plan


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
