"""The RepackRun's words: its phases, condition types and reasons, and its Execute journal's
eviction and placement phases, one definition each.

The watcher writes them, the CRD's printer columns show them, the CLI's demo narrates them;
``StrEnum`` members are the strings the API stores (``Phase.RUNNING == "Running"``), so a status
read back from the API compares equal to them.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    DRY_RUN = "DryRun"
    EXECUTE = "Execute"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


#: phases a run does not leave
TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)


class Condition(StrEnum):
    WAITING = "Waiting"
    PROGRESSING = "Progressing"
    COMPLETE = "Complete"
    FAILED = "Failed"


class Reason(StrEnum):
    # admission (Waiting)
    ADMITTED = "Admitted"
    RELEASED = "Released"
    ANOTHER_RUN_ACTIVE = "AnotherRunActive"
    COOLDOWN_ACTIVE = "ExecuteCooldownActive"
    PLANNER_UNAVAILABLE = "PlannerUnavailable"
    INVALID_SPEC = "InvalidSpec"
    # progress (Progressing)
    EVICTING = "Evicting"
    PLACING = "Placing"
    # the planner's verdict (Complete, DryRun and a replan with no moves)
    NO_FRAGMENTATION = "NoFragmentation"
    INSUFFICIENT_IMPROVEMENT = "InsufficientImprovement"
    REPACK_RECOMMENDED = "RepackRecommended"
    # a targeted run's verdict (Complete), when nothing needs to move or nothing can help
    TARGET_ALREADY_RUNNING = "TargetAlreadyRunning"
    TARGET_FITS_NOW = "TargetFitsWithoutRepack"
    TARGET_DOES_NOT_FIT = "TargetDoesNotFit"
    TARGET_DELETED = "TargetDeleted"
    # outcome (Complete / Failed)
    EXECUTION_COMPLETED = "ExecutionCompleted"
    EXECUTION_COMPLETED_ELSEWHERE = "ExecutionCompletedWithAlternativePlacement"
    EVICTION_BLOCKED = "EvictionBlocked"
    EXECUTION_TIMED_OUT = "ExecutionTimedOut"
    PARTIALLY_COMPLETED = "PartiallyCompleted"


class TargetVerdict(StrEnum):
    """``status.plan.target.verdict``: what a targeted run found for its workload."""

    ALREADY_RUNNING = "AlreadyRunning"
    FITS_NOW = "FitsNow"
    FITS = "Fits"
    DOES_NOT_FIT = "DoesNotFit"


class Waits(StrEnum):
    """``PendingVerdict.verdict``: why a waiting PodGroup waits (CheckPending, a policy's status)."""

    RUNNING = "Running"
    FITS_NOW = "FitsNow"
    ENQUEUE = "Enqueue"
    CAPACITY = "Capacity"
    FRAGMENTATION = "Fragmentation"
    NO_PLAN = "NoPlan"
    UNCHECKED = "Unchecked"
    NOT_FOUND = "NotFound"
    NOT_VOLCANO = "NotVolcano"


class TargetPhase(StrEnum):
    """``status.target.phase``: a targeted Execute run's workload."""

    WAITING = "Waiting"
    NOMINATED = "Nominated"
    STARTED = "Started"
    DELETED = "Deleted"
    NOT_STARTED = "NotStarted"


#: target phases a run does not leave
TARGET_SETTLED = (TargetPhase.STARTED, TargetPhase.DELETED, TargetPhase.NOT_STARTED)


class NominationPhase(StrEnum):
    """``status.target.nominations[].phase``."""

    PENDING = "Pending"
    NOMINATED = "Nominated"
    BOUND = "Bound"
    BOUND_ELSEWHERE = "BoundElsewhere"
    GONE = "Gone"


class EvictionPhase(StrEnum):
    """``status.relocations[].eviction.phase``."""

    PENDING = "Pending"
    EVICTED = "Evicted"
    BLOCKED = "Blocked"
    FAILED = "Failed"


class PlacementPhase(StrEnum):
    """``status.relocations[].placement.phase``."""

    PENDING = "Pending"
    WAITING_FOR_REPLACEMENT = "WaitingForReplacement"
    NOMINATED = "Nominated"
    WAITING_FOR_SCHEDULER = "WaitingForScheduler"
    BOUND = "Bound"
    BOUND_ELSEWHERE = "BoundElsewhere"
    SKIPPED = "Skipped"
    TIMED_OUT = "TimedOut"


#: placement phases a relocation does not leave
PLACEMENT_TERMINAL = (PlacementPhase.BOUND, PlacementPhase.BOUND_ELSEWHERE, PlacementPhase.SKIPPED,
                      PlacementPhase.TIMED_OUT)  # fmt: skip
