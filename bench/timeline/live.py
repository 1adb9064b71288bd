"""The scheduler's view of the engine's cluster at one instant, as the planner and the drain read it.

The planner takes a ClusterState, the decoded session Volcano publishes. The engine's state holds
every task of the whole run; its session at an instant is that state with the Simulation's
placements: bound tasks Running on their nodes, waiting ones Pending, every other task (not yet
arrived, or gone) Succeeded and on no node, so no rule counts it. Task and PodGroup indices are the
engine's, so a plan's moves need no translation.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bench.timeline.engine import Engine, placed_tasks
from bench.timeline.workload import GPU
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.repack.spec import RunSpec, validate
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.ledger import build_ledger
from sidecar.snapshot.state import ClusterState


def live_state(engine: Engine) -> ClusterState:
    state, sim = engine.state, engine.sim
    placed = placed_tasks(engine)
    status = np.full(state.n_tasks, ts.SUCCEEDED, np.int32)
    status[placed] = ts.RUNNING
    waiting = [t for tasks in engine.waiting.values() for t in tasks]
    status[waiting] = ts.PENDING
    node = np.where(placed, sim.node_of, -1).astype(np.int32)
    ledger = build_ledger(node, status, state.task_req, state.node_alloc, state.resources)
    return dataclasses.replace(state, task_node=node, task_status=status, ledger=ledger)


def run_spec(
    *, max_pod_groups: int | None = None, nodes: list[str] | None = None, target: str | None = None
) -> RunSpec:
    """An Execute RepackRun for nvidia.com/gpu, validated as the product validates it."""
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.Execute, goals=[spec_pb2.RepackGoal(resource=GPU)])
    if max_pod_groups is not None:
        spec.max_per_run.pod_groups = max_pod_groups
    if nodes is not None:
        spec.scope.nodes.include.names.extend(nodes)
    if target is not None:
        spec.target.pod_group = target
    return validate(spec)
