"""What a plan is: the moves and the outcome per node, with the fragmentation before and after.

Its own module so that the strategies that produce plans (``planner``, ``exact``) and the status
that reports them import it without importing each other; ``PlanningContext`` is what a strategy
reads of the planner that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sidecar.mirror.core import Mirror
from sidecar.repack.candidates import Outcome
from sidecar.repack.cost import GangState
from sidecar.repack.fragmentation import Fragmentation
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState


@dataclass(frozen=True)
class Move:
    task: int
    source: int
    target: int


@dataclass
class PlanResult:
    resource: str
    before: Fragmentation
    after: Fragmentation
    moves: list[Move]
    freed: list[int]
    outcomes: dict[int, Outcome]
    gang: GangState
    pod_group_count: int  # PodGroups in scope
    node_count: int  # nodes in scope

    @property
    def improvement(self) -> float:
        return self.before.percent - self.after.percent


class PlanningContext(Protocol):
    """The planner as a strategy sees it: the cluster, its mirror, the goal column, the run."""

    mirror: Mirror
    state: ClusterState
    goal: int
    spec: RunSpec
