"""The registry of Volcano's feasibility checks: one row per check, read by everything that has to
know which checks depend on other pods.

Kubernetes' scheduler keeps its plugins in a registry and each plugin declares its extension
points; here each check declares what the planner and the explainer need to know of it:

- ``pod_level``: whether other pods' placement can change its answer (affinity, spread, ports).
  A pod with no active pod-level check is decided by its node-only checks alone, which the
  receiver kernel evaluates in one pass; the others go through the mirror's Filter;
- ``domain_rule``: whether it is a count per topology domain (:mod:`domainrules`), which the
  kernel search counts itself; a pod whose active pod-level checks are all domain rules is
  planned in the kernel;
- ``reasons``: its rows in :data:`sidecar.mirror.explain.REASONS` (every row belongs to one check);
- ``plugin``: what switches it on (:func:`switched_on`): the Kubernetes plugin Volcano's
  predicates plugin calls for it, which ``volcano-scheduler.conf`` can switch off
  (``predicate.*Enable``); :data:`PREDICATES` for a check of the predicates plugin itself (on
  with the plugin); None for allocate's own resource fit (always on).

Which checks a pod *faces* (:func:`active`) is a function of its profile and namespace, so the
callers cache it per pair.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.podindex import PodIndex
from sidecar.mirror.simulation import claims_ports
from sidecar.mirror.types import Subject


@dataclass(frozen=True)
class Check:
    name: str
    plugin: str | None
    pod_level: bool
    domain_rule: bool
    reasons: tuple[str, ...]
    #: does the pod's own spec give the check work? None: the check reads other pods' terms
    #: (existing pods' anti-affinity toward this pod), decided with the pod index
    own: Callable[[Any], bool] | None = None


#: a check of Volcano's predicates plugin itself, on whenever the plugin is
PREDICATES = "predicates"

CHECKS: tuple[Check, ...] = (
    # allocate's resource check, then the predicates plugin in its order (predicates.py)
    Check("resources", None, False, False, ("insufficient",)),
    Check("pod_number", PREDICATES, False, False, ("pod_number",)),
    Check("NodeUnschedulable", PREDICATES, False, False, ("unschedulable",)),
    Check("NodeAffinity", "NodeAffinity", False, False, ("node_affinity",)),
    Check("TaintToleration", "TaintToleration", False, False, ("taint",)),
    Check("NodePorts", "NodePorts", True, False, ("ports",), own=claims_ports),
    Check("PodAffinity", "InterPodAffinity", True, False, ("affinity",), own=lambda p: bool(p.pod_affinity)),
    Check(
        "PodAntiAffinity",
        "InterPodAffinity",
        True,
        True,
        ("anti_affinity",),
        own=lambda p: bool(p.pod_anti_affinity),
    ),
    Check("ExistingAntiAffinity", "InterPodAffinity", True, True, ("existing_anti_affinity",)),
    Check(
        "PodTopologySpread",
        "PodTopologySpread",
        True,
        True,
        ("spread_label", "spread"),
        own=lambda p: bool(p.topology_spread_constraints),
    ),
)

POD_LEVEL: tuple[Check, ...] = tuple(c for c in CHECKS if c.pod_level)
BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}
#: the checks InterPodAffinity's Filter answers together
INTER_POD: frozenset[str] = frozenset(c.name for c in CHECKS if c.plugin == "InterPodAffinity")


def switched_on(conf: SchedulerConf, name: str) -> bool:
    """Does the scheduler conf run check ``name``?"""
    plugin = BY_NAME[name].plugin
    if plugin is None:
        return True
    if plugin == PREDICATES:
        return conf.predicates_plugin
    return conf.predicate_on(plugin)


#: every profile field an ``own`` test reads: a profile with none of them set gives no check work
OWN_FIELDS = ("host_ports", "pod_affinity", "pod_anti_affinity", "topology_spread_constraints")
_NONE: frozenset[str] = frozenset()
_own_fields = operator.attrgetter(*OWN_FIELDS)


def own(conf: SchedulerConf, profile: Any) -> frozenset[str]:
    """The pod-level checks switched on that the pod's own spec gives work: a function of the
    profile alone (callers cache it per profile row). Most pods set none of :data:`OWN_FIELDS`,
    which answers without asking each check."""
    if not any(_own_fields(profile)):
        return _NONE
    return frozenset(c.name for c in POD_LEVEL if c.own is not None and c.own(profile) and switched_on(conf, c.name))


def active(
    conf: SchedulerConf, index: PodIndex, subj: Subject, own_checks: frozenset[str] | None = None
) -> frozenset[str]:
    """The pod-level checks ``subj`` faces: switched on, and given work by its own spec
    (``own_checks``: :func:`own` of its profile, when the caller has it) or by an existing pod's
    anti-affinity toward it."""
    out = own(conf, subj.profile) if own_checks is None else own_checks
    others = [c.name for c in POD_LEVEL if c.own is None and switched_on(conf, c.name)]
    if others and index.anti_groups and index.anti_targets(subj):
        out = out | frozenset(others)
    return out


def countable(conf: SchedulerConf, profile: Any, own_checks: frozenset[str] | None = None) -> bool:
    """Are all the pod-level checks a pod with this profile faces domain rules? (Only checks on
    the pod's own spec can be other than domain rules, so the profile decides.)"""
    mine = own(conf, profile) if own_checks is None else own_checks
    return all(BY_NAME[name].domain_rule for name in mine)
