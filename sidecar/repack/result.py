"""What a plan is: the moves and the outcome per node, with the fragmentation before and after.

Its own module so that the strategies that produce plans (``planner``, ``exact``) and the status
that reports them import it without importing each other; ``PlanningContext`` is what a strategy
reads of the planner that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sidecar.api.repackrun import TargetVerdict
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


@dataclass(frozen=True)
class TargetOutcome:
    """A targeted run's answer: the verdict on its PodGroup and where the gang would land."""

    group: int
    verdict: TargetVerdict
    min_available: int
    ready: int
    waiting: tuple[int, ...]
    #: (task, node) as allocate would place the gang, after the plan's moves
    placements: tuple[tuple[int, int], ...] = ()
    pipelined: frozenset[int] = frozenset()
    #: the first task that still does not fit (-1: none), and why
    stuck: int = -1
    why: str = ""


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
    #: a targeted run's answer for its workload (sidecar.repack.targeted)
    target: TargetOutcome | None = None

    @property
    def improvement(self) -> float:
        return self.before.percent - self.after.percent


class PlanningContext(Protocol):
    """The planner as a strategy sees it: the cluster, its mirror, the goal column, the run."""

    mirror: Mirror
    state: ClusterState
    goal: int
    spec: RunSpec
