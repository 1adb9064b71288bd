"""The cluster as a Snapshot, read with the official client.

This slice lists each kind once per reconcile; the next step is list+watch informers with resync
and 410 → relist, so a pass costs no API calls. Objects are read as raw JSON (camelCase, as the
API serves them) because ``snapshot_from_objects`` reads manifests, not the client's models.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.snapshot.kube import snapshot_from_objects

Obj = dict[str, Any]
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")


def _items(response: Any) -> list[Obj]:
    """Items of a list call made with ``_preload_content=False`` (the raw HTTP response)."""
    return list(json.loads(response.data).get("items") or [])


def read_cluster(api: client.ApiClient, *, name: str = "") -> pb.Snapshot:
    """Namespaces, Nodes, Pods, PodGroups and PDBs → the Snapshot a Volcano session would see."""
    core, policy = client.CoreV1Api(api), client.PolicyV1Api(api)
    custom = client.CustomObjectsApi(api)
    namespaces = _items(core.list_namespace(_preload_content=False))
    nodes = _items(core.list_node(_preload_content=False))
    pods = _items(core.list_pod_for_all_namespaces(_preload_content=False))
    groups = _items(custom.list_cluster_custom_object(*PODGROUPS, _preload_content=False))
    pdbs = _items(policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False))
    return snapshot_from_objects(namespaces, nodes, pods, groups, pdbs, name=name)
