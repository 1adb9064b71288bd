"""``repack-sidecar demo --execute``: the guide's Steps 5–7 played end to end, with no cluster.

The cluster is the in-memory fake of the watcher's cluster port (``sidecar.fake``) with its
simulated Volcano (scheduler every ``schedulePeriod`` = 1 s, Volcano's default; kubelets; the Job
and ModelServing rebuilds); the rest is the product as shipped: a sidecar on loopback gRPC, and
the watcher exactly as ``watch`` wires it (informer caches, the event-driven controller with the
DryRun/Execute/TTL reconcilers, the placement gate's admission decision, answered in process where
the API server would call the webhook). The demo only applies the RepackRun and reports what it sees.

The cluster is the guide's example (3 nodes of 4 NPUs; the DryRun's 33.3% → 0%). Its Step 7 job
(2 workers × 4 NPUs, "accommodated by a complete node freed after repacking") assumes 8-NPU nodes,
so the demo submits it at the example's node size: 2 workers × 2 NPUs, a whole node, which no
node has free before the repack. The eviction grace is shortened so the show stays short.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import yaml

from sidecar.api.repackrun import TERMINAL, Phase
from sidecar.cli.output import table
from sidecar.client import RepackClient
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.fake.plane import ControlPlane, PlaneConfig
from sidecar.kubeobj import Obj
from sidecar.server.background import BackgroundServer
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.args import ExecuteFlags, WatchOptions
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.port import NAMESPACES as NAMESPACE
from sidecar.watcher.kit.port import NODES, PODGROUPS, PODS, REPACKRUNS
from sidecar.watcher.runner import build_controller, placement_gate
from sidecar.wording import change, number, percent

NPU = "huawei.com/ascend-1980"
NS = "repack-demo"
WORKER_NPUS = 2
GRACE_SECONDS = 0
SCHEDULE_PERIOD = 1.0
STEP7 = "ascend-large-training"


def _data(name: str) -> Any:
    return resources.files("sidecar") / "data" / name


def guide_cluster() -> list[Obj]:
    """The guide's example cluster as Kubernetes objects."""
    with resources.as_file(_data("guide-ascend.json")) as path:
        return objects_from_snapshot(load_snapshot(str(path)))


def execute_run() -> Obj:
    run: Obj = yaml.safe_load(_data("guide-ascend-execute.yaml").read_text())
    run["spec"]["eviction"]["gracePeriodSeconds"] = GRACE_SECONDS
    return run


def step7_job() -> list[Obj]:
    """Step 7's job as the Volcano Job controller would create it: a PodGroup (both workers admitted
    together) and two workers of ``WORKER_NPUS`` NPUs in the Ascend pool."""
    group: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": STEP7, "namespace": NS, "labels": {"workload-type": "training"}},
        "spec": {"minMember": 2, "queue": "default"},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{STEP7}-worker-{i}",
                "namespace": NS,
                "labels": {"volcano.sh/job-name": STEP7},
                "annotations": {"scheduling.k8s.io/group-name": STEP7},
            },
            "spec": {
                "schedulerName": "volcano",
                "nodeSelector": {"accelerator-pool": "ascend-npu"},
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {NPU: str(WORKER_NPUS), "cpu": "8"},
                            "limits": {NPU: str(WORKER_NPUS)},
                        },
                    }
                ],
            },
        }
        for i in range(2)
    ]
    return [group, *pods]


def _cards(pod: Obj) -> float:
    total = 0.0
    for c in pod["spec"].get("containers") or []:
        total += float(((c.get("resources") or {}).get("requests") or {}).get(NPU, 0))
    return total


def node_table(cluster: FakeCluster) -> str:
    pods = cluster.items(PODS)
    rows = []
    for node in cluster.items(NODES):
        name = node["metadata"]["name"]
        here = [p for p in pods if p["spec"].get("nodeName") == name and not p["metadata"].get("deletionTimestamp")]
        used = sum(_cards(p) for p in here)
        npu = [p["metadata"]["name"] for p in here if _cards(p)]
        allocatable = node["status"]["allocatable"].get(NPU, "0")
        rows.append([name, f"{used:g}/{allocatable}", ", ".join(sorted(npu)) or "-"])
    return table(rows, ["NODE", "NPU USED", "NPU PODS"])


def _reasons(run: Obj) -> str:
    return ", ".join(
        f"{c['type']}: {c['reason']}"
        for c in (run.get("status") or {}).get("conditions") or []
        if c["status"] == "True"
    )


def _relocation_line(r: Obj) -> str:
    ev, pl = r.get("eviction") or {}, r.get("placement") or {}
    parts = [
        f"{r['namespace']}/{r['victimPodName']}",
        f"eviction={ev.get('phase', '')}",
        f"placement={pl.get('phase', '')}",
        f"planned={r.get('plannedNodeName', '')}",
    ]
    parts += [f"{k}={pl[v]}" for k, v in (("selected", "selectedNodeName"), ("actual", "actualNodeName")) if pl.get(v)]
    return "  ".join(parts)


class Narrator:
    """Prints each change of the run (phase, conditions, every relocation) once, with elapsed time."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self.out, self.t0 = out, time.monotonic()
        self.seen: dict[str, str] = {}

    def say(self, text: str) -> None:
        self.out(f"[{time.monotonic() - self.t0:5.1f}s] {text}")

    def observe(self, run: Obj) -> None:
        status = run.get("status") or {}
        head = f"repackrun/{run['metadata']['name']} {status.get('phase', '(new)')}  {_reasons(run)}".rstrip()
        if self.seen.get("run") != head:
            self.seen["run"] = head
            self.say(head)
        for r in status.get("relocations") or []:
            line = _relocation_line(r)
            if self.seen.get(r["victimPodName"]) != line:
                self.seen[r["victimPodName"]] = line
                self.say("  " + line)


def run_demo(out: Callable[[str], None] = print, *, gates: bool = True, timeout: float = 60.0) -> int:
    """The whole show; exit code 0 when the run Succeeded and Step 7's job bound on a freed node.
    ``gates`` (the shipped path): rebuilt pods are created behind the placement gate, as the
    watcher's admission webhook answers, and wait for their nomination; without, they race the scheduler."""
    cluster = FakeCluster()
    cluster.load(guide_cluster())
    cluster.create(NAMESPACE, {"metadata": {"name": "volcano-system"}})
    plane = ControlPlane(cluster, PlaneConfig(scheduler_period=SCHEDULE_PERIOD))
    with BackgroundServer() as sidecar:
        plane.start()
        try:
            return _show(cluster, sidecar, out, timeout, gates)
        finally:
            plane.stop()


def _show(
    cluster: FakeCluster, sidecar: BackgroundServer, out: Callable[[str], None], timeout: float, gates: bool
) -> int:
    planner = RepackClient(sidecar.target)
    cache = ClusterCache(cluster)
    options = WatchOptions(execute=ExecuteFlags(cooldown=30.0, eviction_timeout=20.0, execution_timeout=45.0))
    index, lifter = placement_gate(cluster, cache, options.webhook.gate_timeout)
    if gates:
        cluster.admission = index.review  # what the API server's call of the webhook would answer
    controller = build_controller(cluster, planner, cache, options, [lifter] if gates else [])
    gate = (
        "\n  the placement gate: rebuilt pods are admitted behind it, as the watcher's webhook answers"
        if gates
        else "\n  no placement gate (--no-gates): rebuilt pods race the scheduler's next cycle"
    )
    out(
        "Repacking the user guide's cluster end to end, without a cluster:\n"
        f"  an in-memory cluster with a simulated Volcano (scheduler every {SCHEDULE_PERIOD:g} s, kubelets,\n"
        f"  Volcano Job and ModelServing rebuilds); the repack sidecar on gRPC {sidecar.target};\n"
        f"  the RepackRun watcher (informers, event-driven) between them;{gate}.\n"
        "  Cluster: the guide's example, 3 Ascend nodes of 4 NPUs.\n"
    )
    out(node_table(cluster) + "\n")
    cache.start()
    controller.start_leading()
    narrator = Narrator(out)
    try:
        run = execute_run()
        name = run["metadata"]["name"]
        narrator.say(
            f"kubectl apply -f ascend-execute-001.yaml   (Step 5: mode Execute, the guarded DryRun's scope and "
            f"budget, eviction grace {GRACE_SECONDS}s)"
        )
        cluster.create(REPACKRUNS, run)
        deadline = time.monotonic() + timeout
        current: Obj = {}
        while time.monotonic() < deadline:
            current = cluster.get(REPACKRUNS, name) or {}
            narrator.observe(current)
            if (current.get("status") or {}).get("phase") in TERMINAL:
                break
            time.sleep(0.1)
        status = current.get("status") or {}
        summary = (status.get("plan") or {}).get("summary") or {}
        result = status.get("result") or {}
        out(
            "\nStep 6 — planned vs actual:\n"
            f"  plan:   frag {change(summary.get('fragBeforePercent', 0), summary.get('fragAfterPercent', 0))}, "
            f"freed {summary.get('freedNodeCount', 0)}, moved {number(summary.get('movedCardCount', 0))}\n"
            f"  result: frag {percent(result.get('fragAfterPercent', 0))}, freed {result.get('freedNodeCount', 0)} "
            f"{result.get('freedNodes') or []}, moved {number(result.get('movedCardCount', 0))}, "
            f"verified {result.get('metricsVerified')}\n"
        )
        out(node_table(cluster) + "\n")
        if status.get("phase") != Phase.SUCCEEDED:
            out(f"The run ended {status.get('phase') or 'unfinished'}: {_reasons(current)}")
            out(
                "nominatedNodeName is a suggestion: a scheduling cycle that read the cluster before the\n"
                "nomination landed may bind a rebuilt pod elsewhere, even back on the node being emptied.\n"
                "The placement gate (the default; this run had --no-gates) holds rebuilt pods until nominated,\n"
                "which closes that race."
            )
            return 1
        return _step7(cluster, narrator, set(result.get("freedNodes") or []), out)
    finally:
        controller.stop_leading()
        cache.stop()
        planner.close()


def _step7(cluster: FakeCluster, narrator: Narrator, freed: set[str], out: Callable[[str], None]) -> int:
    narrator.say(
        f"Step 7: submit {STEP7} as 2 workers x {WORKER_NPUS} NPUs, admitted together: a whole node, which no "
        f"node had free before. The guide writes 2 workers x 4 NPUs, which one freed {2 * WORKER_NPUS}-NPU "
        "node of its own example cannot hold (its gang would stay unschedulable), so the demo halves each worker"
    )
    group, *pods = step7_job()
    cluster.create(PODGROUPS, group)
    for pod in pods:
        cluster.create(PODS, pod)
    names = {f"{STEP7}-worker-{i}" for i in range(2)}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        bound = {str(p["metadata"]["name"]): str(p["spec"].get("nodeName") or "") for p in cluster.items(PODS, NS)}
        bound = {k: v for k, v in bound.items() if k in names}
        if len(bound) == 2 and all(bound.values()):
            nodes = set(bound.values())
            narrator.say(f"  {STEP7} bound on {', '.join(sorted(nodes))}")
            ok = nodes <= freed
            out("\nThe freed node took the whole job." if ok else "\nThe job did not land on the freed node.")
            return 0 if ok else 1
        time.sleep(0.1)
    narrator.say(f"  {STEP7} not bound within 10 s")
    return 1
