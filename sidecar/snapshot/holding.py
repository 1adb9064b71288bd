"""Which tasks hold their node's resources, and which nodes hold a resource: the one definition.

A task **holds** its node's resources when it is counted in Volcano's ``Used`` and stays there
(NodeInfo.AddTask, :mod:`sidecar.snapshot.ledger`): placed on a node, not terminated
(Succeeded/Failed), not **Pipelined** -- Volcano keeps those apart in ``Pipelined``: a nomination
waiting for resources, nothing is allocated to it yet -- not **Releasing** -- counted in ``Used``
but leaving, ``FutureIdle`` already gives its request back -- and not a Binding task the ledger
refused (counted nowhere). In ledger terms: ``Used - Releasing``.

A node **holds** resource R when the tasks holding it request more than the 0.1 tolerance of R
there (each task's own request above it).

Every user reads it from here, so they cannot disagree:

* fragmentation's **occupied** nodes (the guide: "nodes on which R is allocated to running
  workloads") are the providing nodes that hold R (:mod:`sidecar.repack.fragmentation`);
* receiver rule 1 (the guide: "avoid reoccupying nodes whose target resources are completely idle")
  lets only nodes that hold the goal resource receive: the planner's ``Receivers.allowed`` (read
  by its kernels too) and the exact planner's receivers;
* Execute's choice of another receiver and its count of freed nodes (the watcher, through
  :func:`holding_node_names`).

A node whose only goal pods are Pipelined or Releasing therefore holds nothing: it is not
occupied, and putting a pod there would light it up again -- the fragment only moves.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import numpy.typing as npt

from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import PIPELINED, RELEASING, TERMINATED_MASK, VALID
from sidecar.snapshot.units import TOLERANCE

Bools = npt.NDArray[np.bool_]
I32 = npt.NDArray[np.int32]

#: the statuses of a task that holds its node's resources (once placed): every valid status but
#: the terminated ones, Pipelined and Releasing
HOLDING_STATUSES = frozenset(s for s in VALID if not s & TERMINATED_MASK and s not in (PIPELINED, RELEASING))
#: the same as one bit mask (the statuses are single bits)
_HOLDING_BITS = int(np.bitwise_or.reduce(sorted(HOLDING_STATUSES)))


def holds(status: int) -> bool:
    """Does a placed task in ``status`` (a snapshot ``Task.status`` value) hold its node's resources?"""
    return status in HOLDING_STATUSES


def holding_statuses(status: I32) -> Bools:
    """:func:`holds` for a column of statuses."""
    out: Bools = (status & _HOLDING_BITS) != 0
    return out


def holding_tasks(state: ClusterState) -> Bools:
    """[T] tasks that hold their node's resources: placed, :func:`holds`, and not a Binding task
    the ledger refused."""
    out: Bools = (state.task_node >= 0) & holding_statuses(state.task_status) & ~state.ledger.refused
    return out


def goal_tasks(state: ClusterState, resource: int, task_node: I32 | None = None) -> Bools:
    """[T] the tasks holding ``resource`` (a column): holding tasks whose request of it is above the
    tolerance, on a node of ``task_node`` (default: the snapshot's placements)."""
    nodes = state.task_node if task_node is None else task_node
    out: Bools = holding_tasks(state) & (nodes >= 0) & (state.task_req[:, resource] > TOLERANCE)
    return out


def holding_nodes(state: ClusterState, resource: int, task_node: I32 | None = None) -> Bools:
    """[N] the nodes holding ``resource`` (a column): its load from :func:`goal_tasks` is above the
    tolerance. ``task_node`` overrides placements (a plan's simulated state)."""
    nodes = state.task_node if task_node is None else task_node
    held = goal_tasks(state, resource, nodes)
    load = np.bincount(nodes[held], weights=state.task_req[held, resource], minlength=state.n_nodes)
    out: Bools = load > TOLERANCE
    return out


def holding_node_names(state: ClusterState, resource: str, skip: Collection[str] = ()) -> set[str]:
    """Names of the nodes holding ``resource`` (a name; none when no task or node mentions it),
    leaving out the tasks with UIDs in ``skip``: Execute's question about a decoded snapshot (a
    replacement being placed; a targeted run's workload, which lands on the nodes it freed)."""
    if not state.has_resource(resource):
        return set()
    r = state.resource(resource)
    nodes = state.task_node
    if skip:
        wanted = set(skip)
        nodes = nodes.copy()
        nodes[[i for i, uid in enumerate(state.task_uid) if uid in wanted]] = -1
    return {state.node_names[n] for n in np.flatnonzero(holding_nodes(state, r, nodes)).tolist()}
