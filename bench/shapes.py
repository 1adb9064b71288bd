"""Cluster shapes for benchmarks that read the public traces in ../shared/traces (never copied)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.scenarios.builder import TaskTable

TRACES = Path(os.environ.get("REPACK_TRACES", Path(__file__).resolve().parents[2] / "shared" / "traces"))
OPENB = TRACES / "openb"
GPU = "nvidia.com/gpu"
MIB = 1024 * 1024


def openb_available() -> bool:
    return (OPENB / "openb_node_list_gpu_node.csv").exists() and (OPENB / "openb_pod_list_default.csv").exists()


def openb_shaped(seed: int = 1, fill: float = 0.75) -> pb.Snapshot:
    """The 1,213 openb GPU nodes (cards, card model, cpu, memory) holding openb GPU pods (sizes
    drawn from the pod list, a shared fraction counts as one card) placed at random where they fit
    until ``fill`` of the cards are in use. Each pod is its own PodGroup (minMember 1), like the
    inference services that dominate the trace. A shape, not a replay: see `snapshot from-trace`."""
    rng = np.random.default_rng(seed)
    snap = pb.Snapshot(name=f"openb-shaped-s{seed}")
    cards = []
    with open(OPENB / "openb_node_list_gpu_node.csv") as fh:
        for row in csv.DictReader(fh):
            node = snap.nodes.add(name=row["sn"])
            node.labels.update({"kubernetes.io/hostname": row["sn"], "gpu-model": row["model"]})
            n_cards = int(row["gpu"])
            node.allocatable.update(
                {
                    "cpu": float(row["cpu_milli"]),
                    "memory": float(row["memory_mib"]) * MIB,
                    "pods": 110.0,
                    GPU: n_cards * 1000.0,
                }
            )
            cards.append(n_cards)
    pods = []
    with open(OPENB / "openb_pod_list_default.csv") as fh:
        for row in csv.DictReader(fh):
            if int(row["num_gpu"]) > 0:
                pods.append(
                    (int(row["num_gpu"]), float(row["cpu_milli"]), float(row["memory_mib"]) * MIB, row["gpu_spec"])
                )
    snap.namespaces.add(name="openb")
    free = np.array(cards, np.int64)
    cpu_free = np.array([n.allocatable["cpu"] for n in snap.nodes])
    mem_free = np.array([n.allocatable["memory"] for n in snap.nodes])
    target = int(fill * free.sum())
    placed = 0
    table = TaskTable(snap, ["cpu", "memory", GPU])
    prof = table.profile(pb.TaskProfile(scheduler_name="volcano", owner_kind="ReplicaSet"))
    order = rng.permutation(len(pods))
    for k in order:
        if placed >= target:
            break
        n_gpu, cpu, mem, _spec = pods[k]
        fits = np.flatnonzero((free >= n_gpu) & (cpu_free >= cpu) & (mem_free >= mem))
        if fits.size == 0:
            continue
        node = int(fits[rng.integers(0, fits.size)])
        free[node] -= n_gpu
        cpu_free[node] -= cpu
        mem_free[node] -= mem
        placed += n_gpu
        name = f"openb-pod-{k:05d}"
        snap.pod_groups.add(
            namespace="openb",
            name=name,
            min_member=1,
            phase="Running",
            labels={"repack.volcano.sh/eligible": "true"},
            owner_references=[pb.OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=name, controller=True)],
        )
        table.add(
            f"uid-{k:05d}",
            name,
            namespace=0,
            node=node,
            status=pb.Task.Running,
            pod_group=len(snap.pod_groups) - 1,
            profile=prof,
            requests=(cpu, mem, n_gpu * 1000.0),
        )
    return table.finish()


def with_waiting_gang(
    snap: pb.Snapshot, name: str, size: int, cards: float, resource: str = "nvidia.com/gpu", namespace: str = "openb"
) -> pb.Snapshot:
    """``snap`` plus a Volcano gang that waits: ``size`` Pending pods of ``cards`` cards each in
    PodGroup ``namespace/name`` (minMember ``size``, Inqueue), the job a targeted run makes room for."""
    out = pb.Snapshot()
    out.CopyFrom(snap)
    out.pod_groups.add(namespace=namespace, name=name, min_member=size, phase="Inqueue")
    for k in range(size):
        out.tasks.add(
            uid=f"{namespace}-{name}-{k}",
            namespace=namespace,
            name=f"{name}-worker-{k}",
            status=pb.Task.Pending,
            pod_group=name,
            requests={"cpu": 8000.0, "memory": 32.0 * 2**30, resource: cards * 1000.0},
            profile=pb.TaskProfile(scheduler_name="volcano"),
        )
    return out
