"""Workload controllers that create what a workload object asks for (the rebuilds are ``workloads``).

* Volcano Job (``batch.volcano.sh/v1alpha1``), as Volcano v1.14.1's job controller does on a new
  Job (pkg/controllers/job: ``createOrUpdatePodGroup``, ``createJobPod``): a PodGroup
  ``<job>-<job uid>`` (the Job's labels and annotations, controller owner the Job, ``minMember``
  the Job's ``minAvailable``, ``minTaskMember`` per task its ``minAvailable`` else its replicas,
  queue, priority class) and per task ``replicas`` pods ``<job>-<task>-<index>`` from the task's
  template, with the labels and annotations Volcano sets (``volcano.sh/job-name``,
  ``volcano.sh/task-spec``, ``volcano.sh/task-index``, the PodGroup annotation, ...), scheduler
  name from the Job where the template has none. The Job's ``status.state.phase`` goes Pending,
  then Running once ``minAvailable`` of its pods run (``status.running``/``pending`` counted).
  Not modelled: ``minResources`` (the sandbox scheduler does not read it), volumes, policies,
  plugins (``svc``, ``env``), Job updates and retries. ``minAvailable`` missing is the sum of the
  replicas (Volcano's admission webhook default).
* ModelServing (``workload.serving.volcano.sh/v1alpha1``, a stand-in for Kthena's: its module is not
  served): per ``spec.replicas`` a ServingGroup ``<name>-<i>`` — a PodGroup (``minMember`` all of
  its pods) and per role ``replicas`` entry pods ``<name>-<i>-<role>-<k>`` and ``workerReplicas``
  worker pods ``…-<k>-<w>`` — named as the real control plane's controller double names them
  (tests/realcluster/modelserving.py), so both clusters answer the guide's Step 2 alike.

A workload is created once, when first seen without a status (Job) or without its groups
(ModelServing); a pod evicted later is the rebuild controllers' (``workloads``).
"""

from __future__ import annotations

import copy

from sidecar.kubeobj import Obj
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.registry import ResourceType
from sidecar.sandbox.apiserver.rest import POD_KEY, Api
from sidecar.sandbox.controlplane.loop import Loop
from sidecar.sandbox.controlplane.scheduler import PODGROUP_KEY
from sidecar.snapshot.kube import GROUP_NAME

JOB_KEY = "batch.volcano.sh/jobs"
MODELSERVING_KEY = "workload.serving.volcano.sh/modelservings"
#: labels the ModelServing controller double marks its groups with (tests/realcluster/modelserving.py)
SERVING_GROUP = "modelserving.test-double/serving-group"
GENERATION = "modelserving.test-double/generation"


def _owner(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _task_minimum(task: Obj) -> int:
    """A task's minTaskMember: its minAvailable, else its replicas (getMinTaskMember)."""
    given = task.get("minAvailable")
    return int(given if given is not None else task.get("replicas") or 0)


def job_min_available(spec: Obj) -> int:
    """A Job's minAvailable; missing, the sum of its tasks' replicas (Volcano's admission default)."""
    given = spec.get("minAvailable")
    return int(given if given is not None else sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or []))


def job_objects(job: Obj) -> tuple[Obj, list[Obj]]:
    """The PodGroup and the pods Volcano's job controller creates for a new ``job``."""
    meta, spec = job["metadata"], job.get("spec") or {}
    ns, name = meta.get("namespace", "default"), meta["name"]
    group = f"{name}-{meta.get('uid', '')}"
    queue = spec.get("queue") or "default"
    tasks = spec.get("tasks") or []
    pg_spec: Obj = {
        "minMember": job_min_available(spec),
        "minTaskMember": {t.get("name") or f"default{i}": _task_minimum(t) for i, t in enumerate(tasks)},
        "queue": queue,
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    pg_meta: Obj = {"name": group, "namespace": ns, "ownerReferences": [_owner(job)]}
    for k in ("labels", "annotations"):
        if meta.get(k):
            pg_meta[k] = dict(meta[k])
    podgroup = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": pg_meta}
    podgroup["spec"] = pg_spec
    pods = []
    for i, task in enumerate(tasks):
        task_name = task.get("name") or f"default{i}"
        template = copy.deepcopy(task.get("template") or {})
        t_meta, t_spec = template.get("metadata") or {}, template.get("spec") or {}
        for index in range(int(task.get("replicas") or 0)):
            labels = dict(t_meta.get("labels") or {}) | {
                "volcano.sh/task-index": str(index),
                "volcano.sh/job-name": name,
                "volcano.sh/task-spec": task_name,
                "volcano.sh/job-namespace": ns,
                "volcano.sh/queue-name": queue,
            }
            notes = dict(t_meta.get("annotations") or {}) | {
                "volcano.sh/task-index": str(index),
                "volcano.sh/task-spec": task_name,
                GROUP_NAME: group,
                "volcano.sh/job-name": name,
                "volcano.sh/queue-name": queue,
                "volcano.sh/job-version": "0",
                "volcano.sh/template-uid": f"{name}-{task_name}",
                "volcano.sh/job-retry-count": "0",
            }
            pod_spec = copy.deepcopy(t_spec)
            if not pod_spec.get("schedulerName") and spec.get("schedulerName"):
                pod_spec["schedulerName"] = spec["schedulerName"]
            if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
                pod_spec["priorityClassName"] = spec["priorityClassName"]
            pod_meta = {
                "name": f"{name}-{task_name}-{index}",
                "namespace": ns,
                "labels": labels,
                "annotations": notes,
                "ownerReferences": [_owner(job)],
            }
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
    return podgroup, pods


def serving_group_objects(ms: Obj, i: int) -> tuple[Obj, list[Obj]]:
    """ServingGroup ``i`` of a ModelServing: its PodGroup and pods (the double's names and labels)."""
    meta, spec = ms["metadata"], ms.get("spec") or {}
    ns, name = meta.get("namespace", "default"), meta["name"]
    group = f"{name}-{i}"
    base_labels = dict(meta.get("labels") or {})
    pods = []
    for role in (spec.get("template") or {}).get("roles") or []:
        for k in range(int(role.get("replicas", 1))):
            entry = f"{name}-{i}-{role['name']}-{k}"
            members = [(entry, role.get("entryTemplate") or {})]
            workers = range(1, int(role.get("workerReplicas", 0)) + 1)
            members += [(f"{entry}-{w}", role.get("workerTemplate") or {}) for w in workers]
            for pod_name, template in members:
                pod_spec = copy.deepcopy(template.get("spec") or {})
                pod_spec.setdefault("schedulerName", spec.get("schedulerName", "volcano"))
                labels = base_labels | {
                    SERVING_GROUP: str(i),
                    "modelserving.volcano.sh/name": name,
                    "modelserving.volcano.sh/role": role["name"],
                }
                pod_meta = {
                    "name": pod_name,
                    "namespace": ns,
                    "labels": labels,
                    "annotations": {GROUP_NAME: group},
                    "ownerReferences": [_owner(ms)],
                }
                pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": group,
            "namespace": ns,
            "labels": base_labels | {SERVING_GROUP: str(i), GENERATION: "0"},
            "ownerReferences": [_owner(ms)],
        },
        "spec": {"minMember": len(pods), "queue": spec.get("queue", "default")},
    }
    return podgroup, pods


class Creation(Loop):
    """Creates the PodGroups and pods of new Volcano Jobs and ModelServings; keeps Job status."""

    name = "creation"

    def __init__(self, api: Api, *, jobs: bool = True, modelserving: bool = True, period: float = 0.05) -> None:
        super().__init__(period)
        self.api, self.store, self.jobs, self.modelserving = api, api.store, jobs, modelserving
        self._created: set[str] = set()  # ModelServing uids whose groups were created

    def _type(self, group: str, version: str, plural: str) -> ResourceType | None:
        try:
            return self.api.registry.lookup(group, version, plural)
        except ApiError:
            return None  # the CRD is not installed

    def run_once(self) -> int:
        done = 0
        if self.jobs and (jobs := self._type("batch.volcano.sh", "v1alpha1", "jobs")) is not None:
            listed = self.store.scan(JOB_KEY, None)[0]
            phases = self._pod_phases_by_owner() if listed else {}
            for job in listed:
                done += self._job(jobs, job, phases.get(job["metadata"].get("uid", ""), []))
        ms_type = self._type("workload.serving.volcano.sh", "v1alpha1", "modelservings")
        if self.modelserving and ms_type is not None:
            for ms in self.store.scan(MODELSERVING_KEY, None)[0]:
                done += self._serving(ms)
        return done

    def _create(self, obj: Obj) -> int:
        rt = self.api.registry.by_kind(obj["apiVersion"], obj["kind"])
        try:
            self.api.create(rt, obj["metadata"]["namespace"], obj)
            return 1
        except ApiError:  # taken already (a loaded cluster), or the namespace is gone
            return 0

    def _pod_phases_by_owner(self) -> dict[str, list[str]]:
        """Owner uid -> the phases of the pods it owns: one pod scan per cycle, however many Jobs."""
        out: dict[str, list[str]] = {}
        for pod in self.store.scan(POD_KEY, None)[0]:
            phase = (pod.get("status") or {}).get("phase", "Pending")
            for ref in pod["metadata"].get("ownerReferences") or []:
                out.setdefault(ref.get("uid", ""), []).append(phase)
        return out

    def _job(self, rt: ResourceType, job: Obj, phases: list[str]) -> int:
        if job["metadata"].get("deletionTimestamp"):
            return 0
        status: Obj = job.get("status") or {}
        done = 0
        if not (status.get("state") or {}).get("phase"):
            podgroup, pods = job_objects(job)
            done += self._create(podgroup) + sum(self._create(p) for p in pods)
        return done + self._job_status(rt, job, phases)

    def _job_status(self, rt: ResourceType, job: Obj, phases: list[str]) -> int:
        """``status.state.phase`` Pending until ``minAvailable`` of the Job's pods (``phases``) run,
        then Running."""
        meta = job["metadata"]
        ns = meta.get("namespace", "")
        running, pending = phases.count("Running"), phases.count("Pending")
        minimum = job_min_available(job.get("spec") or {})
        old: Obj = job.get("status") or {}
        was = (old.get("state") or {}).get("phase")
        # a Job that ran stays Running while its pods are rebuilt (Restarting is not modelled)
        phase = "Running" if (running >= minimum and running > 0) or was == "Running" else "Pending"
        want = {**old, "minAvailable": minimum, "running": running, "pending": pending}
        want["state"] = {**(old.get("state") or {}), "phase": phase}
        if want == old:
            return 0
        try:
            self.api.replace(rt, ns, meta["name"], {**job, "status": want}, "status")
            return 1
        except ApiError:  # changed meanwhile: the next cycle reads it again
            return 0

    def _serving(self, ms: Obj) -> int:
        uid = ms["metadata"].get("uid", "")
        if uid in self._created or ms["metadata"].get("deletionTimestamp"):
            return 0
        self._created.add(uid)
        ns = ms["metadata"].get("namespace", "")
        done = 0
        for i in range(int((ms.get("spec") or {}).get("replicas", 1))):
            podgroup, pods = serving_group_objects(ms, i)
            if self.store.find(PODGROUP_KEY, ns, podgroup["metadata"]["name"]) is not None:
                continue  # loaded with the cluster: the group exists
            done += self._create(podgroup) + sum(self._create(p) for p in pods)
        return done
