"""Convert between the two task forms of a Snapshot (rows for people, columns for machines)."""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2 as pb


def to_rows(snap: pb.Snapshot) -> pb.Snapshot:
    """The same cluster with every columnar task rewritten as one Task message (order kept)."""
    out = pb.Snapshot()
    out.CopyFrom(snap)
    out.ClearField("task_columns")
    out.ClearField("profiles")
    del out.tasks[:]
    c = snap.task_columns
    roles = c.role if len(c.role) else None
    for i in range(len(c.uid)):
        ns = snap.namespaces[c.namespace[i]].name
        task = out.tasks.add(
            uid=c.uid[i],
            name=c.name[i],
            namespace=ns,
            node=snap.nodes[c.node[i]].name if c.node[i] >= 0 else "",
            status=c.status[i],
            pod_group=snap.pod_groups[c.pod_group[i]].name if c.pod_group[i] >= 0 else "",
            priority=c.priority[i],
            role=roles[i] if roles is not None else "",
        )
        task.profile.CopyFrom(snap.profiles[c.profile[i]])
        if len(c.nonzero_cpu):
            task.nonzero_requests.cpu = c.nonzero_cpu[i]
            task.nonzero_requests.memory = c.nonzero_memory[i]
        for col in c.requests:
            if col.values[i]:
                task.requests[col.resource] = col.values[i]
    out.tasks.extend(snap.tasks)
    return out
