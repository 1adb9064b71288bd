"""Writing a columnar task table: profiles interned, one row per task, request columns at the end.

The synth generator and the trace replays build snapshots through this one helper.
"""

from __future__ import annotations

from collections.abc import Sequence

from sidecar.api.v1alpha1 import snapshot_pb2 as pb


class TaskTable:
    def __init__(self, snap: pb.Snapshot, resources: Sequence[str]) -> None:
        self.snap = snap
        self.resources = list(resources)
        self._values: list[list[float]] = [[] for _ in self.resources]
        self._profiles: dict[bytes, int] = {}
        self._roles: list[str] = []

    def profile(self, profile: pb.TaskProfile) -> int:
        """Index of ``profile`` in snapshot.profiles, added once per distinct value."""
        key = profile.SerializeToString(deterministic=True)
        index = self._profiles.get(key)
        if index is None:
            index = self._profiles[key] = len(self.snap.profiles)
            self.snap.profiles.append(profile)
        return index

    def add(
        self,
        uid: str,
        name: str,
        *,
        namespace: int,
        node: int,
        status: int,
        pod_group: int,
        profile: int,
        requests: Sequence[float],
        priority: int = 0,
        role: str = "",
    ) -> int:
        """Append one task; ``requests`` follow the resource order given at construction."""
        cols = self.snap.task_columns
        cols.uid.append(uid)
        cols.name.append(name)
        cols.namespace.append(namespace)
        cols.node.append(node)
        cols.status.append(status)  # type: ignore[arg-type]
        cols.pod_group.append(pod_group)
        cols.priority.append(priority)
        cols.profile.append(profile)
        self._roles.append(role)
        for column, value in zip(self._values, requests, strict=True):
            column.append(value)
        return len(cols.uid) - 1

    def finish(self) -> pb.Snapshot:
        """Write the request columns (and roles, when any task has one)."""
        cols = self.snap.task_columns
        for name, values in zip(self.resources, self._values, strict=True):
            cols.requests.add(resource=name, values=values)
        if any(self._roles):
            cols.role.extend(self._roles)
        return self.snap
