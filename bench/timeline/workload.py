"""The arrivals every variant sees: openb's pods as a stationary stream, plus whole-node gangs.

Why not the trace's own clock: openb's 8,152 pods hold 7,433 cards in all, 1.2x the cluster, and
98% of them arrive in the last 35 of its 149 days; with their recorded lifetimes the cluster never
holds more than 71 cards (sidecar/scenarios/traces.py). No compression of one pass can keep the
cluster near saturation for hours: the pass runs out. So the trace is read as a workload *mix*,
replayed in its own order and cycled, and only the clock is ours:

* **jobs from the trace**, in creation order (cycled: the k-th arrival is trace job k mod M):
  every GPU pod is a job of its own in a PodGroup of its own with minMember 1 (what Volcano's
  PodGroup controller gives a plain pod); a CPU-only pod is a default-scheduler pod without
  PodGroup (it never moves, as in traces.py); pods of ``WHOLE_NODE_CARDS`` cards grouped as
  traces.py groups them (same spec within 10 minutes) are one **whole-node gang job** with
  traces.py's minMember (BE/Burstable: every member; LS: half);
* **lifetimes** are the recorded ones (deletion - creation, at least 1 s), capped at
  ``LoadModel.max_life``: 77% of the trace's card-seconds sit in 34 pods living 12-145 days, and
  a stream cannot be stationary over a horizon longer than the simulated span;
* **injected whole-node gangs**: ``gang_sizes`` pods of 8 cards each (the trace's most common
  8-card pod: its cpu, memory and QoS), minMember = size, lifetimes drawn from the trace's 8-card
  pods (same cap), arriving as their own Poisson process;
* **arrivals** are two seeded Poisson processes whose rates offer ``rho`` of the cluster's cards
  (expected card-seconds per second over capacity), ``gang_share`` of it in injected gangs.

Every pod of every job is a task of one snapshot (all Pending, unplaced) decoded once: the
engine's Simulation moves them on and off nodes, so task indices never change.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.scenarios.builder import TaskTable
from sidecar.scenarios.traces import NAMESPACE, openb_pods
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

GPU = "nvidia.com/gpu"
#: the card count of the largest openb nodes: a pod asking this many needs a whole node
WHOLE_NODE_CARDS = 8
RESOURCES = ("cpu", "memory", GPU)


@dataclass(frozen=True)
class LoadModel:
    """How the trace is turned into a load (module docstring); every field is in the JSON."""

    rho: float = 1.0
    gang_share: float = 0.2
    #: lifetime cap in seconds; None: the 95th percentile of the trace's recorded lifetimes
    max_life: float | None = None
    gang_sizes: tuple[int, ...] = (2, 3, 4)
    hours: float = 8.0
    seed: int = 1
    #: keep every k-th node of the trace's node list (1: all; --quick shrinks the cluster)
    node_stride: int = 1


@dataclass(frozen=True)
class Job:
    """One scheduling unit: the tasks that start together (allocate_job's ``tasks``)."""

    index: int
    group: int  # PodGroup index, -1 for a CPU-only pod
    tasks: tuple[int, ...]
    arrival: float
    life: float
    cards: int  # whole cards over all its pods
    whole_node: bool
    injected: bool


@dataclass(frozen=True)
class Pod:
    name: str
    cpu: float  # millicores
    memory: float  # bytes
    cards: int
    models: tuple[str, ...] = ()  # gpu_spec: required gpu-model label values (): any


@dataclass(frozen=True)
class JobSpec:
    """A job before it is given its task indices."""

    arrival: float
    life: float
    pods: tuple[Pod, ...]
    min_member: int
    qos: str
    injected: bool = False


@dataclass
class Workload:
    state: ClusterState
    jobs: list[Job]
    capacity: float  # cards
    model: LoadModel
    #: the derived numbers (rates, template counts): reported in the JSON
    facts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Template:
    """A job of the trace, before it is given a clock: its pods' trace rows."""

    rows: tuple[int, ...]
    life: float
    whole_node: bool
    min_member: int
    qos: str


@dataclass(frozen=True)
class _Row:
    name: str
    cpu: float
    memory: float
    cards: int
    spec: tuple[str, ...]  # gpu_spec models ((): any)
    life: float


def _trace(
    trace_dir: Path, pods_file: str, max_life: float | None
) -> tuple[pb.Snapshot, list[_Row], list[_Template], float]:
    """The openb snapshot (nodes), its pods as rows, its jobs as templates (module docstring) and
    the lifetime cap applied."""
    snap, times = openb_pods(trace_dir, pods_file)
    recorded = [float((dies if dies is not None else born) - born) for born, dies in times]
    if max_life is None:
        max_life = float(np.percentile(recorded, 95))
    cols = snap.task_columns
    req = {c.resource: np.asarray(c.values) for c in cols.requests}
    rows: list[_Row] = []
    for k, name in enumerate(cols.name):
        prof = snap.profiles[cols.profile[k]]
        spec: tuple[str, ...] = ()
        for term in prof.required_node_affinity:
            for expr in term.match_expressions:
                spec = tuple(expr.values)
        life = min(max(recorded[k], 1.0), max_life)
        rows.append(_Row(name, float(req["cpu"][k]), float(req["memory"][k]), int(req[GPU][k] // 1000), spec, life))
    groups: dict[int, list[int]] = {}
    for k, g in enumerate(cols.pod_group):
        if g >= 0 and rows[k].cards == WHOLE_NODE_CARDS:
            groups.setdefault(int(g), []).append(k)
    templates: list[_Template] = []
    for k, g in enumerate(cols.pod_group):
        members = groups.get(int(g)) if g >= 0 else None
        if members is not None:
            if members[0] != k:
                continue  # the gang is one job, at its first member
            pg = snap.pod_groups[int(g)]
            life = max(rows[m].life for m in members)
            templates.append(_Template(tuple(members), life, True, int(pg.min_member), pg.labels["qos"]))
        else:
            qos = snap.pod_groups[int(g)].labels["qos"] if g >= 0 else "LS"
            templates.append(_Template((k,), rows[k].life, False, 1, qos))
    return snap, rows, templates, max_life


def _profile(table: TaskTable, cards: int, spec: tuple[str, ...], owner: str) -> int:
    """A handful of profiles (not one per workload): the mirror caches node checks per profile."""
    if cards == 0:
        return table.profile(
            pb.TaskProfile(scheduler_name="default-scheduler", owner_kind="ReplicaSet", labels={"app": "cpu"})
        )
    prof = pb.TaskProfile(scheduler_name="volcano", owner_kind=owner, labels={"app": "gpu"})
    if spec:
        term = prof.required_node_affinity.add()
        term.match_expressions.add(key="gpu-model", operator="In", values=list(spec))
    return table.profile(prof)


def _poisson(rng: np.random.Generator, rate: float, span: float) -> list[float]:
    """Arrival times of a Poisson process of ``rate`` per second on [0, span)."""
    out: list[float] = []
    if rate <= 0:
        return out
    t = float(rng.exponential(1.0 / rate))
    while t < span:
        out.append(round(t, 3))  # millisecond clock: the JSON stays short and exact
        t += float(rng.exponential(1.0 / rate))
    return out


def build(trace_dir: Path, model: LoadModel, pods_file: str = "openb_pod_list_default.csv") -> Workload:
    """The workload of ``model`` on openb's nodes (module docstring); deterministic for its seed."""
    base, rows, templates, max_life = _trace(trace_dir, pods_file, model.max_life)
    nodes = list(base.nodes)[:: model.node_stride]
    capacity = sum(n.allocatable[GPU] for n in nodes if GPU in n.allocatable) / 1000.0
    rng = np.random.default_rng(model.seed)
    span = model.hours * 3600.0
    # expected card-seconds per job of each stream, over one cycle of the trace
    trace_cs = float(np.mean([sum(rows[r].cards for r in t.rows) * t.life for t in templates]))
    eight = [r for r in rows if r.cards == WHOLE_NODE_CARDS]
    eight_lives = np.array([r.life for r in eight])
    gang_cs = float(np.mean(model.gang_sizes)) * WHOLE_NODE_CARDS * float(eight_lives.mean())
    trace_rate = model.rho * (1 - model.gang_share) * capacity / trace_cs
    gang_rate = model.rho * model.gang_share * capacity / gang_cs
    trace_times = _poisson(rng, trace_rate, span)
    gang_times = _poisson(rng, gang_rate, span)
    gang_sizes = rng.choice(np.array(model.gang_sizes), size=len(gang_times)).tolist()
    gang_lives = rng.choice(eight_lives, size=len(gang_times)).tolist()
    # the trace's most common 8-card pod gives the injected gangs' pods their cpu and memory
    cpu, memory = Counter((r.cpu, r.memory) for r in eight).most_common(1)[0][0]
    arrivals = sorted([(t, 0, k) for k, t in enumerate(trace_times)] + [(t, 1, k) for k, t in enumerate(gang_times)])
    specs: list[JobSpec] = []
    for when, stream, k in arrivals:
        if stream == 0:
            tpl = templates[k % len(templates)]
            cycle = k // len(templates)
            pods = tuple(
                Pod(f"{rows[r].name}-c{cycle}", rows[r].cpu, rows[r].memory, rows[r].cards, rows[r].spec)
                for r in tpl.rows
            )
            specs.append(JobSpec(when, tpl.life, pods, tpl.min_member, tpl.qos))
        else:
            size = int(gang_sizes[k])
            pods = tuple(Pod(f"gang-{k:05d}-{m}", cpu, memory, WHOLE_NODE_CARDS) for m in range(size))
            specs.append(JobSpec(when, float(gang_lives[k]), pods, size, "BE", injected=True))
    workload = assemble(f"timeline:openb:{pods_file}", nodes, specs, model)
    workload.facts.update(
        {
            "nodes": float(len(nodes)),
            "capacity_cards": capacity,
            "max_life_s": round(max_life, 1),
            "trace_jobs_per_cycle": float(len(templates)),
            "trace_whole_node_jobs_per_cycle": float(sum(t.whole_node for t in templates)),
            "trace_rate_per_hour": round(trace_rate * 3600, 2),
            "gang_rate_per_hour": round(gang_rate * 3600, 2),
            "trace_card_seconds_per_job": round(trace_cs, 2),
            "gang_card_seconds_per_job": round(gang_cs, 2),
            "trace_cycles": float(math.ceil(len(trace_times) / len(templates))) if templates else 0.0,
            "jobs": float(len(specs)),
            "injected_gang_cpu_milli": cpu,
            "injected_gang_memory_bytes": memory,
        }
    )
    return workload


def assemble(name: str, nodes: Sequence[pb.Node], specs: Sequence[JobSpec], model: LoadModel) -> Workload:
    """One snapshot holding every pod of ``specs`` (in arrival order), all Pending, decoded once.
    Every job with cards is a PodGroup of its own (BE/Burstable: a Volcano Job, else a ReplicaSet
    owner); a CPU-only pod has none."""
    snap = pb.Snapshot(name=name)
    snap.nodes.extend(nodes)
    snap.namespaces.add(name=NAMESPACE)
    table = TaskTable(snap, list(RESOURCES))
    jobs: list[Job] = []
    for index, spec in enumerate(sorted(specs, key=lambda s: s.arrival)):
        cards = sum(p.cards for p in spec.pods)
        group = -1
        gang = spec.qos in ("BE", "Burstable")
        if cards > 0:
            group = len(snap.pod_groups)
            snap.pod_groups.add(
                namespace=NAMESPACE,
                name=f"j{index:06d}",
                min_member=spec.min_member,
                labels={"repack.volcano.sh/eligible": "true", "qos": spec.qos},
                phase="Inqueue",  # the enqueue gate is not modelled: every job is Inqueue
                queue="default",
                owner_references=[
                    pb.OwnerReference(
                        api_version="batch.volcano.sh/v1alpha1" if gang else "apps/v1",
                        kind="Job" if gang else "ReplicaSet",
                        name=f"j{index:06d}",
                        controller=True,
                    )
                ],
            )
        owner = "Job" if gang else "ReplicaSet"
        tasks = tuple(
            table.add(
                p.name,
                p.name,
                namespace=0,
                node=-1,
                status=pb.Task.Pending,
                pod_group=group,
                profile=_profile(table, p.cards, p.models, owner),
                requests=(p.cpu, p.memory, p.cards * 1000.0),
            )
            for p in spec.pods
        )
        whole = cards > 0 and all(p.cards == WHOLE_NODE_CARDS for p in spec.pods)
        jobs.append(Job(index, group, tasks, spec.arrival, spec.life, cards, whole, spec.injected))
    table.finish()
    capacity = sum(n.allocatable[GPU] for n in nodes if GPU in n.allocatable) / 1000.0
    return Workload(decode(snap), jobs, capacity, model, {"tasks": float(len(snap.task_columns.uid))})
