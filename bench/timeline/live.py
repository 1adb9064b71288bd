"""The scheduler's view of the engine's cluster at one instant, as the planner and the drain read it.

The planner takes a ClusterState, the decoded session Volcano publishes: the pods that exist now.
The engine's state holds every task of the whole run (tens of thousands, most not arrived or gone),
so the session is cut from it: the bound tasks (Running on their nodes) and the waiting ones
(Pending), with their PodGroups, in the engine's order. ``Live.tasks`` maps the session's task
indices back to the engine's; PodGroup names are the engine's, so a targeted run names its job's
group as is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.timeline.engine import Engine, placed_tasks
from bench.timeline.workload import GPU
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.repack.spec import RunSpec, validate
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.ledger import build_ledger
from sidecar.snapshot.state import ClusterState


@dataclass(frozen=True)
class Live:
    state: ClusterState
    tasks: npt.NDArray[np.intp]  # session task index -> engine task index

    def engine_moves(self, moves: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """(session task, node) -> (engine task, node)."""
        return [(int(self.tasks[t]), node) for t, node in moves]


def live_state(engine: Engine) -> Live:
    state, sim = engine.state, engine.sim
    placed = placed_tasks(engine)
    waiting = np.zeros(state.n_tasks, bool)
    waiting[[t for tasks in engine.waiting.values() for t in tasks]] = True
    keep = np.flatnonzero(placed | waiting)
    status = np.where(placed[keep], ts.RUNNING, ts.PENDING).astype(np.int32)
    node = np.where(placed[keep], sim.node_of[keep], -1).astype(np.int32)
    groups = state.task_pod_group[keep]
    used = np.unique(groups[groups >= 0])
    remap = np.full(len(state.pod_groups) + 1, -1, np.int32)
    remap[used] = np.arange(used.size, dtype=np.int32)
    req = state.task_req[keep]
    kept = keep.tolist()
    live = dataclasses.replace(
        state,
        task_uid=[state.task_uid[t] for t in kept],
        task_name=[state.task_name[t] for t in kept],
        task_namespace=state.task_namespace[keep],
        task_node=node,
        task_status=status,
        task_pod_group=np.where(groups >= 0, remap[groups], -1).astype(np.int32),
        task_priority=state.task_priority[keep],
        task_profile=state.task_profile[keep],
        task_req=req,
        task_nonzero=state.task_nonzero[keep],
        task_role=[state.task_role[t] for t in kept],
        pod_groups=[state.pod_groups[g] for g in used.tolist()],
        ledger=build_ledger(node, status, req, state.node_alloc, state.resources),
        missing_groups={},
    )
    return Live(live, keep)


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
