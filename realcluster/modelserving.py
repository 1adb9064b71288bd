"""A TEST DOUBLE for Kthena's ModelServing controller on the real control plane.

Kthena's module is not served by the Go module proxy here (``go list -m github.com/volcano-sh/kthena``:
403 "This module version is not available"), so Step 2's ModelServing is served by a minimal CRD of
this project's own (``realcluster/modelserving-crd.yaml``, schema-less; the fake cluster's rebuilds
follow the same naming) and this controller, which
does what the guide says Kthena does and nothing more:

* per ``spec.replicas`` one ServingGroup ``<name>-<i>``: a PodGroup (minMember = all of the group's
  pods, the ModelServing's labels, controller owner the ModelServing) and, per role, ``replicas``
  entry pods ``<name>-<i>-<role>-<k>`` and ``workerReplicas`` worker pods ``…-<k>-<w>``, annotated
  into the PodGroup, ``schedulerName`` from the spec — Volcano's scheduler places them;
* ``recoveryPolicy: ServingGroupRecreate``: when a pod of a group is gone (evicted, deleted), the
  rest of the group and its PodGroup are deleted; once every old pod is gone the group is recreated
  under a new PodGroup ``<name>-<i>-r<generation>`` of the same owner, pods under the same names.

It polls with the official client (the real API server, the admin's kubeconfig): a test double,
not a production controller.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

from kubernetes import client, config

Obj = dict[str, Any]
GROUP, VERSION, PLURAL = "workload.serving.volcano.sh", "v1alpha1", "modelservings"
CRD = Path(__file__).resolve().parent / "modelserving-crd.yaml"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
SERVING_GROUP = "modelserving.test-double/serving-group"  # which group a PodGroup/pod belongs to
GENERATION = "modelserving.test-double/generation"


class ModelServingDouble:
    def __init__(self, kubeconfig: Path, period: float = 0.3) -> None:
        self.api = config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
        # the generated clients' annotations name model classes; this double speaks plain dicts
        self.core: Any = client.CoreV1Api(self.api)
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.period = period
        self._generations: dict[tuple[str, str, int], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="modelserving-double", daemon=True)

    def start(self) -> ModelServingDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.api.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.sync()
            except client.ApiException:
                continue  # a conflict or a restart of the API server: next round

    def sync(self) -> None:
        for ms in self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]:
            ns = ms["metadata"]["namespace"]
            pods = [p for p in self.core.list_namespaced_pod(ns).items if _owned_by(p.metadata, ms)]
            pgs = [g for g in self.custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", ns,
                                                                        "podgroups")["items"]
                   if _owned_by_dict(g["metadata"], ms)]  # fmt: skip
            for i in range(int(ms["spec"].get("replicas", 1))):
                self._sync_group(ms, i, [p for p in pods if _group_of(p.metadata.labels) == str(i)],
                                 [g for g in pgs if _group_of(g["metadata"].get("labels")) == str(i)])  # fmt: skip

    def _sync_group(self, ms: Obj, i: int, pods: list[Any], pgs: list[Obj]) -> None:
        ns = ms["metadata"]["namespace"]
        want = _pod_specs(ms, i)
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        if pgs and len(live) == len(want) == len(pods):
            return  # whole
        if pgs:  # a member is gone: ServingGroupRecreate deletes the rest and the PodGroup
            for p in live:
                _ignore_missing(lambda p=p: self.core.delete_namespaced_pod(p.metadata.name, ns))
            for g in pgs:
                _ignore_missing(lambda g=g: self.custom.delete_namespaced_custom_object(
                    "scheduling.volcano.sh", "v1beta1", ns, "podgroups", g["metadata"]["name"]))  # fmt: skip
            self._generations[(ns, ms["metadata"]["name"], i)] = _generation(pgs) + 1
            return
        if pods:
            return  # old pods still terminating: recreate once they are all gone
        gen = self._generations.get((ns, ms["metadata"]["name"], i), 0)
        pg_name = f"{ms['metadata']['name']}-{i}" + (f"-r{gen}" if gen else "")
        labels = dict(ms["metadata"].get("labels") or {}) | {SERVING_GROUP: str(i), GENERATION: str(gen)}
        self.custom.create_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", ns, "podgroups", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": pg_name, "labels": labels, "ownerReferences": [_owner(ms)]},
            "spec": {"minMember": len(want), "queue": ms["spec"].get("queue", "default")},
        })  # fmt: skip
        for name, role, template in want:
            spec = _quantities_as_strings(copy.deepcopy(template.get("spec") or {}))
            spec.setdefault("schedulerName", ms["spec"].get("schedulerName", "volcano"))
            pod_labels = dict(ms["metadata"].get("labels") or {}) | {
                SERVING_GROUP: str(i), "modelserving.volcano.sh/name": ms["metadata"]["name"],
                "modelserving.volcano.sh/role": role}  # fmt: skip
            self.core.create_namespaced_pod(ns, {
                "apiVersion": "v1", "kind": "Pod", "spec": spec,
                "metadata": {"name": name, "labels": pod_labels, "annotations": {GROUP_ANNOTATION: pg_name},
                             "ownerReferences": [_owner(ms)]},
            })  # fmt: skip


def _pod_specs(ms: Obj, i: int) -> list[tuple[str, str, Obj]]:
    out = []
    for role in ms["spec"]["template"]["roles"]:
        for k in range(int(role.get("replicas", 1))):
            base = f"{ms['metadata']['name']}-{i}-{role['name']}-{k}"
            out.append((base, role["name"], role["entryTemplate"]))
            out += [(f"{base}-{w}", role["name"], role["workerTemplate"])
                    for w in range(1, int(role.get("workerReplicas", 0)) + 1)]  # fmt: skip
    return out


def _quantities_as_strings(spec: Obj) -> Obj:
    """YAML's ``1`` is a valid quantity to the API server; the typed client wants the string form."""
    for c in [*spec.get("containers", []), *spec.get("initContainers", [])]:
        for kind in ("requests", "limits"):
            part = (c.get("resources") or {}).get(kind) or {}
            for k, v in part.items():
                part[k] = str(v)
    return spec


def _owner(ms: Obj) -> Obj:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelServing", "name": ms["metadata"]["name"],
            "uid": ms["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def _owned_by(meta: Any, ms: Obj) -> bool:
    return any(r.uid == ms["metadata"]["uid"] for r in meta.owner_references or [])


def _owned_by_dict(meta: Obj, ms: Obj) -> bool:
    return any(r.get("uid") == ms["metadata"]["uid"] for r in meta.get("ownerReferences") or [])


def _group_of(labels: dict[str, str] | None) -> str:
    return (labels or {}).get(SERVING_GROUP, "")


def _generation(pgs: list[Obj]) -> int:
    return max(int(g["metadata"].get("labels", {}).get(GENERATION, "0")) for g in pgs)


def _ignore_missing(call: Any) -> None:
    try:
        call()
    except client.ApiException as exc:
        if exc.status != 404:
            raise
