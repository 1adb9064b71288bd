"""What a request points at: an inline snapshot or an open session, and which task it asks about."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sidecar.api.v1alpha1 import service_pb2, snapshot_pb2
from sidecar.errors import InputError
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import Subject
from sidecar.service.deadline import Deadline
from sidecar.service.errors import NotFound
from sidecar.service.limits import ServiceLimits
from sidecar.service.observer import Observer
from sidecar.service.sessions import Session, SessionCache
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

SourceRequest = (
    service_pb2.EvaluateRequest
    | service_pb2.PlanRequest
    | service_pb2.FilterRequest
    | service_pb2.PrioritizeRequest
    | service_pb2.CheckPendingRequest
)
CheckRequest = service_pb2.FilterRequest | service_pb2.PrioritizeRequest


#: how often a call queued on a session's lock checks its deadline (the lock's release wakes it at once)
LOCK_POLL_SECONDS = 0.05


@contextlib.contextmanager
def holding(lock: threading.Lock, deadline: Deadline) -> Iterator[None]:
    """``lock`` held for the block, waited for between deadline checks: a call cancelled or out of
    time while it queues behind others on a session leaves the queue, and one whose turn comes too
    late stops before working for nobody (a Plan's first check comes only after its first step)."""
    while not lock.acquire(timeout=LOCK_POLL_SECONDS):
        deadline.check("waiting for the session")
    try:
        deadline.check("waiting for the session")
        yield
    finally:
        lock.release()


@dataclass(frozen=True)
class Resolved:
    """A request's mirror; a session's also brings its base simulation and the lock its calls share."""

    mirror: Mirror
    simulation: Simulation | None = None
    lock: threading.Lock | None = None

    def locked(self, deadline: Deadline) -> AbstractContextManager[object]:
        return holding(self.lock, deadline) if self.lock is not None else contextlib.nullcontext()


class Sources:
    """Decodes inline snapshots (within the limits, between deadline checks) and looks up sessions."""

    def __init__(self, limits: ServiceLimits, sessions: SessionCache, observer: Observer) -> None:
        self._limits = limits.decode_limits()
        self._sessions = sessions
        self._observer = observer

    def decode(self, snapshot: snapshot_pb2.Snapshot, deadline: Deadline) -> ClusterState:
        deadline.check("receiving the snapshot")
        start = time.perf_counter()
        state = decode(snapshot, self._limits)
        self._observer.snapshot_decoded(time.perf_counter() - start, state)
        self._observer.state_used(state)
        deadline.check("decoding the snapshot")
        return state

    def session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFound(f'session_id: no open session "{session_id}" (expired or closed)')
        self._observer.state_used(session.state)
        return session

    def state(self, request: SourceRequest, deadline: Deadline) -> ClusterState:
        source = request.WhichOneof("source")
        if source == "snapshot":
            return self.decode(request.snapshot, deadline)
        if source == "session_id":
            return self.session(request.session_id).state
        raise InputError("source", "set either snapshot or session_id")

    def mirror(self, request: SourceRequest, deadline: Deadline) -> Resolved:
        """The snapshot's mirror; a session builds its mirror and base simulation once and keeps them."""
        if request.WhichOneof("source") == "session_id":
            return self.session_mirror(request.session_id, deadline)
        return Resolved(Mirror(self.state(request, deadline)))

    def session_mirror(self, session_id: str, deadline: Deadline) -> Resolved:
        session = self.session(session_id)
        with holding(session.lock, deadline):
            if session.mirror is None:
                session.mirror = Mirror(session.state)
                session.simulation = Simulation(session.state)
        return Resolved(session.mirror, session.simulation, session.lock)


def subject(mirror: Mirror, request: CheckRequest) -> Subject:
    """The task a Filter/Prioritize asks about: one in the snapshot (by uid) or one described inline."""
    which = request.WhichOneof("subject")
    if which == "task_uid":
        return mirror.subject_for_uid(request.task_uid)
    if which == "task":
        return mirror.subject_from_message(request.task)
    raise InputError("subject", "set either task_uid or task")
