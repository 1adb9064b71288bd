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
    return _Synth(opts).build()


_MODELS = ("A100", "H100", "L40S", "V100")
_NAMESPACES: tuple[tuple[str, dict[str, str]], ...] = (
    ("kube-system", {}),
    ("training", {"team": "research"}),
    ("inference", {"team": "serving"}),
    ("batch", {}),
)
_NS_KUBE, _NS_TRAIN, _NS_INF, _NS_BATCH = range(4)


class _Synth:
    """One generated cluster, built in the steps :meth:`build` lists; every random draw comes from
    one generator in a fixed order, so the bytes depend on the options only."""

    def __init__(self, opts: SynthOptions) -> None:
        self.opts = opts
        self.rng = np.random.default_rng(opts.seed)
        name = opts.name or f"synth-n{opts.nodes}-c{opts.cards_per_node}-f{opts.fill}-s{opts.seed}"
        self.snap = pb.Snapshot(name=name)
        self.n_pools = max(1, min(opts.pools, opts.nodes))
        self.pool_names = [f"pool-{chr(ord('a') + p)}" for p in range(self.n_pools)]
        self.inference_pool = self.n_pools - 1 if self.n_pools > 1 else -1
        self.pool_of = np.zeros(opts.nodes, int)
        self.table: TaskTable | None = None

    def build(self) -> pb.Snapshot:
        self._nodes()
        self._namespaces()
        self.table = TaskTable(self.snap, ["cpu", "memory", self.opts.resource])
        self._daemonsets()
        self._workloads()
        self._cpu_pods()
        return self.table.finish()

    def _add_task(
        self,
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
        assert self.table is not None
        self.table.add(
            f"uid-{len(self.snap.task_columns.uid):08d}",
            name,
            namespace=ns,
            node=node,
            status=status,
            pod_group=pg,
            profile=prof,
            requests=(cpu, mem, cards),
            role=role,
        )

    def _nodes(self) -> None:
        """Identical nodes per pool (sorted into pools), the inference pool tainted, 1% cordoned."""
        opts, rng = self.opts, self.rng
        if self.n_pools > 1:
            self.pool_of = np.sort(rng.integers(0, self.n_pools, opts.nodes))
        width = max(4, len(str(opts.nodes - 1)))
        for i in range(opts.nodes):
            p = int(self.pool_of[i])
            node = self.snap.nodes.add(name=f"gpu-node-{i:0{width}d}")
            node.labels.update(
                {
                    "kubernetes.io/hostname": node.name,
                    "accelerator-pool": self.pool_names[p],
                    "gpu-model": _MODELS[p % len(_MODELS)],
                    "topology.kubernetes.io/zone": f"zone-{i % 3}",
                }
            )
            node.allocatable.update(
                {
                    "cpu": 96_000.0,
                    "memory": 768.0 * GIB,
                    "pods": 110.0,
                    opts.resource: opts.cards_per_node * SCALAR_FACTOR,
                }
            )
            if p == self.inference_pool:
                node.taints.add(key="dedicated", value="inference", effect="NoSchedule")
            if rng.random() < 0.01:
                node.unschedulable = True

    def _namespaces(self) -> None:
        for name, labels in _NAMESPACES:
            self.snap.namespaces.add(name=name, labels={"kubernetes.io/metadata.name": name, **labels})

    def _daemonsets(self) -> None:
        """Node-local system pods: never movable, never blocking."""
        assert self.table is not None
        for d in range(self.opts.daemonsets):
            prof = self.table.profile(
                pb.TaskProfile(
                    labels={"app": f"ds-{d}"},
                    scheduler_name="default-scheduler",
                    owner_kind="DaemonSet",
                    tolerations=[pb.Toleration(operator="Exists")],
                )
            )
            for i in range(self.opts.nodes):
                self._add_task(f"ds-{d}-{i}", _NS_KUBE, i, RUNNING, -1, prof, 100.0, 0.2 * GIB, 0.0)

    def _workloads(self) -> None:
        """Gang jobs placed at random among the nodes that fit, until ``fill`` of the schedulable
        nodes' cards are taken (or 50 jobs in a row place nothing)."""
        opts = self.opts
        self.free = np.full(opts.nodes, opts.cards_per_node, dtype=np.int64)
        self.schedulable = np.array([not n.unschedulable for n in self.snap.nodes])
        target_cards = round(opts.fill * opts.cards_per_node * int(self.schedulable.sum()))
        placed_cards = job = misses = 0
        while placed_cards < target_cards and misses < 50:
            placed = self._job(job, target_cards - placed_cards)
            placed_cards += placed
            misses = 0 if placed else misses + 1
            job += 1

    def _job(self, job: int, remaining: int) -> int:
        """One training Job or ModelServing with its PodGroup; the cards it placed."""
        opts, rng = self.opts, self.rng
        assert self.table is not None
        n_pools = self.n_pools
        kind = "serving" if rng.random() < 0.3 else "training"
        cards = min(int(rng.choice(_CARD_MIX, p=_CARD_WEIGHTS)), opts.cards_per_node)
        if kind == "serving":
            replicas = int(rng.integers(2, 5))
            pool = self.inference_pool if self.inference_pool >= 0 else 0
            ns = _NS_INF
        else:
            replicas = int(rng.choice((1, 2, 4, 8)))
            pool = int(rng.integers(0, max(1, n_pools - 1))) if n_pools > 1 else 0
            ns = _NS_TRAIN if rng.random() < 0.8 else _NS_BATCH
        replicas = max(1, min(replicas, remaining // max(cards, 1) or 1))
        pool_nodes = np.flatnonzero((self.pool_of == pool) & self.schedulable)
        name = f"{kind}-{job:05d}"
        min_member = replicas if kind == "training" and rng.random() < 0.6 else max(1, (replicas * 3) // 4)
        labels = {"workload-type": kind, "repack.volcano.sh/eligible": "true"}
        if rng.random() < 0.1:
            labels["repack.volcano.sh/protected"] = "true"
        owner = (
            pb.OwnerReference(api_version="batch.volcano.sh/v1alpha1", kind="Job", name=name, controller=True)
            if kind == "training"
            else pb.OwnerReference(
                api_version="workload.serving.volcano.sh/v1alpha1", kind="ModelServing", name=name, controller=True
            )
        )
        pg_index = len(self.snap.pod_groups)
        profile = pb.TaskProfile(
            labels={"app": name, "volcano.sh/job-name": name},
            scheduler_name="volcano",
            owner_kind="Pod" if kind == "training" else "ModelServing",
            node_selector={"accelerator-pool": self.pool_names[pool]},
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
        prof = self.table.profile(profile)
        placed = self._place(name, ns, pg_index, prof, replicas, cards, pool_nodes, bool(profile.pod_anti_affinity))
        self.snap.pod_groups.add(
            namespace=self.snap.namespaces[ns].name,
            name=f"{name}-{rng.integers(0, 16**8):08x}",
            min_member=min(min_member, replicas),
            labels=labels,
            owner_references=[owner],
            phase="Running" if placed else "Pending",
            queue="default",
        )
        return placed

    def _place(
        self, name: str, ns: int, pg: int, prof: int, replicas: int, cards: int, pool_nodes: np.ndarray, anti: bool
    ) -> int:
        """Each replica on a random node of its pool with room (apart, under anti-affinity), else
        Pending; the cards placed."""
        used_nodes: set[int] = set()
        placed = 0
        for r in range(replicas):
            fits = pool_nodes[self.free[pool_nodes] >= cards]
            if anti and fits.size:
                fits = np.array([n for n in fits if n not in used_nodes], dtype=np.int64)
            node, status = -1, PENDING
            if fits.size:
                node, status = int(fits[self.rng.integers(0, fits.size)]), RUNNING
                self.free[node] -= cards
                used_nodes.add(node)
                placed += cards
            self._add_task(
                f"{name}-worker-{r}",
                ns,
                node,
                status,
                pg,
                prof,
                8000.0 * cards,
                64.0 * GIB * cards,
                cards * SCALAR_FACTOR,
                "worker",
            )
        return placed

    def _cpu_pods(self) -> None:
        """Plain CPU pods (default scheduler) on random nodes."""
        assert self.table is not None
        opts = self.opts
        cpu_prof = self.table.profile(
            pb.TaskProfile(labels={"app": "cpu-batch"}, scheduler_name="default-scheduler", owner_kind="ReplicaSet")
        )
        for k in range(round(opts.cpu_pods_per_node * opts.nodes)):
            node = int(self.rng.integers(0, opts.nodes))
            self._add_task(f"cpu-batch-{k}", _NS_BATCH, node, RUNNING, -1, cpu_prof, 2000.0, 4.0 * GIB, 0.0)
