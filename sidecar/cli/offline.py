"""The RPCs' own code path without a server: what ``evaluate``, ``plan`` and ``demo --offline`` run."""

from __future__ import annotations

from typing import Any

from sidecar.api.v1alpha1 import plan_pb2, service_pb2
from sidecar.service import Deadline, RepackService


def evaluate_offline(request: service_pb2.EvaluateRequest) -> service_pb2.EvaluateResponse:
    return RepackService().evaluate(request, Deadline.none())


def plan_offline(snapshot: Any, spec: Any) -> plan_pb2.RepackStatus:
    return RepackService().plan(service_pb2.PlanRequest(snapshot=snapshot, spec=spec), Deadline.none()).status
