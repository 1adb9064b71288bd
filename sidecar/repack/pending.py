"""Why waiting PodGroups wait: a RepackPolicy's ``whenPending`` check, over many groups at once.

A policy should trigger a run only for a gang that fragmentation holds back — not one Volcano is
about to place, one that waits for its queue, or one the cluster cannot hold however it is packed
— and must answer that for a thousand waiting groups within a second. Each group gets the first
verdict that applies:

* ``Running`` (JobReady already), ``Enqueue`` (no waiting pod: a Volcano Job's pods exist once
  its PodGroup is Inqueue, which the enqueue action grants within queue capacity), ``NotFound``,
  ``NotVolcano``;
* ``FitsNow``: Volcano's allocate places it on the cluster as it is (asked only when a cheap bound
  allows it: each waiting task's copies that fit each node's FutureIdle, on nodes passing its
  node-only checks — an upper bound, since pod-level rules only remove room);
* ``Capacity``: no repack could make room — fewer free cards in the cluster than the gang's
  smallest ``minAvailable`` tasks need, or too few copies fit even with every movable pod gone;
* ``Fragmentation``: the targeted planner (:mod:`sidecar.repack.targeted`) finds a plan within
  the run's scope and budgets that lets it start; ``NoPlan``: it finds none; ``Unchecked``: not
  planned in this check (``max_plans`` were tried, or one already succeeded).

The bounds are computed once per task shape (profile and request), so a thousand groups of a few
job templates cost a few numpy passes; plans are made in the caller's order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.api.repackrun import TargetVerdict, Waits
from sidecar.mirror.allocate import JobCounters, allocate_job
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import S_OK
from sidecar.repack.planner import Planner
from sidecar.repack.spec import RunSpec, Target
from sidecar.repack.status import outcome
from sidecar.repack.targeted import waiting_tasks
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.holding import holding_tasks
from sidecar.snapshot.units import PODS, TOLERANCE, less_equal, to_user_units
from sidecar.wording import count

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Waiting:
    pod_group: str
    verdict: Waits
    message: str


def check(
    mirror: Mirror, run: RunSpec, keys: Sequence[str], max_plans: int = 1, step: Callable[[str], None] | None = None
) -> list[Waiting]:
    """A verdict per PodGroup ``keys`` (namespace/name), in order (see the module docstring)."""
    bounds = _Bounds(mirror, run)
    index = {mirror.state.pod_group_key(g): g for g in range(len(mirror.state.pod_groups))}
    out: list[Waiting] = []
    plans, planned = 0, False
    for key in keys:
        group = index.get(key, -1)
        verdict = bounds.verdict(key, group)
        if verdict.verdict == Waits.FRAGMENTATION:  # the bounds allow it: only a plan can tell
            if planned or plans >= max(max_plans, 1):
                why = "a plan was already found in this check" if planned else f"{count(plans, 'plan')} tried"
                verdict = Waiting(key, Waits.UNCHECKED, f"not planned in this check ({why})")
            else:
                plans += 1
                verdict = _plan(mirror, run, key)
                planned = verdict.verdict == Waits.FRAGMENTATION
            if step is not None:
                step("planning")
        out.append(verdict)
    return out


def _plan(mirror: Mirror, run: RunSpec, key: str) -> Waiting:
    namespace, _, name = key.partition("/")
    targeted = dataclasses.replace(run, target=Target("PodGroup", namespace, name, "pod_groups"))
    result = Planner(mirror, targeted).plan()
    assert result.target is not None
    _, message = outcome(mirror.state, result, targeted)
    if result.target.verdict == TargetVerdict.FITS and result.moves:
        return Waiting(key, Waits.FRAGMENTATION, message)
    if result.target.verdict == TargetVerdict.FITS_NOW:
        return Waiting(key, Waits.FITS_NOW, message)
    return Waiting(key, Waits.NO_PLAN, message)


class _Bounds:
    """The cluster's room now and with every movable goal pod gone, per task shape."""

    def __init__(self, mirror: Mirror, run: RunSpec) -> None:
        state = mirror.state
        self.mirror, self.run, self.state = mirror, run, state
        self.sim = Simulation(state)
        self.goal = state.resource(run.resource)
        self.now = self.sim.future_idle()
        holds = holding_tasks(state) & (state.task_node >= 0)
        volcano = np.array([p.scheduler_name in run.scheduler_names for p in state.profiles], bool)
        pg = state.task_pod_group
        in_scope = run.scope.pod_group_mask(state) if state.pod_groups else np.zeros(0, bool)
        movable = holds & volcano[state.task_profile] & (pg >= 0) & (state.task_req[:, self.goal] > 0)
        movable &= np.where(pg >= 0, in_scope[np.maximum(pg, 0)] if in_scope.size else False, False)
        movable &= run.scope.node_mask(state)[np.maximum(state.task_node, 0)]
        moved = np.zeros_like(self.now)
        np.add.at(moved, state.task_node[movable], state.task_req[movable])
        self.ideal = self.now + moved
        self.free_cards = float(np.clip(self.now[:, self.goal], 0, None).sum())
        self.pods = state.resources.index(PODS) if PODS in state.resources else -1
        room = mirror.predicates.pod_cap - self.sim.pod_count
        gone = np.bincount(state.task_node[movable], minlength=state.n_nodes)
        self.room = (np.maximum(room, 0), np.maximum(room + gone, 0))
        self._copies: dict[tuple[int, bytes], tuple[int, int]] = {}

    def verdict(self, key: str, group: int) -> Waiting:
        state = self.state
        if group < 0:
            return Waiting(key, Waits.NOT_FOUND, "not in the scheduler's view")
        counters = JobCounters(self.mirror, self.sim, group, ())
        if counters.ready():
            return Waiting(
                key, Waits.RUNNING, f"{counters.ready_num()} tasks started (minAvailable {counters.min_available})"
            )
        tasks = waiting_tasks(state, group)
        if not tasks:
            phase = state.pod_groups[group].phase or "unknown"
            return Waiting(
                key, Waits.ENQUEUE, f"no waiting pods (phase {phase}): it waits for the enqueue action (queue capacity)"
            )
        schedulers = {state.profiles[state.task_profile[t]].scheduler_name for t in tasks}
        if not schedulers & self.run.scheduler_names:
            return Waiting(key, Waits.NOT_VOLCANO, f"scheduled by {', '.join(sorted(schedulers))}")
        need = max(counters.min_available - counters.ready_num(), 1)
        now, ideal = self._bound(tasks, need)
        if now >= need and (self._counts_exactly(tasks, counters) or _fits(self.mirror, self.sim, group, tasks)):
            return Waiting(key, Waits.FITS_NOW, "Volcano's allocate places it on the cluster as it is")
        cards = sorted(float(state.task_req[t, self.goal]) for t in tasks)[:need]
        if not less_equal(sum(cards), self.free_cards):
            needed, free = (
                to_user_units(self.run.resource, sum(cards)),
                to_user_units(self.run.resource, self.free_cards),
            )
            message = f"needs {needed:g} {self.run.resource} for {count(need, 'task')}, the cluster has {free:g} free"
            return Waiting(key, Waits.CAPACITY, message)
        if ideal < need:
            return Waiting(key, Waits.CAPACITY, f"fewer than {count(need, 'task')} fit even with every movable "
                           "pod moved away (node selectors, taints, node sizes)")  # fmt: skip
        return Waiting(key, Waits.FRAGMENTATION, "")

    def _counts_exactly(self, tasks: list[int], counters: JobCounters) -> bool:
        """Whether the copies bound is allocate's answer: one task shape, facing no pod-level
        check, no role minimum, nothing nominated or best-effort. Then every placement takes one
        copy from one node and no other (identical requests), so allocate, whatever its node
        order, places ``need`` tasks exactly when ``need`` copies fit."""
        state = self.state
        first = tasks[0]
        same = all(
            state.task_profile[t] == state.task_profile[first]
            and np.array_equal(state.task_req[t], state.task_req[first])
            for t in tasks
        )
        plain = not counters.role_min and not counters.best_effort.any()
        pending = all(int(state.task_status[t]) != ts.PIPELINED for t in tasks)
        return same and plain and pending and self.mirror.predicates.faces_none(int(state.task_profile[first]))

    def _bound(self, tasks: list[int], need: int) -> tuple[int, int]:
        """(tasks that fit now, tasks that fit with every movable pod gone), at most ``need`` each:
        per shape, the copies each node holds, summed."""
        state = self.state
        shapes: dict[tuple[int, bytes], int] = {}
        for t in tasks:
            shape = (int(state.task_profile[t]), state.task_req[t].tobytes())
            shapes[shape] = shapes.get(shape, 0) + 1
        now = ideal = 0
        for shape, n in shapes.items():
            got = self._copies.get(shape)
            if got is None:
                got = self._copies[shape] = self._count(*shape)
            now, ideal = now + min(n, got[0]), ideal + min(n, got[1])
        return min(now, need), min(ideal, need)

    def _count(self, profile: int, req_bytes: bytes) -> tuple[int, int]:
        req = np.frombuffer(req_bytes, np.float64)
        static = self.mirror.predicates.static(self.state.profiles[profile], profile_index=profile).code == S_OK
        dims = np.flatnonzero(req > 0)
        dims = dims[dims != self.pods]
        out = []
        for free, room in zip((self.now, self.ideal), self.room, strict=True):
            if dims.size:
                # units.less_equal(k * req, free) solved for the largest whole k
                with np.errstate(divide="ignore", invalid="ignore"):
                    per = (np.ceil((free[:, dims] + TOLERANCE) / req[dims]) - 1).min(axis=1)
            else:
                per = np.full(self.state.n_nodes, np.inf)
            copies = np.minimum(np.clip(per, 0, None), room) * static
            out.append(int(min(copies.sum(), 1 << 30)))
        return out[0], out[1]


def _fits(mirror: Mirror, sim: Simulation, group: int, tasks: list[int]) -> bool:
    mark = sim.checkpoint()
    try:
        return allocate_job(mirror, sim, group, tasks).fits
    finally:
        sim.rollback(mark)


__all__ = ["Waiting", "check"]
