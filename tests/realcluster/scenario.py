"""A scenario on the real control plane driven with kubectl as an operator would: the project's
install (CRD, RBAC, the watcher's ServiceAccount), KWOK nodes, balloon pods that hold capacity
while workloads are placed, and reads of RepackRuns and pods."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from realcluster.launcher import RealCluster
from realcluster.modelserving import CRD as MODELSERVING_CRD
from sidecar.watcher.gate.index import configuration
from tests.realcluster.fixtures import items, wait_for

ROOT = Path(__file__).resolve().parents[2]
NPU = "huawei.com/ascend-1980"
WATCHER = "system:serviceaccount:volcano-system:volcano-scheduler"
BALLOON = "repack-test/balloon"


class Scenario:
    def __init__(self, cluster: RealCluster, tmp: Path, namespace: str) -> None:
        self.cluster, self.tmp, self.ns = cluster, tmp, namespace

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        return self.cluster.kubectl(*args, stdin=stdin, check=check).stdout

    def apply(self, docs: list[dict[str, Any]] | dict[str, Any]) -> str:
        body = yaml.safe_dump_all(docs if isinstance(docs, list) else [docs])
        return self.kubectl("apply", "-f", "-", stdin=body)

    def install(self) -> None:
        """The project's install: its CRDs (RepackRun, RepackPolicy), the watcher's RBAC (manifests/)
        and the ServiceAccount it binds, the placement gate's webhook configuration; the ModelServing
        test double's CRD."""
        self.kubectl("apply", "-k", str(ROOT / "manifests" / "crd"))
        self.kubectl("apply", "-f", str(MODELSERVING_CRD))
        self.cluster.wait_established("repackruns.repack.volcano.sh", "repackpolicies.repack.volcano.sh",
                                      "modelservings.workload.serving.volcano.sh")  # fmt: skip
        self.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "volcano-scheduler", "namespace": "volcano-system"}})  # fmt: skip
        self.kubectl("apply", "-k", str(ROOT / "manifests" / "rbac"))
        # the shipped webhook configuration, its clientConfig a loopback URL instead of the Service
        url = f"https://127.0.0.1:{self.cluster.gate_port}/mutate-pods"
        self.kubectl("apply", "-f", "-", stdin=json.dumps(configuration({"url": url})))

    def add_nodes(self, names: tuple[str, ...], cards: int = 4, **labels: str) -> None:
        """KWOK nodes with ``cards`` NPUs each; waits until they are Ready and untainted."""
        cap = {"cpu": "192", "memory": "1536Gi", "pods": "110", NPU: str(cards)}
        self.apply([{"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, **labels}},
                     "status": {"allocatable": cap, "capacity": cap}} for n in names])  # fmt: skip
        self._wait_ready(names)

    def add_node_file(self, path: Path) -> tuple[str, ...]:
        """The nodes a manifest declares (kubectl apply, as a reader of the docs does); waits as above."""
        names = tuple(d["metadata"]["name"] for d in yaml.safe_load_all(path.read_text()) if d)
        self.kubectl("apply", "-f", str(path))
        self._wait_ready(names)
        return names

    def _wait_ready(self, names: tuple[str, ...]) -> None:
        def ready() -> bool:
            nodes = {n["metadata"]["name"]: n for n in items(self.cluster, "nodes")}
            return all(n in nodes and _ready(nodes[n]) for n in names)

        wait_for(ready, 60, why=f"KWOK nodes {names} Ready and untainted")

    def run(self, name: str) -> dict[str, Any]:
        return dict(json.loads(self.kubectl("get", "repackrun", name, "-o", "json")))

    def finished(self, name: str, timeout: float = 120) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            run = self.run(name)
            return run if run.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

        return wait_for(done, timeout, why=f"RepackRun {name} finished")

    def pods(self, *selector: str) -> list[dict[str, Any]]:
        return items(self.cluster, "pods", "-n", self.ns, *selector)

    def placement(self) -> dict[str, str]:
        """Running pod name -> node, in this scenario's namespace."""
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in self.pods()
                if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}  # fmt: skip

    def evictions(self) -> Counter[str]:
        """Pods of this namespace the watcher evicted (Eviction API calls answered 201), from the audit log."""
        return Counter(
            e["objectRef"]["name"] for e in self.cluster.audit()
            if e.get("objectRef", {}).get("subresource") == "eviction" and e["objectRef"].get("namespace") == self.ns
            and e["user"]["username"] == WATCHER and e["responseStatus"]["code"] == 201
        )  # fmt: skip

    def check_evictions(self, relocations: list[dict[str, Any]]) -> Counter[str]:
        """Every relocation's victim is Evicted; the watcher called the Eviction API at most once per
        victim and for nothing else; a victim it did not evict was already going (a Volcano Job may
        restart its other pods when one is evicted, the guide's "Evicting a pod may trigger restart
        of the entire VCJob"), and the journal says so. The calls made, per pod."""
        calls = self.evictions()
        assert calls and max(calls.values()) == 1, calls
        assert set(calls) <= {r["victimPodName"] for r in relocations}, calls
        for r in relocations:
            assert r["eviction"]["phase"] == "Evicted", r
            if r["victimPodName"] not in calls:
                assert r["eviction"]["message"].startswith(("already", "not needed")), r
        return calls

    def gated(self) -> dict[str, str]:
        """Pod name → what the placement gate's webhook did at its latest create in this namespace
        (from the audit annotations): "gated", "failed open: <webhook>" (not reachable: created as
        it was, failurePolicy Ignore), or "as is" (asked, nothing added; or not sent to it)."""
        out: dict[str, str] = {}
        for e in self.cluster.audit():
            ref = e.get("objectRef", {})
            if (
                e["verb"] != "create"
                or ref.get("resource") != "pods"
                or ref.get("subresource")
                or ref.get("namespace") != self.ns
                or e["responseStatus"]["code"] != 201
            ):
                continue
            notes = e.get("annotations") or {}
            outcome = "as is"
            for key, value in notes.items():
                if key.endswith(".placement.repack.volcano.sh/gated"):
                    outcome = "gated"
                elif key.startswith("failed-open.mutation.webhook.admission.k8s.io/"):
                    outcome = f"failed open: {value}"
            out[ref.get("name", "")] = outcome
        return out

    def three_jobs(self, pool: str) -> tuple[str, ...]:
        """Three nodes of ``pool`` in a new namespace, one two-worker VCJob ``train-<i>`` Running on
        each (2 + 2 + 2 of 4 NPUs: one node can be freed by moving one job); balloons steer Volcano."""
        nodes = tuple(f"{pool}-{i}" for i in (1, 2, 3))
        self.add_nodes(nodes, pool=pool)
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        for i, node in enumerate(nodes):
            # every other node full: 2 cards beside an earlier job, 4 on a node still empty
            self.set_balloons({n: 2 if j < i else 4 for j, n in enumerate(nodes) if j != i})
            self.apply(vcjob(self.ns, f"train-{i}", pool))
            wait_for(lambda i=i, node=node: self.job_nodes(f"train-{i}") == [node] * 2, 90, why=f"train-{i} on {node}")
        self.set_balloons({})
        return nodes

    def job_nodes(self, job: str) -> list[str]:
        return [node for pod, node in self.placement().items() if pod.startswith(f"{job}-")]

    def set_balloons(self, cards: dict[str, int]) -> None:
        """Only these balloons (bare pods bound to a node holding ``cards`` NPUs) from now on."""
        self.kubectl("delete", "pods", "-n", "default", "-l", BALLOON, "--wait=true")
        wait_for(lambda: not items(self.cluster, "pods", "-n", "default", "-l", BALLOON), 30, why="balloons gone")
        if cards:
            self.apply([_balloon(n, c) for n, c in cards.items()])


def vcjob(
    ns: str, name: str, pool: str, *, workers: int = 2, cards: int = 1, gates: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A Volcano Job of ``workers`` workers (gang: all of them), ``cards`` NPUs each, on nodes labelled
    ``pool``, eligible for repacking; ``gates``: scheduling gates its pods are created with."""
    template: dict[str, Any] = {"spec": {
        "nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 5, "restartPolicy": "Never",
        "containers": [{"name": "trainer", "image": "alpine:3.20",
                        "resources": {"requests": {NPU: cards}, "limits": {NPU: cards}}}]}}  # fmt: skip
    if gates:
        template["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {"repack.volcano.sh/eligible": "true"}},
            "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": workers,
                     "tasks": [{"name": "worker", "replicas": workers, "template": template}]}}  # fmt: skip


def execute_run(name: str, pool: str, mode: str = "Execute") -> dict[str, Any]:
    """A run freeing nodes of ``pool`` by moving at most one PodGroup, evicting with no grace."""
    return {"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": name},
            "spec": {"mode": mode, "goals": [{"resource": NPU}], "maxPerRun": {"podGroups": 1},
                     "scope": {"nodes": {"include": {"selector": {"matchLabels": {"pool": pool}}}}},
                     "eviction": {"gracePeriodSeconds": 0}}}  # fmt: skip


def _balloon(node: str, cards: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"balloon-{node}", "namespace": "default", "labels": {BALLOON: "true"}},
            "spec": {"nodeName": node, "containers": [{"name": "hold", "image": "registry.k8s.io/pause:3.10",
                     "resources": {"requests": {NPU: str(cards)}, "limits": {NPU: str(cards)}}}]}}  # fmt: skip


def _ready(node: dict[str, Any]) -> bool:
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
    return ready and not node["spec"].get("taints")
