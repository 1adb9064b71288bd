"""The watcher's one door to Kubernetes: a narrow port, as controller-runtime's ``client.Client`` is.

Everything the watcher does to a cluster goes through ``Cluster``: list and watch (the informers),
get, create, replace (optionally the status subresource), JSON patch, delete with a UID
precondition, and the Eviction API. Objects are raw JSON dicts (camelCase, as the API serves them),
which is what ``snapshot_from_objects`` and the journal read. Two implementations: ``kit.kube``
on the official ``kubernetes`` client (production, and the real control plane in tests) and
``sidecar.fake`` in memory (unit, crash and fault tests, the demo).

Errors are the port's, not a transport's: ``ApiError`` carries the HTTP status the API server
answered (404, 409, 422, 429, 500, ...) and its Status message; ``Gone`` is a watch whose
resourceVersion the server no longer holds (only a relist helps); ``Unreachable`` is no answer at
all (connection refused or cut, a timeout). ``TRANSIENT`` is what a retrying loop survives.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from sidecar.kubeobj import Obj


@dataclass(frozen=True)
class Resource:
    """A kind the watcher touches: where it lives in the API (``path``) and what it is called."""

    plural: str
    kind: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """``/api/v1/namespaces/ns/pods/name/eviction`` and the like; a namespaced kind without a
        namespace is the list across all namespaces."""
        parts = ["/api/v1" if not self.group else f"/apis/{self.group}/{self.version}"]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


NAMESPACES = Resource("namespaces", "Namespace", namespaced=False)
NODES = Resource("nodes", "Node", namespaced=False)
PODS = Resource("pods", "Pod")
EVENTS = Resource("events", "Event")
SECRETS = Resource("secrets", "Secret")
PDBS = Resource("poddisruptionbudgets", "PodDisruptionBudget", "policy")
LEASES = Resource("leases", "Lease", "coordination.k8s.io")
WEBHOOK_CONFIGURATIONS = Resource(
    "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", "admissionregistration.k8s.io", namespaced=False
)
PODGROUPS = Resource("podgroups", "PodGroup", "scheduling.volcano.sh", "v1beta1")
REPACKRUNS = Resource("repackruns", "RepackRun", "repack.volcano.sh", "v1alpha1", namespaced=False)
REPACKPOLICIES = Resource("repackpolicies", "RepackPolicy", "repack.volcano.sh", "v1alpha1", namespaced=False)


class ApiError(Exception):
    """The API server answered ``status`` (not 2xx); ``message`` is its Status message."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.reason = status, message, reason


class Gone(ApiError):
    """410: the resourceVersion a watch asked for is older than the server's history."""

    def __init__(self, message: str = "too old resource version") -> None:
        super().__init__(410, message, "Expired")


class Unreachable(Exception):
    """No answer: the connection was refused or cut, or the request timed out."""


#: what a loop that retries (informers, the Lease, chores) survives
TRANSIENT: tuple[type[Exception], ...] = (ApiError, Unreachable)


class Listing(NamedTuple):
    items: list[Obj]
    #: the list's resourceVersion, where a watch resumes
    resource_version: str


class WatchStream(Protocol):
    """Events of one watch: ``(type, object)`` with type ADDED, MODIFIED, DELETED or BOOKMARK, until
    the server ends the stream (its timeout) or ``close`` cuts it (from another thread). An ERROR
    event raises: ``Gone`` for 410, ``ApiError`` otherwise."""

    def __iter__(self) -> Iterator[tuple[str, Obj]]: ...

    def close(self) -> None: ...


class Cluster(Protocol):
    """The calls the watcher makes. ``timeout`` (seconds) bounds one call; None: the default."""

    def listing(self, resource: Resource, *, timeout: float | None = None) -> Listing:
        """Every object of the kind (all namespaces), in the server's order, and the list's version."""
        ...

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> WatchStream:
        """Changes after ``resource_version`` (with bookmarks) for at most ``timeout_seconds``."""
        ...

    def get(self, resource: Resource, name: str, namespace: str = "", *, timeout: float | None = None) -> Obj | None:
        """The object, or None when there is none by that name (404)."""
        ...

    def create(self, resource: Resource, obj: Obj, *, timeout: float | None = None) -> Obj:
        """Create ``obj`` (its namespace from its metadata); 409 when the name is taken."""
        ...

    def replace(self, resource: Resource, obj: Obj, *, status: bool = False, timeout: float | None = None) -> Obj:
        """PUT ``obj`` (or its status subresource) guarded by its ``metadata.resourceVersion``:
        409 when the stored object moved on since."""
        ...

    def patch(self, resource: Resource, name: str, namespace: str, ops: list[Obj], *, status: bool = False) -> Obj:
        """An RFC 6902 JSON patch (``test`` ops guard it: 422 when one fails)."""
        ...

    def delete(self, resource: Resource, name: str, namespace: str = "", *, uid: str = "") -> None:
        """Delete; with ``uid`` only that incarnation (409 when the name now holds another)."""
        ...

    def evict(self, namespace: str, name: str, *, uid: str, grace_seconds: int | None = None) -> None:
        """policy/v1 Eviction of the pod with that UID: 429 while a PodDisruptionBudget forbids
        it, 500 when two budgets guard it, 409 when the name belongs to another pod."""
        ...

    def close(self) -> None: ...
