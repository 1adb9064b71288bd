"""The registry of feasibility checks (sidecar/mirror/podchecks.py): every reason belongs to one
check, the conf switches each check in one place, and what a pod faces decides the planner's path."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.mirror import podchecks
from sidecar.mirror.conf import PREDICATE_SWITCHES, parse_conf
from sidecar.mirror.explain import REASONS
from tests.mirror_cases import NO_PREDICATES, check, mirror, n, t

PORT: dict[str, Any] = {"hostPorts": [{"port": 8080}]}
AFFINITY: dict[str, Any] = {
    "podAffinity": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]
}
ANTI: dict[str, Any] = {
    "podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]
}
SPREAD: dict[str, Any] = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
}


def conf_without(switch: str) -> str:
    return f"tiers:\n- plugins:\n  - name: predicates\n    arguments:\n      {switch}: false\n"


def test_every_reason_belongs_to_exactly_one_check() -> None:
    owners = [r for c in podchecks.CHECKS for r in c.reasons]
    assert sorted(owners) == sorted(REASONS)


def test_the_switchable_checks_are_the_confs_switches() -> None:
    plugins = {c.plugin for c in podchecks.CHECKS} - {None, podchecks.PREDICATES}
    assert plugins == set(PREDICATE_SWITCHES)


def test_domain_rules_are_pod_level_and_node_only_checks_read_no_pod() -> None:
    for c in podchecks.CHECKS:
        assert not c.domain_rule or c.pod_level, c.name
        assert c.pod_level or c.own is None, c.name


@pytest.mark.parametrize("plugin", sorted(PREDICATE_SWITCHES))
def test_each_switch_turns_off_its_checks_and_only_those(plugin: str) -> None:
    conf = parse_conf(conf_without(PREDICATE_SWITCHES[plugin]))
    for c in podchecks.CHECKS:
        assert podchecks.switched_on(conf, c.name) == (c.plugin != plugin), c.name


def test_without_the_predicates_plugin_only_allocates_fit_runs() -> None:
    conf = parse_conf(NO_PREDICATES)
    assert [c.name for c in podchecks.CHECKS if podchecks.switched_on(conf, c.name)] == ["resources"]


@pytest.mark.parametrize(
    ("profile", "faces", "countable"),
    [
        ({}, set(), True),
        (PORT, {"NodePorts"}, False),
        (AFFINITY, {"PodAffinity"}, False),
        (ANTI, {"PodAntiAffinity"}, True),
        (SPREAD, {"PodTopologySpread"}, True),
        ({**ANTI, **SPREAD}, {"PodAntiAffinity", "PodTopologySpread"}, True),
        ({**ANTI, **PORT}, {"PodAntiAffinity", "NodePorts"}, False),
    ],
)
def test_what_a_pod_faces_and_whether_its_rules_count_per_domain(
    profile: dict[str, Any],
    faces: set[str],
    countable: bool,
) -> None:
    m = mirror([n("a"), n("b")], [t("x", "a", 1, labels={"app": "web"})])
    subj = m.subject_from_message(t("new", cards=1, labels={"app": "web"}, **profile))
    assert m.predicates.checks(subj) == faces
    assert m.predicates.pod_level(subj) == bool(faces)
    assert podchecks.countable(m.conf, subj.profile) == countable
    assert (m.predicates.domain_rules(subj) is not None) == countable


def test_an_existing_pods_anti_affinity_is_faced_by_the_pods_it_selects() -> None:
    m = mirror([n("a"), n("b")], [t("guard", "a", 1, labels={"app": "db"}, **ANTI)])
    web = m.subject_from_message(t("new", cards=1, labels={"app": "web"}))
    other = m.subject_from_message(t("other", cards=1, labels={"app": "batch"}))
    assert m.predicates.checks(web) == {"ExistingAntiAffinity"} and podchecks.countable(m.conf, web.profile)
    assert m.predicates.checks(other) == frozenset()
    assert check(m, t("new", cards=1, labels={"app": "web"}))["a"] == [
        "node(s) didn't satisfy existing pods anti-affinity rules"
    ]


@pytest.mark.parametrize(
    ("plugin", "profile", "reason"),
    [
        ("NodePorts", PORT, "node(s) didn't have free ports for the requested pod ports"),
        ("InterPodAffinity", AFFINITY, "node(s) didn't match pod affinity rules"),
        ("InterPodAffinity", ANTI, "node(s) didn't match pod anti-affinity rules"),
        ("PodTopologySpread", SPREAD, "node(s) didn't match pod topology spread constraints"),
    ],
)
def test_a_switched_off_check_is_not_faced_and_not_reported(plugin: str, profile: dict[str, Any], reason: str) -> None:
    nodes = [n("a"), n("b"), n("c")]
    tasks = [t("x", "a", 1, labels={"app": "web"}, **PORT), t("y", "a", 1, labels={"app": "web"})]
    subject = t("new", cards=1, labels={"app": "web"}, **profile)
    on = mirror(nodes, tasks)
    assert reason in check(on, subject)["a"] or reason in check(on, subject)["b"]
    off = mirror(nodes, tasks, conf_without(PREDICATE_SWITCHES[plugin]))
    subj = off.subject_from_message(subject)
    assert not off.predicates.pod_level(subj)
    assert all(reason not in reasons for reasons in check(off, subject).values())
    assert podchecks.countable(off.conf, subj.profile)  # so the planner may search for it in the kernel


@pytest.mark.parametrize(
    "spec,expected",
    [
        ({}, set()),
        ({"labels": {"app": "web"}, "nodeSelector": {"zone": "a"}, "tolerations": [{"operator": "Exists"}]}, set()),
        ({"hostPorts": [{"port": 0}]}, set()),  # hostPort 0 claims nothing
        (PORT, {"NodePorts"}),
        (AFFINITY, {"PodAffinity"}),
        (ANTI, {"PodAntiAffinity"}),
        (SPREAD, {"PodTopologySpread"}),
        ({**PORT, **ANTI, **SPREAD}, {"NodePorts", "PodAntiAffinity", "PodTopologySpread"}),
    ],
)
def test_own_checks_shortcut_agrees_with_asking_every_check(spec: dict[str, Any], expected: set[str]) -> None:
    """A profile that sets none of OWN_FIELDS answers at once; the answer is the one every
    check's own test gives, with or without the shortcut."""
    from google.protobuf import json_format

    from sidecar.api.v1alpha1 import snapshot_pb2 as pb
    from sidecar.mirror.conf import SchedulerConf

    profile = json_format.ParseDict(spec, pb.TaskProfile())
    conf = SchedulerConf()
    asked = {c.name for c in podchecks.POD_LEVEL if c.own is not None and c.own(profile)}
    assert podchecks.own(conf, profile) == asked == expected
