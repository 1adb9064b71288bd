"""Departures: whole workloads leaving a replayed cluster, the way long-running clusters fragment
(``traces.Stop.depart_to``)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sidecar.mirror.simulation import Simulation
from sidecar.snapshot.state import ClusterState

#: the orders in which workloads may depart
DEPARTURES = ("random", "recorded")


def workloads(state: ClusterState) -> npt.NDArray[np.int64]:
    """Each task's workload: its PodGroup, or (a pod without one) the task alone."""
    pg = state.task_pod_group.astype(np.int64)
    return np.where(pg >= 0, pg, len(state.pod_groups) + np.arange(state.n_tasks))


def depart(
    state: ClusterState,
    sim: Simulation,
    alive: npt.NDArray[np.bool_],
    times: list[tuple[int, int | None]],
    order_by: str,
    seed: int,
    floor: float,
    g: int,
) -> npt.NDArray[np.intp]:
    """Delete whole workloads of the ``alive`` tasks — their pods on nodes and their pending ones —
    in ``order_by`` order (:data:`DEPARTURES`; ``seed`` for "random"), until the cards in use
    (column ``g``) are at most ``floor``; the tasks deleted. "recorded": a workload leaves with its
    last pod (``times``: creation and deletion per task); never-deleted workloads stay to the end."""
    tasks = np.flatnonzero(alive)
    if not tasks.size or sim.used[:, g].sum() <= floor:
        return np.zeros(0, np.intp)
    units, inverse = np.unique(workloads(state)[tasks], return_inverse=True)
    members = np.split(tasks[np.argsort(inverse, kind="stable")], np.cumsum(np.bincount(inverse))[:-1])
    if order_by == "random":
        order = np.random.default_rng(seed).permutation(units.size)
    else:
        dies = np.array([max((times[t][1] if times[t][1] is not None else math.inf) for t in m) for m in members])
        order = np.lexsort((np.arange(units.size), dies))
    on_node = sim.on_node()
    gone: list[npt.NDArray[np.intp]] = []
    for u in order.tolist():
        if sim.used[:, g].sum() <= floor:
            break
        for t in members[u].tolist():
            if on_node[t]:
                sim.remove(t)
        sim.commit()
        gone.append(members[u])
    return np.concatenate(gone) if gone else np.zeros(0, np.intp)
