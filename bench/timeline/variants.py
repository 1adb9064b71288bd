"""The four variants compared on the same arrivals: when a repack runs and what it moves.

1. ``none``: Volcano alone.
2. ``schedule``: every ``period`` simulated minutes an untargeted Execute RepackRun for
   nvidia.com/gpu (the guide's run: free as many nodes as possible) with ``maxPerRun.podGroups``
   20, the budget bench.watcher_execute's Execute run uses; its moves are executed when its
   verdict is RepackRecommended (minFragImprovementPercent unset: any improvement).
3. ``pending``: the ``whenPending`` trigger as a RepackPolicy runs it (:class:`Trigger`), its
   check the product's (``sidecar.repack.pending.check``: the first candidate whose targeted plan
   lets it start gets the run), the run a TARGETED plan (``spec.for``: the job's PodGroup) made at
   admission and executed when RepackRecommended.
4. ``drain``: the same trigger with a first-fit-decreasing drain (bench.baselines.ffd_drain) in
   place of the planner, in the check and in the run, limited to the nodes the waiting job could
   use (a drain of any node would empty two-card nodes no 8-card pod can take): its node-by-node
   evictions are played on a checkpoint of the cluster through the same rebuild path as executed
   moves, after each drained node allocate is asked whether the job now starts, and the shortest
   such prefix is executed (none when even the whole drain does not let it start).

Every variant's runs are Execute runs under the watcher's admission: one at a time, none within
the cooldown after one that evicted pods (the engine's ``admit_after``): a trigger's run waits for
it, a scheduled run due within it is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.timeline.engine import Engine, Execution, Policy
from bench.timeline.targeted import JobPlan, check_drain, check_pending, drain_for, plan_untargeted, targeted_for
from sidecar.watcher.policy.reconciler import PolicyOptions
from sidecar.watcher.policy.spec import DEFAULT_RETRY_SECONDS

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
        engine.record.verdicts[f"run/{reason}"] = engine.record.verdicts.get(f"run/{reason}", 0) + 1
        ex = Execution(engine.now, "schedule", verdict=reason, seconds=seconds)
        ex.planned_moves, ex.planned_freed = len(moves), freed if moves else 0
        if moves:
            engine.relocate(moves, ex)
        else:
            engine.record.executions.append(ex)


@dataclass
class Trigger:
    """The whenPending trigger, as a RepackPolicy runs it (sidecar/watcher/policy) with a PodGroup
    selector that picks the whole-node jobs: every ``check`` seconds, while none of its runs is
    under way, the jobs waiting at least ``min_pending`` seconds since they arrived — not those whose
    last run was created less than ``retry`` seconds ago — go, longest waiting first, to ``choose``
    (the policy's check); a run is created for the job it picks, admitted once the cooldown allows
    (the run waits meanwhile, and the policy with it), and planned then by ``repacker``."""

    name: str
    choose: Callable[[Engine, list[int], int], tuple[int | None, list[str]]]
    repacker: Callable[[Engine, int], JobPlan]
    min_pending: float = 300.0
    check: float = PolicyOptions().resync
    retry: float = float(DEFAULT_RETRY_SECONDS)
    max_plans: int = PolicyOptions().max_plans
    _run_for: int = -1  # the job of the run created and not yet admitted
    _tried: dict[int, float] = field(default_factory=dict)  # job -> when its last run was created

    @property
    def period(self) -> float:
        return self.check

    def tick(self, engine: Engine) -> None:
        now, record = engine.now, engine.record
        if self._run_for < 0:
            candidates = [
                j
                for j in engine.waiting_whole_node()
                if now - engine.jobs[j].arrival >= self.min_pending
                and now - self._tried.get(j, -self.retry) >= self.retry
            ]
            if not candidates:
                return
            started = time.perf_counter()
            chosen, verdicts = self.choose(engine, candidates, self.max_plans)
            record.planner_calls.append(time.perf_counter() - started)
            for v in verdicts:
                record.verdicts[f"check/{v}"] = record.verdicts.get(f"check/{v}", 0) + 1
            if chosen is None:
                return
            self._run_for, self._tried[chosen] = chosen, now
        if now < engine.admit_after:
            return  # ExecuteCooldownActive: the run waits for admission
        j, self._run_for = self._run_for, -1
        if j not in engine.waiting or engine.runs[j].start >= 0:
            record.verdicts["run/started before admission"] = record.verdicts.get("run/started before admission", 0) + 1
            return
        started = time.perf_counter()
        answer = self.repacker(engine, j)
        seconds = time.perf_counter() - started
        record.planner_calls.append(seconds)
        record.verdicts[f"run/{answer.verdict}"] = record.verdicts.get(f"run/{answer.verdict}", 0) + 1
        if answer.moves is None:
            return
        ex = Execution(now, self.name, target_job=j, verdict=answer.verdict, seconds=seconds)
        ex.planned_moves, ex.planned_freed = len(answer.moves), answer.freed
        engine.relocate(answer.moves, ex)
        engine.cycle()
        ex.target_started = j not in engine.waiting


def variants(schedule_minutes: float, min_pending: float, check: float, retry: float) -> list[Policy]:
    """Fresh policy objects, one per variant (a trigger keeps per-job retry times)."""
    return [
        NoRepack(),
        Scheduled(schedule_minutes),
        Trigger("pending", check_pending, targeted_for, min_pending, check, retry),
        Trigger("drain", check_drain, drain_for, min_pending, check, retry),
    ]
