"""Helpers to state a mirror case the way the Kubernetes docs would (cards, labels, taints)."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.conf import parse_conf
from sidecar.mirror.core import Mirror
from sidecar.snapshot.decode import decode

GPU = "nvidia.com/gpu"
#: a volcano-scheduler.conf without the predicates plugin (its pod-number check off)
NO_PREDICATES = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: nodeorder
"""


def n(
    name: str,
    cards: float = 8,
    *,
    labels: dict[str, str] | None = None,
    taints: list[str] | None = None,
    cpu: float = 32_000,
    mem: float = 256e9,
    pods: float = 110,
    unschedulable: bool = False,
) -> pb.Node:
    """A node; taints as "key=value:Effect" (or "key:Effect")."""
    node = pb.Node(
        name=name,
        unschedulable=unschedulable,
        labels={"kubernetes.io/hostname": name, **(labels or {})},
        allocatable={"cpu": cpu, "memory": mem, "pods": pods, GPU: cards * 1000},
    )
    for t in taints or []:
        kv, effect = t.rsplit(":", 1)
        key, _, value = kv.partition("=")
        node.taints.add(key=key, value=value, effect=effect)
    return node


def t(
    name: str,
    node: str = "",
    cards: float = 0,
    *,
    cpu: float = 1000,
    mem: float = 1e9,
    ns: str = "default",
    status: int = pb.Task.Running,
    labels: dict[str, str] | None = None,
    **profile: Any,
) -> pb.Task:
    """A task; ``profile`` takes TaskProfile fields in protobuf-JSON form (camelCase)."""
    prof = json_format.ParseDict({"schedulerName": "volcano", "labels": labels or {}, **profile}, pb.TaskProfile())
    req = {"cpu": cpu, "memory": mem}
    if cards:
        req[GPU] = cards * 1000
    return pb.Task(uid=f"{ns}/{name}", namespace=ns, name=name, node=node, status=status, requests=req, profile=prof)


def mirror(nodes: list[pb.Node], tasks: list[pb.Task], conf: str | None = None) -> Mirror:
    snap = pb.Snapshot(nodes=nodes, tasks=tasks)
    return Mirror(decode(snap), parse_conf(conf) if conf else None)


def check(m: Mirror, subject: pb.Task) -> dict[str, list[str]]:
    """node -> reasons ([] when feasible)."""
    result = m.filter(m.subject_from_message(subject))
    out = {name: [] for name in m.state.node_names}
    for i, reasons in result.reasons().items():
        out[m.state.node_names[i]] = reasons
    return out
