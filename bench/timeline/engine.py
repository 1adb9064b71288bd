"""The event loop: arrivals, departures and Volcano's allocate cycles on one Simulation.

One scheduling rule: every start — an arriving job, a waiting one, a rebuilt pod — is decided by
:func:`sidecar.mirror.allocate.allocate_job` on the engine's Simulation with the scheduler conf
given (default: the project's, Volcano's helm chart). What is ours is only *when* it is asked:

* Volcano runs a session every second and tries every waiting job in job order (priority, then
  creation time: here arrival order — every job has priority 0, and the gang and drf orders tie
  on jobs that hold nothing). A job that failed keeps failing until resources are freed, so the
  loop asks again only then: after a departure or an eviction it runs a full cycle over the
  waiting jobs in arrival order; an arriving job is tried at once unless an earlier job of its
  *class* (same profile, requests, pod count and minimum) already failed since the last freeing —
  it would fail too, since placements since then only took resources. This is the 1-second cycle
  with the idle seconds skipped: the same starts at the same instants.
* A cheap necessary condition (enough idle cpu, memory, cards and pod slots for the job's pods on
  whole nodes, no other check) skips allocate calls that cannot succeed; allocate decides the rest.
* Not modelled: the enqueue action's overcommit gate (every job is Inqueue), queues and
  proportion (one queue), preemption and reclaim (not in the default conf's actions), pod
  start-up time (a job runs from the instant allocate binds it).

Executed repacks (:meth:`Engine.relocate`) are Execute runs: one at a time, instantly, and none
admitted within ``cooldown`` seconds of one that evicted a pod (the watcher's serial admission and
its ``--execute-cooldown``, 300 s by default); each evicted pod is rebuilt at once, nominated to its
planned node (a Pending pod with nominatedNodeName, which Volcano's cache holds as Pipelined
there, as the product's Execute leaves it) and given to allocate, which binds it there when it
still fits, else on Volcano's best node; a pod no node takes waits like any other, its job
suspended. Every job an eviction touches loses ``restart_delay`` seconds (its departure moves by
that much): a stand-in for the eviction's grace period, the rebuild and the container's restart,
with no lost progress beyond it (checkpointed work). Whole-node gangs are never moved by either
repacker (no occupied node has room for an 8-card pod), so no gang restart is modelled.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bench.timeline.workload import GPU, WHOLE_NODE_CARDS, Job, Workload
from sidecar.mirror.allocate import allocate_job
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.units import TOLERANCE

DEPART, ARRIVE, POLICY, SAMPLE = 0, 1, 2, 3

#: a job's class: profile, requests, pods waiting, pods still needed for minAvailable
Key = tuple[int, bytes, int, int]


class Policy(Protocol):
    """A repack variant: called every ``period`` simulated seconds (None: never)."""

    @property
    def name(self) -> str: ...

    @property
    def period(self) -> float | None: ...

    def tick(self, engine: Engine) -> None: ...


@dataclass
class JobRun:
    """One job's life in one run (-1: not yet)."""

    start: float = -1.0
    finish: float = -1.0  # the departure due; -1 while not running or suspended
    remaining: float = -1.0  # run time left while suspended (a rebuilt pod waits)
    done: bool = False
    evicted: int = 0  # pods evicted over its life


@dataclass
class Execution:
    """One executed repack (planner or drain) and what it did to the cluster."""

    time: float
    kind: str
    target_job: int = -1
    verdict: str = ""
    planned_moves: int = 0
    planned_freed: int = 0  # nodes the plan (or the drain's prefix) empties
    evicted: int = 0
    on_target: int = 0
    elsewhere: int = 0
    waiting: int = 0
    below_min: int = 0  # PodGroups the evictions put below minAvailable
    gangs_below_min: int = 0  # of them, PodGroups of more than one pod
    target_started: bool = False
    seconds: float = 0.0  # wall time of the planning: timing only, never in the deterministic JSON


@dataclass
class Sample:
    time: float
    allocated: float  # cards bound
    demand: float  # cards of jobs arrived and not finished (running or waiting)
    waiting_jobs: int
    waiting_whole_node: int
    empty_whole_nodes: int  # 8-card nodes with no card allocated


@dataclass
class Record:
    """Everything a run leaves for the metrics."""

    runs: list[JobRun]
    samples: list[Sample] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    planner_calls: list[float] = field(default_factory=list)  # wall seconds per planner/drain call
    verdicts: dict[str, int] = field(default_factory=dict)  # each plan's answer, counted
    end: float = 0.0


class Engine:
    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        *,
        restart_delay: float = 60.0,
        cooldown: float = 300.0,
        sample_period: float = 60.0,
        conf: SchedulerConf | None = None,
    ) -> None:
        self.workload, self.policy = workload, policy
        self.state = state = workload.state
        self.jobs = workload.jobs
        self.mirror = Mirror(state, conf)
        self.sim = Simulation(state)
        self.goal = state.resource(GPU)
        self.restart_delay, self.sample_period = restart_delay, sample_period
        self.cooldown = cooldown
        #: no Execute run is admitted before this time (the watcher's serial admission and cooldown)
        self.admit_after = 0.0
        self.task_job = np.full(state.n_tasks, -1, np.int64)
        for job in self.jobs:
            self.task_job[list(job.tasks)] = job.index
        self.record = Record([JobRun() for _ in self.jobs])
        self.runs = self.record.runs
        self.now = 0.0
        self._events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self._queues: dict[Key, list[int]] = {}  # class -> heap of waiting job indices
        self._key: dict[int, Key] = {}
        self.waiting: dict[int, list[int]] = {}  # waiting job -> its tasks still to place
        self._blocked: set[Key] = set()
        self._dirty = False
        self.demand = 0.0
        alloc = state.node_alloc[:, self.goal]
        self.whole_nodes = np.flatnonzero(np.abs(alloc - WHOLE_NODE_CARDS * 1000.0) <= TOLERANCE)

    # -- the clock ---------------------------------------------------------------------------

    def push(self, when: float, kind: int, data: int) -> None:
        heapq.heappush(self._events, (when, kind, self._seq, data))
        self._seq += 1

    def run(self, until: float) -> Record:
        """Play every event up to ``until`` seconds; the record of the run."""
        for job in self.jobs:
            if job.arrival < until:
                self.push(job.arrival, ARRIVE, job.index)
        if self.policy.period:
            self.push(self.policy.period, POLICY, 0)
        self.push(0.0, SAMPLE, 0)
        while self._events and self._events[0][0] < until:
            when, kind, _, data = heapq.heappop(self._events)
            self.now = when
            if kind != DEPART and self._dirty:
                self.cycle()
            if kind == DEPART:
                self._depart(data, when)
            elif kind == ARRIVE:
                self._arrive(data)
            elif kind == POLICY:
                self.policy.tick(self)
                if self._dirty:
                    self.cycle()
                assert self.policy.period
                self.push(when + self.policy.period, POLICY, 0)
            else:
                self._sample()
                self.push(when + self.sample_period, SAMPLE, 0)
            if self._dirty and (not self._events or self._events[0][0] > when):
                self.cycle()  # the freed resources are offered at the instant they are freed
        self.record.end = until
        return self.record

    # -- jobs --------------------------------------------------------------------------------

    def _class(self, job: Job, tasks: Sequence[int]) -> Key:
        state, t = self.state, tasks[0]
        need = len(tasks)
        if job.group >= 0:
            placed = len(job.tasks) - len(tasks)
            need = max(int(state.pod_groups[job.group].min_member) - placed, 0)
        return (int(state.task_profile[t]), state.task_req[list(tasks)].tobytes(), len(tasks), need)

    def _enqueue(self, j: int, tasks: list[int]) -> Key:
        key = self._class(self.jobs[j], tasks)
        self.waiting[j] = tasks
        self._key[j] = key
        heapq.heappush(self._queues.setdefault(key, []), j)
        return key

    def _arrive(self, j: int) -> None:
        job = self.jobs[j]
        self.demand += job.cards
        key = self._enqueue(j, list(job.tasks))
        if key in self._blocked or not self._try(j):
            self._blocked.add(key)

    def _depart(self, j: int, when: float) -> None:
        run = self.runs[j]
        if run.done or run.finish != when:
            return  # a departure a later eviction moved
        run.done = True
        self.demand -= self.jobs[j].cards
        for t in self.jobs[j].tasks:
            if self.sim.node_of[t] >= 0 and self.sim.on_node()[t]:
                self.sim.remove(t)
            self.sim.status[t] = ts.SUCCEEDED
        self.sim.commit()
        self._dirty = True

    def _may_fit(self, j: int, tasks: Sequence[int]) -> bool:
        """Necessary: the idle resources of whole nodes hold as many of the pods (one request
        each) as the job needs to be ready — and at least one."""
        req = self.state.task_req[tasks[0]]
        dims = req > TOLERANCE
        idle = self.sim.idle()[:, dims]
        per_node = np.floor((idle + TOLERANCE) / req[dims]).min(axis=1)
        need = max(self._key[j][3], 1)
        return bool(np.clip(per_node, 0, None).sum() >= need)

    def _try(self, j: int) -> bool:
        """One allocate cycle for waiting job ``j``; True when it started (or resumed). A job that
        is ready with tasks left (minAvailable below its size) goes on as Volcano pushes it back
        into the session's queue; what still finds no node waits for the next cycle."""
        tasks = self.waiting[j]
        if not self._may_fit(j, tasks):
            return False
        job = self.jobs[j]
        rest = tasks
        while rest:
            done = allocate_job(self.mirror, self.sim, job.group, rest)
            if not done.ready or not done.placed:  # (ready with nothing placed: enough others run)
                if done.pipelined_ready:  # reservations only: Volcano binds nothing this cycle
                    self.sim.rollback()
                break
            self.sim.commit()
            placed = {t for t, _ in done.placed}
            rest = [t for t in rest if t not in placed]
        if len(rest) == len(tasks):
            return False
        key = self._key.pop(j)
        queue = self._queues[key]
        assert queue[0] == j
        heapq.heappop(queue)
        del self.waiting[j]
        if rest:
            self._enqueue(j, rest)
        run = self.runs[j]
        if run.start < 0:
            run.start = self.now
            run.finish = self.now + job.life
            self.push(run.finish, DEPART, j)
        elif run.finish < 0 and not rest:  # a suspended job whose rebuilt pods are all back
            run.finish = self.now + run.remaining + self.restart_delay
            run.remaining = -1.0
            self.push(run.finish, DEPART, j)
        return True

    def cycle(self) -> None:
        """A full allocate pass over the waiting jobs in arrival order (module docstring)."""
        self._dirty = False
        self._blocked.clear()
        heads = [(q[0], key) for key, q in self._queues.items() if q]
        heapq.heapify(heads)
        while heads:
            j, key = heapq.heappop(heads)
            if self._try(j):
                queue = self._queues[key]
                if queue:
                    heapq.heappush(heads, (queue[0], key))
            else:
                self._blocked.add(key)

    # -- repacks -----------------------------------------------------------------------------

    def rebuild(self, t: int, target: int) -> int:
        """Evict task ``t`` and hand its rebuilt pod, nominated to ``target``, to allocate: the
        node it is bound to, or -1 (it waits, Pending). Only the Simulation changes: callers
        checkpoint around it to look ahead, or :meth:`relocate` to keep it."""
        sim = self.sim
        sim.remove(t)
        sim.status[t] = ts.PENDING
        sim.pipeline(t, target)
        done = allocate_job(self.mirror, sim, int(self.state.task_pod_group[t]), [t])
        if done.ready:
            return done.placed[0][1]
        sim.remove(t)  # the nomination stays no reservation: the pod waits like any other
        sim.status[t] = ts.PENDING
        return -1

    def relocate(self, moves: Sequence[tuple[int, int]], ex: Execution) -> None:
        """Execute ``moves`` (task, planned node) in order and count them into ``ex``."""
        state = self.state
        touched: dict[int, int] = {}
        running_before: dict[int, int] = {}
        for t, target in moves:
            if self.sim.node_of[t] < 0 or not self.sim.on_node()[t]:
                continue
            j = int(self.task_job[t])
            group = int(state.task_pod_group[t])
            if group >= 0 and group not in running_before:
                running_before[group] = self._running(self.jobs[j])
            node = self.rebuild(t, target)
            self.sim.commit()
            ex.evicted += 1
            touched[j] = touched.get(j, 0) + 1
            self.runs[j].evicted += 1
            if node == target:
                ex.on_target += 1
            elif node >= 0:
                ex.elsewhere += 1
            else:
                ex.waiting += 1
                run = self.runs[j]
                if run.finish >= 0:
                    run.remaining = max(run.finish - self.now, 0.0)
                    run.finish = -1.0
                tasks = [*self.waiting.get(j, []), t]
                if j in self.waiting:
                    self._drop(j)
                self._enqueue(j, tasks)
        for j, moved in touched.items():
            group, run = self.jobs[j].group, self.runs[j]
            if group >= 0:
                min_member = int(state.pod_groups[group].min_member)
                before = running_before[group]
                if before >= min_member > before - moved:
                    ex.below_min += 1
                    ex.gangs_below_min += len(self.jobs[j].tasks) > 1
            if run.finish >= 0:  # placed again at once: the restart costs the job its delay
                run.finish += self.restart_delay
                self.push(run.finish, DEPART, j)
        self._dirty = True
        self.record.executions.append(ex)
        if ex.evicted:  # a run that evicted nothing starts no cooldown (watcher/execute/serial.py)
            self.admit_after = self.now + self.cooldown

    def _drop(self, j: int) -> None:
        key = self._key.pop(j)
        queue = self._queues[key]
        queue.remove(j)
        heapq.heapify(queue)
        del self.waiting[j]

    def _running(self, job: Job) -> int:
        return int(sum(1 for t in job.tasks if self.sim.node_of[t] >= 0 and self.sim.on_node()[t]))

    def fits(self, j: int) -> bool:
        """Would waiting job ``j`` start on the cluster as it is now? (allocate, then undone)"""
        mark = self.sim.checkpoint()
        done = allocate_job(self.mirror, self.sim, self.jobs[j].group, self.waiting[j])
        self.sim.rollback(mark)
        return done.ready

    def waiting_whole_node(self) -> list[int]:
        """Waiting whole-node jobs that have not started yet, oldest first."""
        return sorted(j for j in self.waiting if self.jobs[j].whole_node and self.runs[j].start < 0)

    # -- measurements ------------------------------------------------------------------------

    def _sample(self) -> None:
        used = self.sim.used[:, self.goal]
        self.record.samples.append(
            Sample(
                time=self.now,
                allocated=float(used.sum()) / 1000.0,
                demand=self.demand,
                waiting_jobs=len(self.waiting),
                waiting_whole_node=len(self.waiting_whole_node()),
                empty_whole_nodes=int(np.count_nonzero(used[self.whole_nodes] <= TOLERANCE)),
            )
        )


def placed_tasks(engine: Engine) -> npt.NDArray[np.bool_]:
    """Tasks bound to a node now (not pipelined)."""
    sim = engine.sim
    out: npt.NDArray[np.bool_] = sim.on_node() & (sim.status != ts.PIPELINED)
    return out
