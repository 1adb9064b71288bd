"""The four variants compared on the same arrivals: when a repack runs and what it moves.

1. ``none``: Volcano alone.
2. ``schedule``: every ``period`` simulated minutes an untargeted Execute RepackRun for
   nvidia.com/gpu (the guide's run: free as many nodes as possible) with ``maxPerRun.podGroups``
   20, the budget bench.watcher_execute's Execute run uses; its moves are executed when its
   verdict is RepackRecommended (minFragImprovementPercent unset: any improvement).
3. ``pending``: the ``whenPending`` trigger. Every ``check`` seconds the policy looks at the
   whole-node jobs that have waited at least ``min_pending`` seconds and do not fit (the last
   allocate cycle left them waiting), oldest first, and plans for them one by one with a TARGETED
   run (``spec.for``: their PodGroup), at most ``max_plans_per_check`` a look, until one plan is
   RepackRecommended; that plan is executed. A job whose plan is not is asked again no sooner
   than ``retry`` seconds later.
4. ``drain``: the same trigger with a first-fit-decreasing drain (bench.baselines.ffd_drain) in
   place of the planner, limited to the nodes the waiting job could use (a drain of any node would
   empty two-card nodes no 8-card pod can take): its node-by-node evictions are played on a
   checkpoint of the cluster through the same rebuild path as executed moves, after each drained
   node allocate is asked whether the job now starts, and the shortest such prefix is executed
   (none when even the whole drain does not let it start).

Every variant's runs are Execute runs under the watcher's admission: one at a time, none within
the cooldown after one that evicted pods (the engine's ``admit_after``); a look that falls in it
plans nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.timeline.engine import Engine, Execution, Policy
from bench.timeline.targeted import JobPlan, drain_for, plan_untargeted, targeted_for

#: maxPerRun.podGroups of the scheduled run (bench.watcher_execute's Execute run)
SCHEDULE_BUDGET = 20


class NoRepack:
    name = "none"
    period: float | None = None

    def tick(self, engine: Engine) -> None:  # pragma: no cover - never called (no period)
        return None


@dataclass
class Scheduled:
    """An untargeted Execute run every ``minutes`` simulated minutes."""

    minutes: float = 60.0
    budget: int = SCHEDULE_BUDGET
    name: str = "schedule"

    @property
    def period(self) -> float:
        return self.minutes * 60.0

    def tick(self, engine: Engine) -> None:
        if engine.now < engine.admit_after:
            return  # the run would wait for the cooldown; the next period plans again
        started = time.perf_counter()
        moves, reason, freed = plan_untargeted(engine, self.budget)
        seconds = time.perf_counter() - started
        engine.record.planner_calls.append(seconds)
        engine.record.verdicts[reason] = engine.record.verdicts.get(reason, 0) + 1
        ex = Execution(engine.now, "schedule", verdict=reason, seconds=seconds)
        ex.planned_moves, ex.planned_freed = len(moves), freed if moves else 0
        if moves:
            engine.relocate(moves, ex)
        else:
            engine.record.executions.append(ex)


@dataclass
class Trigger:
    """The whenPending trigger with a repacker: ``repacker(engine, job)`` answers the moves that let
    the job start (None: none to execute)."""

    name: str
    repacker: Callable[[Engine, int], JobPlan]
    min_pending: float = 300.0
    check: float = 60.0
    retry: float = 600.0
    max_plans_per_check: int = 3
    _next_try: dict[int, float] = field(default_factory=dict)

    @property
    def period(self) -> float:
        return self.check

    def tick(self, engine: Engine) -> None:
        if engine.now < engine.admit_after:
            return  # within the cooldown after an Execute run: no run is admitted
        plans = 0
        for j in engine.waiting_whole_node():
            if plans >= self.max_plans_per_check:
                return
            if engine.now - engine.jobs[j].arrival < self.min_pending or engine.now < self._next_try.get(j, 0.0):
                continue
            plans += 1
            started = time.perf_counter()
            answer = self.repacker(engine, j)
            seconds = time.perf_counter() - started
            engine.record.planner_calls.append(seconds)
            engine.record.verdicts[answer.verdict] = engine.record.verdicts.get(answer.verdict, 0) + 1
            if answer.moves is None:
                self._next_try[j] = engine.now + self.retry
                continue
            ex = Execution(engine.now, self.name, target_job=j, verdict=answer.verdict, seconds=seconds)
            ex.planned_moves, ex.planned_freed = len(answer.moves), answer.freed
            engine.relocate(answer.moves, ex)
            engine.cycle()
            ex.target_started = j not in engine.waiting
            return  # one Execute run at a time


def variants(schedule_minutes: float, min_pending: float, check: float, retry: float) -> list[Policy]:
    """Fresh policy objects, one per variant (a trigger keeps per-job retry times)."""
    return [
        NoRepack(),
        Scheduled(schedule_minutes),
        Trigger("pending", targeted_for, min_pending, check, retry),
        Trigger("drain", drain_for, min_pending, check, retry),
    ]
