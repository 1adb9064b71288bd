"""Volcano's allocate action for one job (a PodGroup's pending tasks), on a Simulation.

The one place that decides "would this gang start now": the fake's scheduler binds with it, the
targeted planner asks it whether a waiting gang fits the planned cluster and where it would land,
and the trace replays schedule with it. It follows volcano v1.14.1
``pkg/scheduler/actions/allocate/allocate.go`` (allocateResourcesForTasks) and
``pkg/scheduler/api/job_info.go``:

* tasks in task order (:func:`task_order`: priority, then the pod-name index, then UID);
* a task whose role already failed in this cycle is skipped (TaskHasFitErrors);
* the nominated node (a pending pod's ``status.nominatedNodeName``, a Pipelined task of the
  snapshot) is tried first when the request fits its FutureIdle, else every node; the best node
  comes from the Idle gradient before the FutureIdle one (:meth:`Mirror.allocate`); a task that
  fits Idle is Allocated, one that fits only FutureIdle is Pipelined;
* when a task finds no node, the job goes on only as NeedContinueAllocating allows, and it stops
  as soon as it is ready (JobReady: ReadyTaskNum + pending best-effort >= MinAvailable, and
  every role's minTaskMember when MinAvailable covers them);
* ready: the placements stand (Statement.Commit); pipelined (ready counting Pipelined tasks):
  they stand as reservations; otherwise they are undone (Statement.Discard).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sidecar.mirror.core import Mirror
from sidecar.mirror.explain import fit_message
from sidecar.mirror.simulation import Simulation
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import PODS

#: what Go's strconv.Atoi accepts
_ATOI = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class JobAllocation:
    """What one allocate cycle did for a job."""

    #: (task, node) in the order they were placed
    placed: tuple[tuple[int, int], ...]
    #: the placed tasks that only fit FutureIdle (Pipelined, waiting for releasing pods)
    pipelined: frozenset[int]
    #: JobReady after the cycle: the gang starts
    ready: bool
    #: JobPipelined: the gang starts once releasing pods are gone
    pipelined_ready: bool
    #: the first task no node could take (-1: none), and Volcano's fit-error histogram for it
    stuck: int = -1
    why: str = ""

    @property
    def fits(self) -> bool:
        return self.ready or self.pipelined_ready


def task_order(state: ClusterState, tasks: Sequence[int]) -> list[int]:
    """TaskOrderFn as the default tiers give it: the priority plugin (higher pod priority first),
    then Volcano's fallback ``helpers.CompareTask`` (volcano v1.14.1
    pkg/controllers/job/helpers/helpers.go): the lower index suffix of the pod name (``job-task-3``;
    only for names of 3 or more dash-separated parts ending in an integer), else the older pod —
    a snapshot carries no creation time, so all tie there — then the smaller UID."""

    def compare(a: int, b: int) -> int:
        pa, pb = int(state.task_priority[a]), int(state.task_priority[b])
        if pa != pb:
            return -1 if pa > pb else 1
        ia, ib = _pod_index(state.task_name[a]), _pod_index(state.task_name[b])
        if ia is not None and ib is not None and ia != ib:
            return -1 if ia < ib else 1
        ua, ub = state.task_uid[a], state.task_uid[b]
        return (ua > ub) - (ua < ub)

    return sorted((int(t) for t in tasks), key=functools.cmp_to_key(compare))


def _pod_index(name: str) -> int | None:
    """GetPodIndexUnderTask + strconv.Atoi: the last dash-separated part of a name of three or more."""
    parts = name.split("-")
    return int(parts[-1]) if len(parts) >= 3 and _ATOI.fullmatch(parts[-1]) else None


class JobCounters:
    """A job's counters as JobInfo keeps them (ReadyTaskNum, role counts, best-effort tasks), read
    from the simulation's statuses, so they follow every place, pipeline and rollback."""

    def __init__(self, mirror: Mirror, sim: Simulation, group: int, tasks: Sequence[int]) -> None:
        state = mirror.state
        self.state, self.sim = state, sim
        self.members = np.flatnonzero(state.task_pod_group == group) if group >= 0 else np.asarray(tasks, np.intp)
        pg = state.pod_groups[group] if group >= 0 else None
        self.min_available = max(int(pg.min_member), 0) if pg is not None else 1
        self.role_min: dict[str, int] = dict(pg.min_task_member) if pg is not None else {}
        self.role_min_total = sum(self.role_min.values())
        pods = state.resources.index(PODS) if PODS in state.resources else -1
        req = state.task_req[self.members]
        if pods >= 0:
            req = np.delete(req, pods, axis=1)
        #: InitResreq.IsEmpty: a best-effort task counts as ready while pending
        self.best_effort = ~np.any(req > 0, axis=1) if req.size else np.zeros(len(self.members), bool)

    def _status(self) -> np.ndarray:
        return self.sim.status[self.members]

    def ready_num(self, *, pipelined: bool = False) -> int:
        status = self._status()
        mask = ts.READY_MASK | (ts.PIPELINED if pipelined else 0)
        pending_best_effort = (status == ts.PENDING) & self.best_effort
        return int(np.count_nonzero(status & mask) + np.count_nonzero(pending_best_effort))

    def _roles(self, *, pipelined: bool) -> Counter[str]:
        status = self._status()
        mask = ts.READY_MASK | (ts.PIPELINED if pipelined else 0)
        counted = (status & mask).astype(bool) | ((status == ts.PENDING) & self.best_effort)
        return Counter(self.state.task_role[int(t)] for t in self.members[counted])

    def _roles_ok(self, *, pipelined: bool) -> bool:
        """CheckTaskReady / CheckTaskPipelined: every role's minimum, when MinAvailable covers them."""
        if not self.role_min or self.min_available < self.role_min_total:
            return True
        have = self._roles(pipelined=pipelined)
        return all(have[role] >= n for role, n in self.role_min.items())

    def ready(self) -> bool:
        return self._roles_ok(pipelined=False) and self.ready_num() >= self.min_available

    def pipelined(self) -> bool:
        return self._roles_ok(pipelined=True) and self.ready_num(pipelined=True) >= self.min_available

    def need_continue(self, failed_roles: set[str]) -> bool:
        """NeedContinueAllocating: after a task found no node, may the job still become ready?"""
        if self.min_available == len(self.members):
            return False
        if self.min_available < self.role_min_total:
            status = self._status()
            left = sum(
                1
                for k, t in enumerate(self.members.tolist())
                if status[k] == ts.PENDING and self.state.task_role[t] not in failed_roles
            )
            return self.ready_num() + left >= self.min_available
        allocated = self._roles(pipelined=False)
        return all(allocated[role] >= self.role_min.get(role, 0) for role in failed_roles if self.role_min.get(role, 0))


def allocate_job(mirror: Mirror, sim: Simulation, group: int, tasks: Sequence[int]) -> JobAllocation:
    """One allocate cycle for ``group``'s waiting ``tasks`` (Pending, or Pipelined on a nominated
    node) on ``sim``. What it places stays in ``sim`` (on its undo log: a caller's checkpoint can
    still take it back) when the job is ready or pipelined, and is undone otherwise. ``group`` -1:
    ``tasks`` have no PodGroup and form a job of their own with MinAvailable 1."""
    state = mirror.state
    job = JobCounters(mirror, sim, group, tasks)
    mark = sim.checkpoint()
    placed: list[tuple[int, int]] = []
    pipelined: set[int] = set()
    failed_roles: set[str] = set()
    stuck, why = -1, ""
    best_effort = set(job.members[job.best_effort].tolist())
    for t in task_order(state, tasks):
        if t in best_effort:
            continue  # organizeJobWorksheet leaves best-effort tasks to backfill (they count as ready)
        role = state.task_role[t]
        if role and role in failed_roles:
            continue
        subj = mirror.subject_for_task(t)
        nominated = int(sim.node_of[t]) if int(sim.status[t]) == ts.PIPELINED else -1
        if nominated >= 0:
            sim.remove(t)  # the reservation is the task's own: it is what is being placed
        node, fits_idle = mirror.best_node(subj, sim, np.array([nominated], np.intp)) if nominated >= 0 else (-1, False)
        if node < 0:
            node, fits_idle = mirror.best_node(subj, sim)
        if node < 0:
            if stuck < 0:
                stuck = t
                result = mirror.filter(subj, None, sim)
                why = fit_message(result, state.n_nodes)
            failed_roles.add(role)
            if job.need_continue(failed_roles):
                continue
            break
        if fits_idle:
            sim.place(t, node)
        else:
            sim.pipeline(t, node)
            pipelined.add(t)
        placed.append((t, node))
        if job.ready():
            break
    ready = job.ready()
    pipelined_ready = not ready and job.pipelined()
    if not (ready or pipelined_ready):
        sim.rollback(mark)
        return JobAllocation((), frozenset(), False, False, stuck, why)
    return JobAllocation(tuple(placed), frozenset(pipelined), ready, pipelined_ready, stuck, why)
