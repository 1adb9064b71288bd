"""What a pushed session lacks, from elsewhere: namespace labels and PDBs merged into a Snapshot.

Volcano's onSessionOpen body (the extender's ``latest``) carries neither; the watcher, which has
informers for both, sends them as a supplement. The session's own values win when present.
"""

from __future__ import annotations

from sidecar.api.v1alpha1 import snapshot_pb2


def merged(snapshot: snapshot_pb2.Snapshot, supplement: snapshot_pb2.Snapshot) -> snapshot_pb2.Snapshot:
    """``snapshot`` with ``supplement``'s namespaces and PDBs filled in (a copy when anything is
    added; ``snapshot`` itself otherwise). A namespace the snapshot lists with labels keeps them,
    one it lists without labels takes the supplement's; a PDB it lists (same namespace and name)
    keeps its own; the supplement's others are appended, in the supplement's order."""
    if not supplement.namespaces and not supplement.pdbs:
        return snapshot
    out = snapshot_pb2.Snapshot()
    out.CopyFrom(snapshot)
    own = {ns.name: ns for ns in out.namespaces}
    for ns in supplement.namespaces:
        mine = own.get(ns.name)
        if mine is None:
            own[ns.name] = out.namespaces.add(name=ns.name, labels=ns.labels)
        elif not mine.labels:
            mine.labels.update(ns.labels)
    own_pdbs = {(p.namespace, p.name) for p in out.pdbs}
    out.pdbs.extend(p for p in supplement.pdbs if (p.namespace, p.name) not in own_pdbs)
    return out
