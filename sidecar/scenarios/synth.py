"""Seeded generator of realistic fragmented GPU clusters (the demo and the benchmarks use it).

What it builds, so results can be read against it:
* node pools (``accelerator-pool`` label, ``gpu-model`` label), identical nodes within a pool;
  one pool is tainted ``dedicated=inference:NoSchedule``; a few nodes are cordoned;
* per node: DaemonSet pods (cpu only, default scheduler) and optional plain CPU pods;
* gang workloads as PodGroups owned by Volcano Jobs (training, 1/2/4/8-card workers,
  minMember <= replicas) and ModelServings (inference, tolerating the taint);
* pods placed at random among nodes that fit (that is what fragments real clusters), with
  node selectors on their pool, and pod anti-affinity between the replicas of some services;
* most PodGroups labelled ``repack.volcano.sh/eligible=true``, a few ``protected=true``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.scenarios.builder import TaskTable
from sidecar.snapshot.units import SCALAR_FACTOR

GIB = 1024**3
RUNNING = pb.Task.Running
PENDING = pb.Task.Pending


@dataclass(frozen=True)
class SynthOptions:
    nodes: int = 32
    cards_per_node: int = 8
    fill: float = 0.6
    seed: int = 1
    resource: str = "nvidia.com/gpu"
    daemonsets: int = 2
    cpu_pods_per_node: float = 0.5
    pools: int = 3
    name: str = ""
    #: share of jobs whose pods spread over hosts (DoNotSchedule, maxSkew 1 or 2); 0 draws nothing
    spread: float = 0.0


_CARD_MIX = (1, 2, 4, 8)
_CARD_WEIGHTS = (0.45, 0.25, 0.18, 0.12)


def _selector(labels: dict[str, str]) -> pb.LabelSelector:
    return pb.LabelSelector(match_labels=labels)


def synth(opts: SynthOptions) -> pb.Snapshot:
    """A columnar snapshot; the same options always give the same bytes."""
    if opts.nodes <= 0 or opts.cards_per_node <= 0 or not 0.0 <= opts.fill <= 1.0:
        raise ValueError("nodes and cards_per_node must be positive and fill within [0, 1]")
    rng = np.random.default_rng(opts.seed)
    snap = pb.Snapshot(name=opts.name or f"synth-n{opts.nodes}-c{opts.cards_per_node}-f{opts.fill}-s{opts.seed}")
    unit = SCALAR_FACTOR
    n_pools = max(1, min(opts.pools, opts.nodes))
    pool_of = np.sort(rng.integers(0, n_pools, opts.nodes)) if n_pools > 1 else np.zeros(opts.nodes, int)
    pool_names = [f"pool-{chr(ord('a') + p)}" for p in range(n_pools)]
    models = ["A100", "H100", "L40S", "V100"]
    inference_pool = n_pools - 1 if n_pools > 1 else -1
    width = max(4, len(str(opts.nodes - 1)))
    for i in range(opts.nodes):
        p = int(pool_of[i])
        node = snap.nodes.add(name=f"gpu-node-{i:0{width}d}")
        node.labels.update(
            {
                "kubernetes.io/hostname": node.name,
                "accelerator-pool": pool_names[p],
                "gpu-model": models[p % len(models)],
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            }
        )
        node.allocatable.update(
            {"cpu": 96_000.0, "memory": 768.0 * GIB, "pods": 110.0, opts.resource: opts.cards_per_node * unit}
        )
        if p == inference_pool:
            node.taints.add(key="dedicated", value="inference", effect="NoSchedule")
        if rng.random() < 0.01:
            node.unschedulable = True

    snap.namespaces.add(name="kube-system", labels={"kubernetes.io/metadata.name": "kube-system"})
    snap.namespaces.add(name="training", labels={"kubernetes.io/metadata.name": "training", "team": "research"})
    snap.namespaces.add(name="inference", labels={"kubernetes.io/metadata.name": "inference", "team": "serving"})
    snap.namespaces.add(name="batch", labels={"kubernetes.io/metadata.name": "batch"})
    ns_kube, ns_train, ns_inf, ns_batch = 0, 1, 2, 3

    table = TaskTable(snap, ["cpu", "memory", opts.resource])
    profile_index = table.profile

    def add_task(
        name: str,
        ns: int,
        node: int,
        status: Any,
        pg: int,
        prof: int,
        cpu: float,
        mem: float,
        cards: float,
        role: str = "",
    ) -> None:
        table.add(
            f"uid-{len(snap.task_columns.uid):08d}",
            name,
            namespace=ns,
            node=node,
            status=status,
            pod_group=pg,
            profile=prof,
            requests=(cpu, mem, cards),
            role=role,
        )

    # Node-local system pods: never movable, never blocking.
    for d in range(opts.daemonsets):
        prof = profile_index(
            pb.TaskProfile(
                labels={"app": f"ds-{d}"},
                scheduler_name="default-scheduler",
                owner_kind="DaemonSet",
                tolerations=[pb.Toleration(operator="Exists")],
            )
        )
        for i in range(opts.nodes):
            add_task(f"ds-{d}-{i}", ns_kube, i, RUNNING, -1, prof, 100.0, 0.2 * GIB, 0.0)

    free = np.full(opts.nodes, opts.cards_per_node, dtype=np.int64)
    schedulable = np.array([not n.unschedulable for n in snap.nodes])
    target_cards = round(opts.fill * opts.cards_per_node * int(schedulable.sum()))
    placed_cards = 0
    job = 0
    misses = 0
    while placed_cards < target_cards and misses < 50:
        kind = "serving" if rng.random() < 0.3 else "training"
        cards = int(rng.choice(_CARD_MIX, p=_CARD_WEIGHTS))
        cards = min(cards, opts.cards_per_node)
        if kind == "serving":
            replicas = int(rng.integers(2, 5))
            pool = inference_pool if inference_pool >= 0 else 0
            ns = ns_inf
        else:
            replicas = int(rng.choice((1, 2, 4, 8)))
            pool = int(rng.integers(0, max(1, n_pools - 1))) if n_pools > 1 else 0
            ns = ns_train if rng.random() < 0.8 else ns_batch
        remaining = target_cards - placed_cards
        replicas = max(1, min(replicas, remaining // max(cards, 1) or 1))
        pool_nodes = np.flatnonzero((pool_of == pool) & schedulable)
        name = f"{kind}-{job:05d}"
        min_member = replicas if kind == "training" and rng.random() < 0.6 else max(1, (replicas * 3) // 4)
        protected = rng.random() < 0.1
        labels = {"workload-type": kind, "repack.volcano.sh/eligible": "true"}
        if protected:
            labels["repack.volcano.sh/protected"] = "true"
        owner = (
            pb.OwnerReference(api_version="batch.volcano.sh/v1alpha1", kind="Job", name=name, controller=True)
            if kind == "training"
            else pb.OwnerReference(
                api_version="workload.serving.volcano.sh/v1alpha1", kind="ModelServing", name=name, controller=True
            )
        )
        pg_index = len(snap.pod_groups)
        profile = pb.TaskProfile(
            labels={"app": name, "volcano.sh/job-name": name},
            scheduler_name="volcano",
            owner_kind="Pod" if kind == "training" else "ModelServing",
            node_selector={"accelerator-pool": pool_names[pool]},
        )
        if kind == "serving":
            profile.tolerations.add(key="dedicated", operator="Equal", value="inference", effect="NoSchedule")
            if rng.random() < 0.5:
                profile.pod_anti_affinity.add(
                    label_selector=_selector({"app": name}), topology_key="kubernetes.io/hostname"
                )
        if opts.spread > 0 and rng.random() < opts.spread:
            profile.topology_spread_constraints.add(
                max_skew=int(rng.integers(1, 3)),
                topology_key="kubernetes.io/hostname",
                when_unsatisfiable="DoNotSchedule",
                label_selector=_selector({"app": name}),
            )
        prof = profile_index(profile)
        anti = len(profile.pod_anti_affinity) > 0
        used_nodes: set[int] = set()
        placed_any = False
        for r in range(replicas):
            fits = pool_nodes[free[pool_nodes] >= cards]
            if anti and fits.size:
                fits = np.array([n for n in fits if n not in used_nodes], dtype=np.int64)
            if fits.size == 0:
                add_task(
                    f"{name}-worker-{r}",
                    ns,
                    -1,
                    PENDING,
                    pg_index,
                    prof,
                    8000.0 * cards,
                    64.0 * GIB * cards,
                    cards * unit,
                    "worker",
                )
                continue
            chosen = int(fits[rng.integers(0, fits.size)])
            free[chosen] -= cards
            used_nodes.add(chosen)
            placed_cards += cards
            placed_any = True
            add_task(
                f"{name}-worker-{r}",
                ns,
                chosen,
                RUNNING,
                pg_index,
                prof,
                8000.0 * cards,
                64.0 * GIB * cards,
                cards * unit,
                "worker",
            )
        misses = 0 if placed_any else misses + 1
        snap.pod_groups.add(
            namespace=snap.namespaces[ns].name,
            name=f"{name}-{rng.integers(0, 16**8):08x}",
            min_member=min(min_member, replicas),
            labels=labels,
            owner_references=[owner],
            phase="Running" if placed_any else "Pending",
            queue="default",
        )
        job += 1

    cpu_prof = profile_index(
        pb.TaskProfile(labels={"app": "cpu-batch"}, scheduler_name="default-scheduler", owner_kind="ReplicaSet")
    )
    n_cpu = round(opts.cpu_pods_per_node * opts.nodes)
    for k in range(n_cpu):
        add_task(
            f"cpu-batch-{k}", ns_batch, int(rng.integers(0, opts.nodes)), RUNNING, -1, cpu_prof, 2000.0, 4.0 * GIB, 0.0
        )

    return table.finish()
