"""The cluster as a Snapshot: read once (``read_cluster``) or kept current by informers (``ClusterCache``).

Objects are raw JSON (camelCase, as the API serves them) because ``snapshot_from_objects`` reads
manifests, not the client's models. Both paths give the same Snapshot for the same objects: each
kind in the API server's list order, (namespace, name).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.kubeobj import Obj
from sidecar.snapshot.kube import snapshot_from_objects
from sidecar.watcher.kit import port
from sidecar.watcher.kit.informer import Backoff, Informer
from sidecar.watcher.kit.port import Cluster, Resource

#: run name -> the cluster as a Snapshot (the informer cache's, or a fresh read)
SnapshotSource = Callable[[str], pb.Snapshot]
#: the kinds a snapshot is made of, in the order ``snapshot_from_objects`` takes them
SNAPSHOT_KINDS = (port.NAMESPACES, port.NODES, port.PODS, port.PODGROUPS, port.PDBS)


def read_cluster(cluster: Cluster, *, name: str = "") -> pb.Snapshot:
    """Namespaces, Nodes, Pods, PodGroups and PDBs → the Snapshot a Volcano session would see (five LISTs)."""
    namespaces, nodes, pods, groups, pdbs = (cluster.listing(kind).items for kind in SNAPSHOT_KINDS)
    return snapshot_from_objects(namespaces, nodes, pods, groups, pdbs, name=name)


class ClusterCache:
    """Informers for Namespaces, Nodes, Pods, PodGroups, PDBs, RepackRuns and RepackPolicies, and the
    Snapshot of the cluster they hold.

    ``start`` runs one thread per kind; ``refresh`` instead lists each kind once with no thread
    (``watch --once``). A snapshot reads each store as it is: kinds may be a few events apart, as
    in any informer-fed controller; the planner's own checks (and the API server's, on writes)
    are what make a stale read harmless.
    """

    def __init__(
        self, cluster: Cluster, *, resync: float = 300.0, watch_timeout: int = 300, backoff: Backoff | None = None
    ) -> None:
        def informer(kind: Resource) -> Informer:
            return Informer(cluster, kind, resync=resync, watch_timeout=watch_timeout, backoff=backoff)

        self.namespaces = informer(port.NAMESPACES)
        self.nodes = informer(port.NODES)
        self.pods = informer(port.PODS)
        self.pod_groups = informer(port.PODGROUPS)
        self.pdbs = informer(port.PDBS)
        self.runs = informer(port.REPACKRUNS)
        self.policies = informer(port.REPACKPOLICIES)

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.namespaces, self.nodes, self.pods, self.pod_groups, self.pdbs, self.runs, self.policies)

    def informer(self, resource: port.Resource) -> Informer:
        """The informer of ``resource`` (a kind this cache holds)."""
        return next(i for i in self.informers if i.kind == resource)

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
