"""A scenario on the real control plane driven with kubectl as an operator would: the project's
install (CRD, RBAC, the watcher's ServiceAccount), KWOK nodes, balloon pods that hold capacity
while workloads are placed, and reads of RepackRuns and pods."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.realcluster.fixtures import items, wait_for
from tests.realcluster.launcher import RealCluster
from tests.realcluster.modelserving import CRD as MODELSERVING_CRD

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
        """The project's install: the RepackRun CRD, the watcher's RBAC (manifests/) and the
        ServiceAccount it binds; the ModelServing test double's CRD."""
        self.kubectl("apply", "-f", str(ROOT / "manifests" / "crd" / "repack.volcano.sh_repackruns.yaml"),
                     "-f", str(MODELSERVING_CRD))  # fmt: skip
        self.kubectl("wait", "--for=condition=Established", "crd/repackruns.repack.volcano.sh",
                     "crd/modelservings.workload.serving.volcano.sh")  # fmt: skip
        self.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "volcano-scheduler", "namespace": "volcano-system"}})  # fmt: skip
        self.kubectl("apply", "-k", str(ROOT / "manifests" / "rbac"))

    def add_nodes(self, names: tuple[str, ...], cards: int = 4, **labels: str) -> None:
        """KWOK nodes with ``cards`` NPUs each; waits until they are Ready and untainted."""
        cap = {"cpu": "192", "memory": "1536Gi", "pods": "110", NPU: str(cards)}
        self.apply([{"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, **labels}},
                     "status": {"allocatable": cap, "capacity": cap}} for n in names])  # fmt: skip

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

    def set_balloons(self, cards: dict[str, int]) -> None:
        """Only these balloons (bare pods bound to a node holding ``cards`` NPUs) from now on."""
        self.kubectl("delete", "pods", "-n", "default", "-l", BALLOON, "--wait=true")
        wait_for(lambda: not items(self.cluster, "pods", "-n", "default", "-l", BALLOON), 30, why="balloons gone")
        if cards:
            self.apply([_balloon(n, c) for n, c in cards.items()])


def _balloon(node: str, cards: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"balloon-{node}", "namespace": "default", "labels": {BALLOON: "true"}},
            "spec": {"nodeName": node, "containers": [{"name": "hold", "image": "registry.k8s.io/pause:3.10",
                     "resources": {"requests": {NPU: str(cards)}, "limits": {NPU: str(cards)}}}]}}  # fmt: skip


def _ready(node: dict[str, Any]) -> bool:
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
    return ready and not node["spec"].get("taints")
