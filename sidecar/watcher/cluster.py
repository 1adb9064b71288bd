"""The cluster as a Snapshot: read once (``read_cluster``) or kept current by informers (``ClusterCache``).

Objects are raw JSON (camelCase, as the API serves them) because ``snapshot_from_objects`` reads
manifests, not the client's models. Both paths give the same Snapshot for the same objects: each
kind in the API server's list order, (namespace, name).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot.kube import snapshot_from_objects
from sidecar.watcher import informer as kinds
from sidecar.watcher.informer import Backoff, Informer, Kind

#: run name -> the cluster as a Snapshot (the informer cache's, or a fresh read)
SnapshotSource = Callable[[str], pb.Snapshot]
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")


def _items(response: Any) -> list[Obj]:
    """Items of a list call made with ``_preload_content=False`` (the raw HTTP response)."""
    return list(json.loads(response.data).get("items") or [])


def read_cluster(api: client.ApiClient, *, name: str = "") -> pb.Snapshot:
    """Namespaces, Nodes, Pods, PodGroups and PDBs → the Snapshot a Volcano session would see (five LISTs)."""
    core, policy = client.CoreV1Api(api), client.PolicyV1Api(api)
    custom = client.CustomObjectsApi(api)
    namespaces = _items(core.list_namespace(_preload_content=False))
    nodes = _items(core.list_node(_preload_content=False))
    pods = _items(core.list_pod_for_all_namespaces(_preload_content=False))
    groups = _items(custom.list_cluster_custom_object(*PODGROUPS, _preload_content=False))
    pdbs = _items(policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False))
    return snapshot_from_objects(namespaces, nodes, pods, groups, pdbs, name=name)


class ClusterCache:
    """Informers for Namespaces, Nodes, Pods, PodGroups, PDBs and RepackRuns, and the Snapshot of them.

    ``start`` runs one thread per kind; ``refresh`` instead lists each kind once with no thread
    (``watch --once``). A snapshot reads each store as it is: kinds may be a few events apart, as
    in any informer-fed controller; the planner's own checks (and the API server's, on writes)
    are what make a stale read harmless.
    """

    def __init__(
        self, api: client.ApiClient, *, resync: float = 300.0, watch_timeout: int = 300, backoff: Backoff | None = None
    ) -> None:
        def informer(kind: Kind) -> Informer:
            return Informer(api, kind, resync=resync, watch_timeout=watch_timeout, backoff=backoff)

        self.namespaces = informer(kinds.NAMESPACES)
        self.nodes = informer(kinds.NODES)
        self.pods = informer(kinds.PODS)
        self.pod_groups = informer(kinds.PODGROUPS)
        self.pdbs = informer(kinds.PDBS)
        self.runs = informer(kinds.REPACKRUNS)

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.namespaces, self.nodes, self.pods, self.pod_groups, self.pdbs, self.runs)

    def start(self) -> ClusterCache:
        for informer in self.informers:
            informer.start()
        return self

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def refresh(self) -> None:
        """One LIST per kind into the stores, without threads."""
        for informer in self.informers:
            informer.relist()

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)

    def wait_for_sync(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(i.wait_for_sync(max(0.0, deadline - time.monotonic())) for i in self.informers)

    def snapshot(self, name: str = "") -> pb.Snapshot:
        """What ``read_cluster`` would answer for the cached objects."""
        return snapshot_from_objects(
            self.namespaces.items(),
            self.nodes.items(),
            self.pods.items(),
            self.pod_groups.items(),
            self.pdbs.items(),
            name=name,
        )

    def run(self, name: str) -> Obj | None:
        """A RepackRun as cached, as a private copy (reconcilers may change what they are given)."""
        found = self.runs.get(name)
        return copy.deepcopy(found) if found is not None else None

    def list_runs(self) -> list[Obj]:
        """Every cached RepackRun, shared (read only)."""
        return self.runs.items()

    def list_pods(self) -> list[Obj]:
        """Every cached Pod, shared (read only)."""
        return self.pods.items()
