"""Realistic snapshots from public GPU-cluster traces, placed the way Volcano would place them.

openb (Alibaba cluster-trace-gpu-v2023): the node list (GPU and CPU-only nodes) and a pod list
with creation and deletion times. The pods are replayed in time order: each creation is placed
by the mirror core with the scheduler configuration given (default: Volcano's helm conf), i.e.
the feasible node with the best node-order score (ties by name); each deletion frees its node.
The snapshot is taken at a chosen time (creations and deletions as recorded; the recorded
lifetimes are short, so the cluster stays nearly empty: peak 71 of 6,212 cards in the default
list), or when the cluster first reaches a chosen card fill. For fill, deletions are ignored and
the pod list is read as a workload mix arriving in time order, as the FGD paper (ATC'23) uses
this trace.

Mapping (documented in docs/planner.md, "Traces and evidence"):
* cards: ``nvidia.com/gpu`` = num_gpu cards; a shared fraction (num_gpu 1, gpu_milli < 1000)
  still occupies one whole card;
* ``gpu_spec`` (``|``-separated card models) -> required node affinity on label ``gpu-model``;
* GPU pods are Volcano pods in PodGroups: pods with the same spec (cpu, memory, cards, card
  fraction, gpu_spec, qos) created within 10 minutes of the previous one form one workload.
  BE/Burstable workloads are gangs (minMember = size, owner a Volcano Job); LS/Guaranteed are
  services (minMember = ceil(size / 2), owner a Deployment);
* CPU-only pods are default-scheduler pods without PodGroup: they consume node resources and
  never move.
Gang scheduling itself is not replayed: pods are placed one by one in creation order.

dlrm (Alibaba cluster-trace-gpu-v2025, disaggregated DLRM serving): no node list, so nodes are
modelled from the instance sizes: GPU nodes of 8 GPUs, 128 cores, 1 TiB memory and 200 units of
``rdma/bandwidth``; CPU nodes of 192 cores, 1.5 TiB and 400 units; as many of each as the peak
concurrent demand needs at 80% (GPUs for GPU nodes, cores for CPU nodes). HN instances (one GPU
each) are Volcano pods; each application's HN instances form one PodGroup (a serving workload,
owner a ModelServing) with minMember = ceil(replicas / 2). ``max_instance_per_node`` k becomes a
per-node limit: k = 1 is pod anti-affinity on the hostname, k > 1 a hostname topology spread with
maxSkew k (DoNotSchedule), which caps a node at k while some eligible node has none. CN
instances are CPU-only default-scheduler pods on CPU nodes (affinity on ``node-role``). Empty
creation times mean "present from the start", empty deletion times "never deleted".
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.errors import InputError
from sidecar.mirror.conf import SchedulerConf
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.scenarios.builder import TaskTable
from sidecar.scenarios.churn import DEPARTURES, depart, workloads
from sidecar.snapshot.decode import decode

GPU = "nvidia.com/gpu"
MIB = 1024 * 1024
GROUP_WINDOW_S = 600
NAMESPACE = "openb"


@dataclass(frozen=True)
class Stop:
    """When to take the snapshot: at a time (seconds), or when card fill first reaches a fraction.

    With ``depart_to`` the fill is a high-water mark, the way long-running clusters fragment: once
    it is reached, whole workloads (a PodGroup's pods together; a pod without one alone) depart —
    in the order the trace records their deletions (``departures="recorded"``; a workload leaves
    with its last pod, never-deleted ones last) or in a seeded random order (``"random"``) — until
    the card fill is at most ``depart_to``; then, with ``refill``, arrivals resume with the trace's
    next pods until that fill (or the trace ends)."""

    at_time: float | None = None
    at_fill: float | None = None
    depart_to: float | None = None
    departures: str = "random"
    seed: int = 0
    refill: float | None = None

    def __post_init__(self) -> None:
        """Refuses a stop that cannot be played, naming the field (the CLI names its flag)."""
        if (self.at_time is None) == (self.at_fill is None):
            raise InputError("at_fill/at_time", "give exactly one of at_fill and at_time")
        if self.at_fill is not None and not 0 < self.at_fill <= 1:
            raise InputError("at_fill", f"must be within (0, 1], got {self.at_fill}")
        if self.depart_to is not None and (self.at_fill is None or not 0 <= self.depart_to < self.at_fill):
            raise InputError("depart_to", f"needs at_fill and must be within [0, at_fill), got {self.depart_to}")
        if self.departures not in DEPARTURES:
            raise InputError("departures", f"must be one of {', '.join(DEPARTURES)}, got {self.departures!r}")
        if self.refill is not None and (self.depart_to is None or not self.depart_to < self.refill <= 1):
            raise InputError("refill", f"needs depart_to and must be within (depart_to, 1], got {self.refill}")


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        raise InputError(str(path), "trace file not found (the traces live in ../shared/traces)")
    with open(path) as fh:
        return list(csv.DictReader(fh))


def openb_pods(trace_dir: Path, pods_file: str) -> tuple[pb.Snapshot, list[tuple[int, int | None]]]:
    """Nodes and every trace pod (all Pending, unplaced), PodGroups and profiles; `replay` places them."""
    snap = pb.Snapshot(name=f"openb:{pods_file}")
    for row in _read(trace_dir / "openb_node_list_all_node.csv"):
        node = snap.nodes.add(name=row["sn"])
        node.labels["kubernetes.io/hostname"] = row["sn"]
        node.allocatable.update(
            {"cpu": float(row["cpu_milli"]), "memory": float(row["memory_mib"]) * MIB, "pods": 110.0}
        )
        if int(row["gpu"]) > 0:
            node.labels["gpu-model"] = row["model"]
            node.labels["accelerator"] = "gpu"
            node.allocatable[GPU] = int(row["gpu"]) * 1000.0
    snap.namespaces.add(name=NAMESPACE)
    rows = _read(trace_dir / pods_file)
    if rows and "creation_time" not in rows[0]:  # the sampled lists carry no times: file order
        for k, r in enumerate(rows):
            r.update(creation_time=str(k), deletion_time="", gpu_spec=r.get("gpu_spec", ""), qos=r.get("qos", "LS"))
    rows.sort(key=lambda r: (int(r["creation_time"] or 0), r["name"]))
    table = TaskTable(snap, ["cpu", "memory", GPU])
    cpu_profile = table.profile(
        pb.TaskProfile(scheduler_name="default-scheduler", owner_kind="ReplicaSet", labels={"app": "cpu"})
    )
    # workloads: same spec within GROUP_WINDOW_S of the previous member
    open_groups: dict[tuple[str, ...], tuple[int, int]] = {}
    members: list[list[int]] = []
    for k, r in enumerate(rows):
        cards = int(r["num_gpu"])
        t = int(r["creation_time"] or 0)
        requests = (float(r["cpu_milli"]), float(r["memory_mib"]) * MIB, cards * 1000.0)
        group, profile = -1, cpu_profile
        if cards > 0:
            spec = (r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"], r["gpu_spec"], r["qos"])
            opened = open_groups.get(spec)
            if opened is None or t - opened[1] > GROUP_WINDOW_S or len(members[opened[0]]) >= 64:
                opened = (len(members), t)
                members.append([])
            group = opened[0]
            open_groups[spec] = (group, t)
            members[group].append(k)
            gpu_profile = pb.TaskProfile(
                scheduler_name="volcano", owner_kind="Pod", labels={"workload": f"w{group:05d}"}
            )
            if r["gpu_spec"]:
                term = gpu_profile.required_node_affinity.add()
                term.match_expressions.add(key="gpu-model", operator="In", values=r["gpu_spec"].split("|"))
            profile = table.profile(gpu_profile)
        table.add(
            r["name"],
            r["name"],
            namespace=0,
            node=-1,
            status=pb.Task.Pending,
            pod_group=group,
            profile=profile,
            requests=requests,
        )
    for group, ks in enumerate(members):
        qos = rows[ks[0]]["qos"]
        gang = qos in ("BE", "Burstable")
        name = f"w{group:05d}"
        snap.pod_groups.add(
            namespace=NAMESPACE,
            name=name,
            min_member=len(ks) if gang else math.ceil(len(ks) / 2),
            labels={"repack.volcano.sh/eligible": "true", "qos": qos},
            phase="Running",
            queue="default",
            owner_references=[
                pb.OwnerReference(
                    api_version="batch.volcano.sh/v1alpha1" if gang else "apps/v1",
                    kind="Job" if gang else "Deployment",
                    name=name,
                    controller=True,
                )
            ],
        )
    table.finish()
    times = [(int(r["creation_time"] or 0), int(r["deletion_time"]) if r["deletion_time"] else None) for r in rows]
    return snap, times


def replay(
    snap: pb.Snapshot,
    times: list[tuple[int, int | None]],
    stop: Stop,
    conf: SchedulerConf | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pb.Snapshot, dict[str, float]]:
    """Place and remove the trace's pods in time order; return the snapshot at ``stop``."""
    state = decode(snap)
    mirror = Mirror(state, conf)
    sim = Simulation(state)
    g = state.resource(GPU)
    total_cards = float(state.node_alloc[:, g].sum())
    events: list[tuple[int, int, int]] = []  # (time, kind: 0 delete before 1 create, task)
    for t, (born, dies) in enumerate(times):
        events.append((born, 1, t))
        if dies is not None and stop.at_fill is None:
            events.append((dies, 0, t))
    events.sort()
    created = np.zeros(state.n_tasks, bool)
    deleted = np.zeros(state.n_tasks, bool)
    unplaced = 0
    now = 0

    def arrive(first: int, fill: float | None) -> int:
        """Play events from ``first`` on until ``fill`` is reached (or the time stop, or the end);
        the index of the next event not played."""
        nonlocal unplaced, now
        for k in range(first, len(events)):
            when, kind, t = events[k]
            if stop.at_time is not None and when > stop.at_time:
                return k
            now = when
            if kind == 0:
                deleted[t] = True
                if sim.on_node()[t]:
                    sim.remove(t)
                continue
            created[t] = True
            target = mirror.allocate(mirror.subject_for_task(t), sim)
            if target < 0:
                unplaced += 1
                continue
            sim.place(t, target)
            sim.commit()
            if progress is not None and k % 500 == 0:
                progress(k, len(events))
            if fill is not None and sim.used[:, g].sum() >= fill * total_cards:
                return k + 1
        return len(events)

    next_event = arrive(0, stop.at_fill)
    churn: dict[str, float] = {}
    if stop.depart_to is not None:
        churn["high_fill"] = float(sim.used[:, g].sum()) / total_cards if total_cards else 0.0
        gone = depart(
            state, sim, created & ~deleted, times, stop.departures, stop.seed, stop.depart_to * total_cards, g
        )
        deleted[gone] = True
        churn["departed_pods"] = float(gone.size)
        churn["departed_workloads"] = float(np.unique(workloads(state)[gone]).size)
        if stop.refill is not None:
            before = unplaced
            arrive(next_event, stop.refill)
            churn["refill_unplaced"] = float(unplaced - before)
    out = pb.Snapshot()
    out.CopyFrom(snap)
    cols = out.task_columns
    alive = created & ~deleted
    keep = np.flatnonzero(alive)
    new = pb.TaskColumns()
    for field in ("uid", "name", "role"):
        strings = list(getattr(cols, field))
        if strings:
            getattr(new, field).extend([strings[t] for t in keep])
    for field in ("namespace", "priority", "profile"):
        getattr(new, field).extend(np.array(getattr(cols, field))[keep].tolist())
    # keep only the PodGroups that still have pods, renumbered
    groups = np.array(cols.pod_group)[keep]
    used = np.unique(groups[groups >= 0])
    remap = np.full(len(out.pod_groups) + 1, -1, np.int64)
    remap[used] = np.arange(used.size)
    new.pod_group.extend(np.where(groups >= 0, remap[groups], -1).tolist())
    kept_groups = [out.pod_groups[int(i)] for i in used]
    del out.pod_groups[:]
    out.pod_groups.extend(kept_groups)
    new.node.extend(sim.node_of[keep].tolist())
    new.status.extend([pb.Task.Running if sim.node_of[t] >= 0 else pb.Task.Pending for t in keep])
    for col in cols.requests:
        new.requests.add(resource=col.resource, values=np.array(col.values)[keep].tolist())
    out.task_columns.CopyFrom(new)
    allocated = float(sim.used[:, g].sum())
    stats = {
        "time": float(now),
        "pods": float(keep.size),
        "unplaced": float(unplaced),
        "fill": allocated / total_cards if total_cards else 0.0,
        **churn,
    }
    return out, stats


def dlrm_pods(
    trace_dir: Path, file: str = "disaggregated_DLRM_trace.csv"
) -> tuple[pb.Snapshot, list[tuple[int, int | None]]]:
    rows = _read(trace_dir / file)
    born = [float(r["creation_time"]) if r["creation_time"] else 0.0 for r in rows]
    dies = [float(r["deletion_time"]) if r["deletion_time"] else None for r in rows]
    events = sorted([(b, 1, i) for i, b in enumerate(born)] + [(d, 0, i) for i, d in enumerate(dies) if d is not None])
    hn_now = cn_now = hn_peak = cn_peak = 0.0
    for _, kind, i in events:
        sign = 1 if kind == 1 else -1
        if rows[i]["role"] == "HN":
            hn_now += sign * float(rows[i]["gpu_request"])
            hn_peak = max(hn_peak, hn_now)
        else:
            cn_now += sign * float(rows[i]["cpu_request"])
            cn_peak = max(cn_peak, cn_now)
    gpu_nodes = max(1, math.ceil(hn_peak / 8 / 0.8))
    cpu_nodes = max(1, math.ceil(cn_peak / 192 / 0.8))
    snap = pb.Snapshot(name=f"dlrm:{file}")
    for i in range(gpu_nodes):
        node = snap.nodes.add(name=f"dlrm-gpu-{i:04d}")
        node.labels.update({"kubernetes.io/hostname": node.name, "node-role": "gpu", "accelerator": "gpu"})
        node.allocatable.update(
            {"cpu": 128_000.0, "memory": 1024.0 * 1024 * MIB, "pods": 110.0, GPU: 8000.0, "rdma/bandwidth": 200_000.0}
        )
    for i in range(cpu_nodes):
        node = snap.nodes.add(name=f"dlrm-cpu-{i:04d}")
        node.labels.update({"kubernetes.io/hostname": node.name, "node-role": "cpu"})
        node.allocatable.update(
            {"cpu": 192_000.0, "memory": 1536.0 * 1024 * MIB, "pods": 110.0, "rdma/bandwidth": 400_000.0}
        )
    snap.namespaces.add(name="dlrm")
    apps = sorted({r["app_name"] for r in rows if r["role"] == "HN"})
    app_index = {a: k for k, a in enumerate(apps)}
    replicas = {a: sum(1 for r in rows if r["role"] == "HN" and r["app_name"] == a) for a in apps}
    for a in apps:
        snap.pod_groups.add(
            namespace="dlrm",
            name=a,
            min_member=math.ceil(replicas[a] / 2),
            phase="Running",
            labels={"repack.volcano.sh/eligible": "true", "app": a},
            queue="default",
            owner_references=[
                pb.OwnerReference(
                    api_version="workload.serving.volcano.sh/v1alpha1", kind="ModelServing", name=a, controller=True
                )
            ],
        )
    table = TaskTable(snap, ["cpu", "memory", GPU, "rdma/bandwidth"])
    for r in rows:
        hn = r["role"] == "HN"
        requests = (
            float(r["cpu_request"]) * 1000,
            float(r["memory_request"]) * 1024 * MIB,
            float(r["gpu_request"]) * 1000,
            float(r["rdma_request"]) * 1000,
        )
        role = "gpu" if hn else "cpu"
        profile = pb.TaskProfile(
            scheduler_name="volcano" if hn else "default-scheduler",
            owner_kind="ModelServing" if hn else "ReplicaSet",
            labels={"app": r["app_name"], "role": r["role"]},
            node_selector={"node-role": role},
        )
        k = int(r["max_instance_per_node"] or -1)
        if hn and k == 1:
            profile.pod_anti_affinity.add(
                label_selector=pb.LabelSelector(match_labels={"app": r["app_name"], "role": "HN"}),
                topology_key="kubernetes.io/hostname",
            )
        elif hn and k > 1:
            profile.topology_spread_constraints.add(
                max_skew=k,
                topology_key="kubernetes.io/hostname",
                when_unsatisfiable="DoNotSchedule",
                label_selector=pb.LabelSelector(match_labels={"app": r["app_name"], "role": "HN"}),
            )
        table.add(
            r["instance_sn"],
            r["instance_sn"],
            namespace=0,
            node=-1,
            status=pb.Task.Pending,
            pod_group=app_index[r["app_name"]] if hn else -1,
            profile=table.profile(profile),
            requests=requests,
        )
    table.finish()
    times = [(int(b), None if d is None else int(d)) for b, d in zip(born, dies, strict=True)]
    return snap, times


def dlrm_snapshot(
    trace_dir: Path, stop: Stop, conf: SchedulerConf | None = None
) -> tuple[pb.Snapshot, dict[str, float]]:
    snap, times = dlrm_pods(trace_dir)
    return replay(snap, times, stop, conf)


def openb_snapshot(
    trace_dir: Path, stop: Stop, *, pods_file: str = "openb_pod_list_default.csv", conf: SchedulerConf | None = None
) -> tuple[pb.Snapshot, dict[str, float]]:
    snap, times = openb_pods(trace_dir, pods_file)
    return replay(snap, times, stop, conf)
