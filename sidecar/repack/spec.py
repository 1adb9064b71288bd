"""RepackSpec validation and defaults: bad specs fail with the field named, before any planning
(:func:`validate`), and the one rule that needs the snapshot right after it is decoded
(:func:`require_provided_goal`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sidecar.api.v1alpha1 import spec_pb2
from sidecar.errors import InputError
from sidecar.repack.fragmentation import goal_resources
from sidecar.repack.scope import Scope, resolve_selector_spec
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import MAX_QUANTITY, to_volcano_units

#: The guide's interruption-cost weights, in the order of Weights' fields.
DEFAULT_WEIGHTS = (1.0, 0.8, 0.6, 0.3, 0.1)
#: Largest planner weight accepted. Each cost dimension is min-max normalised to [0, 1] and the
#: weights only rank candidates against each other, so a larger range buys nothing; bounding it
#: keeps the weighted sum finite.
MAX_WEIGHT = 1000.0


@dataclass(frozen=True)
class Weights:
    affected_workloads: float = DEFAULT_WEIGHTS[0]
    below_min_available: float = DEFAULT_WEIGHTS[1]
    affected_resources: float = DEFAULT_WEIGHTS[2]
    moved_resources: float = DEFAULT_WEIGHTS[3]
    moved_pods: float = DEFAULT_WEIGHTS[4]

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        return (
            self.affected_workloads,
            self.below_min_available,
            self.affected_resources,
            self.moved_resources,
            self.moved_pods,
        )


#: RepackTarget's fields: (proto field, JSON name, the workload kind it names)
TARGET_KINDS = (
    ("pod_group", "podGroup", "PodGroup"),
    ("job", "job", "Job"),
    ("model_serving", "modelServing", "ModelServing"),
)
#: a Kubernetes object name or namespace (DNS-1123 subdomain; namespaces are labels, a subset)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


@dataclass(frozen=True)
class Target:
    """``spec.for``: the waiting workload a targeted run makes room for."""

    kind: str  # PodGroup, Job or ModelServing
    namespace: str
    name: str
    path: str  # the field that named it, for errors ("spec.for.job")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class RunSpec:
    """A validated RepackSpec in the planner's terms (Volcano units)."""

    mode: str
    resource: str
    min_improvement: float  # percentage points
    scope: Scope
    max_pod_groups: int | None
    max_resource: float | None  # Volcano units of the goal resource
    weights: Weights
    scheduler_names: frozenset[str]
    #: "Greedy" or "Exact" (sidecar.repack.exact)
    strategy: str = "Greedy"
    #: the waiting workload to make room for (sidecar.repack.targeted); None: the guide's run
    target: Target | None = None


def validate(spec: spec_pb2.RepackSpec, path: str = "spec") -> RunSpec:
    if spec.mode == spec_pb2.RepackSpec.MODE_UNSPECIFIED:
        raise InputError(f"{path}.mode", "missing (DryRun or Execute)")
    if spec.mode not in spec_pb2.RepackSpec.Mode.values():
        raise InputError(f"{path}.mode", f"unknown mode {spec.mode} (DryRun or Execute)")
    if len(spec.goals) != 1:
        raise InputError(f"{path}.goals", f"exactly one goal per run, got {len(spec.goals)}")
    goal = spec.goals[0]
    if not goal.resource:
        raise InputError(f"{path}.goals[0].resource", "missing")
    if goal.resource in ("cpu", "memory", "pods"):
        raise InputError(f"{path}.goals[0].resource", f'"{goal.resource}" is not an extended resource')
    threshold = goal.min_frag_improvement_percent if goal.HasField("min_frag_improvement_percent") else 0.0
    if not math.isfinite(threshold) or not 0 <= threshold <= 100:
        raise InputError(f"{path}.goals[0].minFragImprovementPercent", f"must be within [0, 100], got {threshold}")
    max_pg: int | None = None
    if spec.max_per_run.HasField("pod_groups"):
        max_pg = spec.max_per_run.pod_groups
        if max_pg < 0:
            raise InputError(f"{path}.maxPerRun.podGroups", f"must not be negative (0: nothing may move), got {max_pg}")
    max_res: float | None = None
    for name, value in sorted(spec.max_per_run.resources.items()):
        if not math.isfinite(value) or value < 0:
            raise InputError(
                f'{path}.maxPerRun.resources["{name}"]', f"must not be negative (0: nothing may move), got {value}"
            )
        if name == goal.resource:
            max_res = to_volcano_units(name, value)
            if max_res >= MAX_QUANTITY:
                raise InputError(
                    f'{path}.maxPerRun.resources["{name}"]', f"{value:g} is {max_res:.3g} Volcano units, over 2^63"
                )
        else:
            raise InputError(
                f'{path}.maxPerRun.resources["{name}"]', f'only the goal resource "{goal.resource}" can be budgeted'
            )
    if spec.eviction.HasField("grace_period_seconds") and spec.eviction.grace_period_seconds < 0:
        raise InputError(f"{path}.eviction.gracePeriodSeconds", "must not be negative")
    if spec.HasField("ttl_seconds_after_finished") and spec.ttl_seconds_after_finished < 0:
        raise InputError(f"{path}.ttlSecondsAfterFinished", "must not be negative")
    weights = []
    for field_name, default in zip(
        (
            "affected_workloads_weight",
            "below_min_available_weight",
            "affected_resources_weight",
            "moved_resources_weight",
            "moved_pods_weight",
        ),
        DEFAULT_WEIGHTS,
        strict=True,
    ):
        value = getattr(spec.planner, field_name) if spec.planner.HasField(field_name) else default
        if not math.isfinite(value) or not 0 <= value <= MAX_WEIGHT:
            raise InputError(f"{path}.planner.{field_name}", f"must be within [0, {MAX_WEIGHT:g}], got {value:g}")
        weights.append(value)
    return RunSpec(
        mode=spec_pb2.RepackSpec.Mode.Name(spec.mode),
        resource=goal.resource,
        min_improvement=threshold,
        scope=resolve_selector_spec(spec.scope, f"{path}.scope"),
        max_pod_groups=max_pg,
        max_resource=max_res,
        weights=Weights(*weights),
        scheduler_names=frozenset(spec.planner.scheduler_names) or frozenset({"volcano"}),
        strategy=_strategy(spec.planner.strategy, f"{path}.planner.strategy"),
        target=_target(spec, f"{path}.for") if spec.HasField("target") else None,
    )


def _target(spec: spec_pb2.RepackSpec, path: str) -> Target:
    """Exactly one of podGroup, job, modelServing, as namespace/name (both DNS-1123 names)."""
    given = [
        (json, kind, getattr(spec.target, field)) for field, json, kind in TARGET_KINDS if getattr(spec.target, field)
    ]
    if len(given) != 1:
        choices = ", ".join(json for _, json, _ in TARGET_KINDS)
        found = f"got {', '.join(json for json, _, _ in given)}" if given else "got none"
        raise InputError(path, f"exactly one of {choices} ({found})")
    json, kind, value = given[0]
    where = f"{path}.{json}"
    namespace, sep, name = value.partition("/")
    if not sep or "/" in name:
        raise InputError(where, f'"{value}": a {kind} is named namespace/name')
    for part, what in ((namespace, "namespace"), (name, "name")):
        if len(part) > 253 or not _NAME.fullmatch(part):
            raise InputError(where, f'"{value}": {what} "{part}" is not a valid Kubernetes name')
    if spec.planner.strategy == spec_pb2.PlannerOptions.Exact:
        raise InputError(f"{path}", "a targeted run plans greedily: planner.strategy Exact is not supported with for")
    return Target(kind, namespace, name, where)


def _strategy(value: int, path: str) -> str:
    """Unset is Greedy; an unknown number (a newer client's enum) is refused, not guessed."""
    names = spec_pb2.PlannerOptions.Strategy
    if value == names.STRATEGY_UNSPECIFIED:
        return "Greedy"
    if value not in names.values():
        raise InputError(path, f"unknown strategy {value} (Greedy or Exact)")
    return names.Name(value)


def require_provided_goal(run: RunSpec, state: ClusterState, path: str = "spec") -> None:
    """The goal resource must be one some node provides, as Evaluate requires of the resources it
    is asked for (same wording): otherwise the run names a resource the cluster does not have."""
    if run.resource not in goal_resources(state):
        raise InputError(f"{path}.goals[0].resource", f'no node provides scalar resource "{run.resource}"')
