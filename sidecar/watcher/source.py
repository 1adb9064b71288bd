"""Which cluster view a run is planned on: the scheduler's session ``latest`` while it is fresh,
otherwise the watcher's informer cache (ARCHITECTURE: "latest session when fresh").

``latest`` is what Volcano itself saw in its newest cycle (the extender intake, merged with the
PDBs and namespace labels this watcher pushes), so pipelined tasks and allocations not yet bound
count as the scheduler counts them. A plan names pods and owners but not their UIDs, and the
journal needs those; they come from the informer snapshot. When the two views disagree about a
moved pod (unknown to the informers, or on another node) the session's plan is dropped and the run
is planned again on the informer snapshot, which agrees with itself by construction: a plan is
never journaled on a mix of two views.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from sidecar.api.v1alpha1 import plan_pb2, service_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.watcher import observer as observe
from sidecar.watcher.sidecarport import PLANNER_ERRORS, Sidecar

log = structlog.get_logger("sidecar.watcher")
#: the session's age is unknown (no trailer): never fresh
UNKNOWN_AGE = math.inf
SESSION, INFORMER = "session", "informer"


@dataclass(frozen=True)
class Planned:
    response: service_pb2.PlanResponse
    #: the informer snapshot: where the journal reads UIDs and owners (the session's plan agrees with it)
    snapshot: pb.Snapshot
    #: SESSION or INFORMER
    source: str
    #: seconds since the session's snapshot was taken (0 for the informer cache, read just now)
    age: float = 0.0

    def describe(self) -> str:
        if self.source == SESSION:
            return f"the scheduler's session latest ({self.age:.1f} s old)"
        return "the informer cache"


def disagreement(plan: plan_pb2.Plan, snapshot: pb.Snapshot) -> str:
    """Why ``plan`` (made on another view) cannot be journaled on ``snapshot``; "" when it can."""
    where = {(t.namespace, t.name): t.node for t in snapshot.tasks}
    groups = {(g.namespace, g.name) for g in snapshot.pod_groups}
    for move in plan.moves:
        if move.pod_group_name and (move.namespace, move.pod_group_name) not in groups:
            return f"PodGroup {move.namespace}/{move.pod_group_name} is not in the informer cache"
        for pod in move.pods:
            node = where.get((move.namespace, pod.name))
            if node is None:
                return f"pod {move.namespace}/{pod.name} is not in the informer cache"
            if node != pod.from_node:
                seen = node or "no node"
                return f"pod {move.namespace}/{pod.name} is on {seen}, not {pod.from_node}, in the informer cache"
    return ""


def plan_run(
    sidecar: Sidecar,
    spec: spec_pb2.RepackSpec,
    snapshot: Callable[[], pb.Snapshot],
    *,
    max_age: float,
    run: str = "",
) -> Planned:
    """Plan ``spec`` on ``latest`` when it is at most ``max_age`` seconds old (0 disables), else on
    ``snapshot()``. Errors of the informer plan propagate (PLANNER_ERRORS); the session's are only
    a reason to fall back."""
    view = snapshot()
    if max_age > 0:
        try:
            response, age = sidecar.plan_latest(service_pb2.PlanRequest(spec=spec))
        except PLANNER_ERRORS as exc:
            log.debug("session latest not used", run=run, reason=f"{type(exc).__name__}: {exc}")
        else:
            why = f"{age:.1f} s old, over --session-max-age {max_age:g} s" if age > max_age else ""
            why = why or disagreement(response.status.plan, view)
            if not why:
                observe.planned(SESSION)
                return Planned(response, view, SESSION, age)
            log.info("session latest not used", run=run, reason=why)
    response = sidecar.plan(service_pb2.PlanRequest(snapshot=view, spec=spec))
    observe.planned(INFORMER)
    return Planned(response, view, INFORMER)
