"""DryRun: plan a RepackRun on the cluster as it is and write the plan to its status; nothing moves.

The run's status is the journal: every step is a status write through the status subresource
carrying the object's resourceVersion, so two writers can never silently overwrite each other —
a 409 re-reads the run, stops if someone else finished it, and reapplies only this step's fields.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import grpc
import structlog
from google.protobuf import json_format
from kubernetes import client
from kubernetes.client import ApiException

from sidecar.api.v1alpha1 import service_pb2, spec_pb2
from sidecar.errors import InputError
from sidecar.service import Deadline, DeadlineExceeded, RepackService
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.cluster import read_cluster

Obj = dict[str, Any]
GROUP, VERSION, PLURAL, KIND = "repack.volcano.sh", "v1alpha1", "repackruns", "RepackRun"
TERMINAL = ("Succeeded", "Failed")
COMPONENT = "repack-watcher"
#: where Events about cluster-scoped objects go (as kubectl and the controllers do)
EVENT_NAMESPACE = "default"

log = structlog.get_logger("sidecar.watcher")


class Planner(Protocol):
    """What the watcher needs of the sidecar: ``RepackClient`` satisfies it over gRPC."""

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse: ...


class InProcessPlanner:
    """The service in this process (no sidecar), with the deadline a gRPC call would carry."""

    def __init__(self, service: RepackService | None = None, *, timeout: float = 30.0) -> None:
        self._service = service or RepackService()
        self._timeout = timeout

    def plan(self, request: service_pb2.PlanRequest) -> service_pb2.PlanResponse:
        return self._service.plan(request, Deadline(self._timeout))


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def phase_of(run: Obj) -> str:
    return str((run.get("status") or {}).get("phase") or "")


def wants(run: Obj) -> bool:
    """A DryRun not yet finished (a Running one is resumed: planning again is harmless)."""
    return (run.get("spec") or {}).get("mode") == "DryRun" and phase_of(run) not in TERMINAL


def from_rpc(exc: grpc.RpcError) -> InputError | None:
    """The sidecar answers an InputError as INVALID_ARGUMENT "field: problem"; recover the field."""
    if not isinstance(exc, grpc.Call) or exc.code() != grpc.StatusCode.INVALID_ARGUMENT:
        return None
    field, _, problem = (exc.details() or "").partition(": ")
    return InputError(field, problem) if problem else InputError("spec", field)


def failed(reason: str, message: str) -> Obj:
    return {
        "phase": "Failed",
        "conditions": [{"type": "Failed", "status": "True", "reason": reason, "message": message}],
    }


class DryRunReconciler:
    """Pending → Running → Succeeded/Failed for one run, each step a resourceVersion-checked write."""

    def __init__(
        self, api: client.ApiClient, planner: Planner, *, retries: int = 5, clock: Callable[[], str] = now
    ) -> None:
        self._api = api
        self._custom = client.CustomObjectsApi(api)
        self._core = client.CoreV1Api(api)
        self._planner = planner
        self._retries = retries
        self._clock = clock

    def reconcile(self, run: Obj) -> str | None:
        """Drive ``run`` to a terminal phase; returns that phase, or None when the run is not ours
        (not a DryRun, already finished, or finished by another writer meanwhile)."""
        if not wants(run):
            return None
        current: Obj | None = run
        if not phase_of(run):
            current = self._write(run, {"phase": "Pending"})
        if current is not None and phase_of(current) == "Pending":
            current = self._write(current, {"phase": "Running"})
        if current is None:
            return None
        final = self._write(current, self._plan(current))
        if final is None:
            return None
        self._event(final)
        return str(final["status"]["phase"])

    def _plan(self, run: Obj) -> Obj:
        """The status fields of the finished run: the service's RepackStatus as the CRD's JSON."""
        try:
            spec = parse_dict(run.get("spec") or {}, spec_pb2.RepackSpec(), source="spec")
            snapshot = read_cluster(self._api, name=run["metadata"]["name"])
            response = self._planner.plan(service_pb2.PlanRequest(snapshot=snapshot, spec=spec))
        except InputError as exc:
            return failed("InvalidSpec", str(exc))
        except grpc.RpcError as exc:
            bad = from_rpc(exc)
            if bad is not None:
                return failed("InvalidSpec", str(bad))
            return failed("PlannerUnavailable", f"the sidecar did not plan: {exc}")
        except DeadlineExceeded as exc:
            return failed("PlannerUnavailable", f"planning timed out: {exc}")
        return dict(json_format.MessageToDict(response.status, always_print_fields_with_no_presence=True))

    def _write(self, run: Obj, fields: Obj) -> Obj | None:
        """Merge ``fields`` into the status and PUT it with the run's resourceVersion; on 409 re-read
        and retry. None when the re-read run is no longer ours to write (finished, deleted)."""
        for _ in range(self._retries):
            status = {**(run.get("status") or {}), **fields}
            status["observedGeneration"] = run["metadata"].get("generation", 1)
            conditions: list[Obj] = status.get("conditions") or []
            for condition in conditions:
                condition.setdefault("lastTransitionTime", self._clock())
            body = {**run, "status": status}
            name = run["metadata"]["name"]
            try:
                written = cast(
                    Obj, self._custom.replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, name, body)
                )
                log.info("repackrun status", run=name, phase=status.get("phase"))
                return written
            except ApiException as exc:
                if exc.status == 404:
                    return None
                if exc.status != 409:
                    raise
                log.info("repackrun conflict, re-reading", run=name)
            run = cast(Obj, self._custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name))
            if not wants(run):
                return None
        raise RuntimeError(f"RepackRun {run['metadata']['name']}: status still conflicting after {self._retries} tries")

    def _event(self, run: Obj) -> None:
        """A Kubernetes Event naming the outcome; best effort, the status already tells it."""
        status = run["status"]
        condition: Obj = next(iter(status.get("conditions") or []), {})
        meta = run["metadata"]
        stamp = self._clock()
        body = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": condition.get("reason", status["phase"]),
            "message": condition.get("message", ""),
            "type": "Normal" if status["phase"] == "Succeeded" else "Warning",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self._core.create_namespaced_event(EVENT_NAMESPACE, cast(Any, body))  # the client sends dicts as given
        except ApiException as exc:
            log.warning("repackrun event not recorded", run=meta["name"], status=exc.status)
