"""Plans replayed through vc-scheduler (issue 24 item 5): does Volcano put each moved pod where the
plan said?

One round on the real control plane: a random pool of KWOK nodes, random gang Volcano Jobs (some
with their workers kept apart by required pod anti-affinity) placed by vc-scheduler itself
(arrivals), a random part of them deleted again (departures: the fragmentation repacking exists
for), then an Execute RepackRun over the pool, run by the shipped watcher: it replans on the live
cluster, evicts through the Eviction API, and nominates each rebuilt pod's node while the placement
gate holds the pod; vc-scheduler then binds it. Each relocation's journal says where the plan put
the pod (``plannedNodeName``), where the watcher nominated it (``placement.selectedNodeName``) and
where vc-scheduler bound it (``placement.actualNodeName``). A pod bound elsewhere than planned is a
move the mirror accepted that Volcano did not make.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster.fixtures import items, wait_for
from tests.realcluster.scenario import NPU, Scenario

Obj = dict[str, Any]


@dataclass
class RoundResult:
    seed: int
    nodes: int
    jobs_placed: int
    jobs_left: int
    phase: str = ""
    reason: str = ""
    freed: int = 0
    relocations: int = 0
    bound: int = 0  # relocations whose rebuilt pod was bound
    off_plan: list[str] = field(default_factory=list)  # "pod: planned X, bound Y"
    off_nomination: list[str] = field(default_factory=list)  # bound elsewhere than nominated
    seconds: float = 0.0


def job(ns: str, name: str, pool: str, replicas: int, cards: int, spread: bool = False) -> Obj:
    """A Volcano Job of ``replicas`` workers asking ``cards`` NPUs each, gang of all, repackable;
    ``spread``: its workers on different nodes (required pod anti-affinity on the hostname)."""
    limits = {"requests": {NPU: cards}, "limits": {NPU: cards}}
    template: Obj = {"spec": {"nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 0,
                              "restartPolicy": "Never",
                              "containers": [{"name": "w", "image": "alpine:3.20", "resources": limits}]}}  # fmt: skip
    if spread:
        template["metadata"] = {"labels": {"replay/job": name}}
        term = {"labelSelector": {"matchLabels": {"replay/job": name}}, "topologyKey": "kubernetes.io/hostname"}
        template["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {"repack.volcano.sh/eligible": "true"}},
            "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": replicas,
                     "tasks": [{"name": "w", "replicas": replicas, "template": template}]}}  # fmt: skip


def execute(name: str, pool: str, pod_groups: int) -> Obj:
    return {"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": name},
            "spec": {"mode": "Execute", "goals": [{"resource": NPU}], "maxPerRun": {"podGroups": pod_groups},
                     "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": pool}}}}},
                     "eviction": {"gracePeriodSeconds": 0}}}  # fmt: skip


def play(s: Scenario, seed: int) -> RoundResult:
    """One round (see the module docstring) in namespace ``s.ns``, on a pool named after it."""
    started = time.monotonic()
    rng = random.Random(seed)
    pool = s.ns
    cards = {f"{pool}-n{i}": rng.choice((4, 8)) for i in range(rng.randint(4, 8))}
    for size in set(cards.values()):
        s.add_nodes(tuple(n for n, c in cards.items() if c == size), cards=size, pool=pool)
    s.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}})
    # arrivals: jobs until about 85% of the cards are asked for, all at once; vc-scheduler places them
    want, total = 0, sum(cards.values())
    jobs: dict[str, tuple[int, int]] = {}
    while want < 0.85 * total:
        replicas, per_pod = rng.randint(1, 3), rng.choice((1, 1, 2, 2, 4))
        jobs[f"j{len(jobs)}"] = (replicas, per_pod)
        want += replicas * per_pod
    spread = {name for name, (r, _) in jobs.items() if r > 1 and rng.random() < 0.3}
    s.apply([job(s.ns, name, pool, r, c, name in spread) for name, (r, c) in jobs.items()])
    placed = settle(s, jobs)
    unplaced = [name for name in jobs if name not in placed]
    if unplaced:  # a gang that found no room waits forever: not part of this cluster
        s.kubectl("delete", "jobs.batch.volcano.sh", "-n", s.ns, *unplaced, "--wait=true")
    # departures: about half of the placed jobs leave
    leaving = [name for name in sorted(placed) if rng.random() < 0.5]
    if leaving:
        s.kubectl("delete", "jobs.batch.volcano.sh", "-n", s.ns, *leaving, "--wait=true")
        gone = {f"{name}-w-" for name in leaving}
        wait_for(lambda: not [p for p in s.pods() if p["metadata"]["name"].startswith(tuple(gone))], 60,
                 why=f"{leaving} gone")  # fmt: skip
    result = RoundResult(seed, len(cards), len(placed), len(placed) - len(leaving))
    name = f"replay-{seed}"
    s.apply(execute(name, pool, rng.choice((1, 2, 3))))
    run = s.finished(name, timeout=300)
    status = run.get("status", {})
    result.phase = status.get("phase", "")
    result.reason = next((c["reason"] for c in status.get("conditions", []) if c["type"] == "Complete"), "")
    result.freed = int(status.get("result", {}).get("freedNodeCount", 0))
    for r in status.get("relocations", []):
        result.relocations += 1
        placement = r.get("placement", {})
        actual = placement.get("actualNodeName", "")
        if not actual:
            continue
        result.bound += 1
        pod = f"{r['namespace']}/{r['victimPodName']}"
        if actual != r.get("plannedNodeName"):
            result.off_plan.append(f"{pod}: planned {r.get('plannedNodeName')}, bound {actual}")
        if actual != placement.get("selectedNodeName"):
            result.off_nomination.append(f"{pod}: nominated {placement.get('selectedNodeName')}, bound {actual}")
    result.seconds = time.monotonic() - started
    return result


def settle(s: Scenario, jobs: dict[str, tuple[int, int]], quiet: float = 4.0, timeout: float = 90.0) -> set[str]:
    """Wait until vc-scheduler has stopped placing (no new Running pod for ``quiet`` seconds, or
    every job Running); the jobs whose every worker runs."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        running = s.placement()
        complete = {n for n, (r, _) in jobs.items() if sum(p.startswith(f"{n}-w-") for p in running) == r}
        if len(complete) == len(jobs):
            return complete
        if len(running) != last:
            last, since = len(running), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return complete
        time.sleep(0.5)
    return complete


def clean(s: Scenario) -> None:
    """Delete the round's namespace, RepackRun and nodes (the next round starts from nothing)."""
    s.kubectl("delete", "repackruns", "--all", "--wait=true", check=False)
    s.kubectl("delete", "namespace", s.ns, "--wait=true", "--timeout=120s", check=False)
    nodes = [n["metadata"]["name"] for n in items(s.cluster, "nodes", "-l", f"pool={s.ns}")]
    if nodes:
        s.kubectl("delete", "nodes", *nodes, "--wait=true", check=False)
