"""Clusters for planner tests, written the way the user guide describes them."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf import json_format

from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.core import Mirror
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.repack.status import to_status
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

GPU = "nvidia.com/gpu"


class Cluster:
    def __init__(self) -> None:
        self.snap = pb.Snapshot()

    def node(self, name: str, cards: int = 8, **labels: str) -> Cluster:
        self.snap.nodes.add(
            name=name,
            labels={"kubernetes.io/hostname": name, **labels},
            allocatable={"cpu": 64_000, "memory": 512e9, "pods": 110, GPU: cards * 1000.0},
        )
        return self

    def group(self, name: str, min_member: int, ns: str = "ml", kind: str = "Job", **labels: str) -> Cluster:
        api = "batch.volcano.sh/v1alpha1" if kind == "Job" else "workload.serving.volcano.sh/v1alpha1"
        self.snap.pod_groups.add(
            namespace=ns,
            name=name,
            min_member=min_member,
            labels=labels,
            phase="Running",
            owner_references=[pb.OwnerReference(api_version=api, kind=kind, name=name, controller=True)],
        )
        return self

    def pod(
        self,
        name: str,
        node: str,
        cards: float,
        group: str = "",
        ns: str = "ml",
        scheduler: str = "volcano",
        status: int = pb.Task.Running,
        **profile: Any,
    ) -> Cluster:
        prof = json_format.ParseDict({"schedulerName": scheduler, **profile}, pb.TaskProfile())
        req = {"cpu": 1000.0, "memory": 1e9}
        if cards:
            req[GPU] = cards * 1000.0
        self.snap.tasks.add(
            uid=f"{ns}/{name}",
            namespace=ns,
            name=name,
            node=node,
            status=status,
            pod_group=group,
            requests=req,
            profile=prof,
        )
        return self

    def state(self) -> ClusterState:
        return decode(self.snap)


def spec(resource: str = GPU, **fields: Any) -> spec_pb2.RepackSpec:
    """A RepackSpec from CR-style fields, e.g. spec(maxPerRun={"podGroups": 1})."""
    body = {"mode": "DryRun", "goals": [{"resource": resource, **fields.pop("goal", {})}], **fields}
    return json_format.ParseDict(body, spec_pb2.RepackSpec())


def plan_status(state: ClusterState, spec: spec_pb2.RepackSpec) -> plan_pb2.RepackStatus:
    """What the Plan RPC answers: validate the spec, plan on a fresh mirror, the RepackRun status."""
    run = validate(spec)
    return to_status(state, Planner(Mirror(state), run).plan(), run)


def plan(cluster: Cluster | ClusterState, **fields: Any) -> plan_pb2.RepackStatus:
    state = cluster.state() if isinstance(cluster, Cluster) else cluster
    return plan_status(state, spec(**fields))


def moves(status: plan_pb2.RepackStatus) -> list[tuple[str, str, str]]:
    return [(p.name, p.from_node, p.to_node) for m in status.plan.moves for p in m.pods]


def reason(status: plan_pb2.RepackStatus) -> str:
    return status.conditions[0].reason


def explanation(status: plan_pb2.RepackStatus, node: str) -> tuple[str, str]:
    for c in status.plan.candidates:
        if c.node == node:
            return c.reason, c.message
    raise KeyError(node)


def normalised_scores(deltas: npt.NDArray[np.float64], weights: tuple[float, ...]) -> npt.NDArray[np.float64]:
    """The guide's ranking as written: min-max normalise each dimension over the rows ([C, 5]),
    weight and sum (lower is better). The planner ranks by ``ranking.ranking_scores``, the same
    order (each dimension shifted by its minimum): this form is the tests' reference for it."""
    if deltas.shape[0] == 0:
        return np.zeros(0)
    lo = deltas.min(axis=0)
    span = deltas.max(axis=0) - lo
    norm = np.divide(deltas - lo, span, out=np.zeros_like(deltas), where=span > 0)
    out: npt.NDArray[np.float64] = norm @ np.asarray(weights, np.float64)
    return out
