"""The transport-free application service every front door calls (gRPC, CLI, extender, controller)."""

from __future__ import annotations

from sidecar.service.core import RepackService
from sidecar.service.deadline import Deadline, DeadlineExceeded
from sidecar.service.errors import NotFound
from sidecar.service.limits import ServiceLimits
from sidecar.service.observer import Observer
from sidecar.service.sessions import Session, SessionCache

__all__ = [
    "Deadline",
    "DeadlineExceeded",
    "NotFound",
    "Observer",
    "RepackService",
    "ServiceLimits",
    "Session",
    "SessionCache",
]
