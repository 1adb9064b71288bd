"""The Repack service: resolves the snapshot (inline or cached session) and calls the core.

Handlers are registered by hand rather than through the generated ``add_RepackServicer_to_server``
so that request bytes pass through our own deserializer: an oversize or undecodable request
becomes INVALID_ARGUMENT with a sentence, instead of gRPC's generic RESOURCE_EXHAUSTED/INTERNAL.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp

from sidecar.api.v1alpha1 import service_pb2
from sidecar.errors import InputError
from sidecar.mirror.core import Mirror, Verdict
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import FilterResult, Subject
from sidecar.repack import plan_status
from sidecar.repack.fragmentation import fragmentation, goal_resources
from sidecar.repack.status import fragmentation_message
from sidecar.server import metrics
from sidecar.server.config import ServerConfig
from sidecar.server.sessions import SessionCache
from sidecar.snapshot.decode import Limits, decode
from sidecar.snapshot.state import ClusterState

SERVICE_NAME = "volcano.repack.v1alpha1.Repack"
log = structlog.get_logger("sidecar.server")


@dataclass(frozen=True)
class Rejected:
    """A request that never became a message; the handler turns it into INVALID_ARGUMENT."""

    reason: str


class DeadlineExceeded(Exception):
    pass


class Deadline:
    """The caller's deadline, checked between the steps of long work running off the event loop."""

    def __init__(self, remaining: float | None) -> None:
        self._at = None if remaining is None else time.monotonic() + remaining

    def check(self, step: str) -> None:
        if self._at is not None and time.monotonic() > self._at:
            raise DeadlineExceeded(f"deadline exceeded after {step}")


class RepackService:
    def __init__(self, config: ServerConfig, sessions: SessionCache) -> None:
        self._config = config
        self._sessions = sessions
        self._limits = Limits(max_nodes=config.max_nodes, max_tasks=config.max_tasks)

    # -- snapshot resolution -------------------------------------------------------------

    def _decode(self, snapshot: Any, deadline: Deadline) -> ClusterState:
        deadline.check("receiving the snapshot")
        start = time.perf_counter()
        state = decode(snapshot, self._limits)
        metrics.DECODE_SECONDS.observe(time.perf_counter() - start)
        metrics.SNAPSHOT_NODES.set(state.n_nodes)
        metrics.SNAPSHOT_TASKS.set(state.n_tasks)
        deadline.check("decoding the snapshot")
        return state

    def _state(self, request: Any, deadline: Deadline) -> ClusterState:
        source = request.WhichOneof("source")
        if source == "snapshot":
            return self._decode(request.snapshot, deadline)
        if source == "session_id":
            session = self._sessions.get(request.session_id)
            if session is None:
                raise _NotFound(f'session_id: no open session "{request.session_id}" (expired or closed)')
            return session.state
        raise InputError("source", "set either snapshot or session_id")

    # -- RPCs (run in worker threads) ----------------------------------------------------

    def evaluate(self, request: service_pb2.EvaluateRequest, deadline: Deadline) -> service_pb2.EvaluateResponse:
        state = self._state(request, deadline)
        names = list(request.resources)
        for i, name in enumerate(names):
            if not name:
                raise InputError(f"resources[{i}]", "empty resource name")
            if name not in goal_resources(state):
                raise InputError(f"resources[{i}]", f'no node provides scalar resource "{name}"')
        out = service_pb2.EvaluateResponse()
        for name in names or goal_resources(state):
            out.resources.append(fragmentation_message(fragmentation(state, name)))
            deadline.check(f"evaluating {name}")
        return out

    def _mirror(self, request: Any, deadline: Deadline) -> tuple[Mirror, Simulation | None, threading.Lock | None]:
        """The snapshot's mirror; a session keeps its mirror and base simulation between calls."""
        if request.WhichOneof("source") == "session_id":
            session = self._sessions.get(request.session_id)
            if session is None:
                raise _NotFound(f'session_id: no open session "{request.session_id}" (expired or closed)')
            with session.lock:
                if session.mirror is None:
                    session.mirror = Mirror(session.state)
                    session.simulation = Simulation(session.state)
            return session.mirror, session.simulation, session.lock
        return Mirror(self._state(request, deadline)), None, None

    def _subject(self, mirror: Mirror, request: Any) -> Subject:
        which = request.WhichOneof("subject")
        if which == "task_uid":
            return mirror.subject_for_uid(request.task_uid)
        if which == "task":
            return mirror.subject_from_message(request.task)
        raise InputError("subject", "set either task_uid or task")

    def _verdict(self, request: Any, deadline: Deadline, score: bool) -> tuple[Mirror, Verdict, int]:
        mirror, sim, lock = self._mirror(request, deadline)
        subject = self._subject(mirror, request)
        nodes = mirror.node_indices(list(request.nodes))
        deadline.check("preparing the check")
        with lock or contextlib.nullcontext():
            verdict = mirror.prioritize(subject, nodes, sim) if score else Verdict(mirror.filter(subject, nodes, sim))
        wanted = mirror.state.n_nodes if nodes is None else len(nodes)
        return mirror, verdict, wanted

    def filter(self, request: service_pb2.FilterRequest, deadline: Deadline) -> service_pb2.FilterResponse:
        mirror, verdict, wanted = self._verdict(request, deadline, score=False)
        result = verdict.filter
        out = service_pb2.FilterResponse(
            feasible_nodes=mirror.names(result.feasible),
            future_idle_only_nodes=mirror.names(result.feasible & ~result.fits_idle),
            message=fit_message(result, wanted),
        )
        for reasons, members in result.groups:
            out.failures.add(reasons=reasons, nodes=mirror.names(members))
        return out

    def prioritize(self, request: service_pb2.PrioritizeRequest, deadline: Deadline) -> service_pb2.PrioritizeResponse:
        mirror, verdict, _ = self._verdict(request, deadline, score=True)
        names = mirror.state.node_names
        out = service_pb2.PrioritizeResponse()
        scores = verdict.scores
        assert scores is not None
        for i in scores.ranked(names):
            entry = out.scores.add(node=names[scores.nodes[i]], score=float(scores.total[i]))
            for plugin, values in scores.plugins.items():
                entry.plugins[plugin] = float(values[i])
        for reasons, members in verdict.filter.groups:
            out.failures.add(reasons=reasons, nodes=mirror.names(members))
        return out

    def plan(self, request: service_pb2.PlanRequest, deadline: Deadline) -> service_pb2.PlanResponse:
        if not request.HasField("spec"):
            raise InputError("spec", "missing")
        mirror, _, lock = self._mirror(request, deadline)
        with lock or contextlib.nullcontext():
            status = plan_status(mirror.state, request.spec, mirror=mirror, deadline=deadline)
        return service_pb2.PlanResponse(status=status)

    def open_session(
        self, request: service_pb2.OpenSessionRequest, deadline: Deadline
    ) -> service_pb2.OpenSessionResponse:
        if not request.HasField("snapshot"):
            raise InputError("snapshot", "missing")
        if request.ttl_seconds < 0:
            raise InputError("ttl_seconds", f"negative value {request.ttl_seconds}")
        state = self._decode(request.snapshot, deadline)
        session = self._sessions.open(state, float(request.ttl_seconds))
        metrics.SESSIONS.set(len(self._sessions))
        expires = Timestamp()
        expires.FromNanoseconds(int(session.expires_at * 1e9))
        return service_pb2.OpenSessionResponse(
            session_id=session.id, expires_at=expires, node_count=state.n_nodes, task_count=state.n_tasks
        )

    def close_session(
        self, request: service_pb2.CloseSessionRequest, deadline: Deadline
    ) -> service_pb2.CloseSessionResponse:
        if not request.session_id:
            raise InputError("session_id", "missing")
        closed = self._sessions.close(request.session_id)
        metrics.SESSIONS.set(len(self._sessions))
        return service_pb2.CloseSessionResponse(closed=closed)


def fit_message(result: FilterResult, wanted: int) -> str:
    """Volcano's FitErrors histogram: "3/5 nodes are unavailable: 1 Insufficient cpu, 2 ...".

    Empty when every requested node is feasible.
    """
    counts: dict[str, int] = {}
    failed = 0
    for reasons, members in result.groups:
        failed += len(members)
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + len(members)
    if not failed:
        return ""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"{failed}/{wanted} nodes are unavailable: {', '.join(parts)}."


class _NotFound(Exception):
    pass


def _deserializer(cls: type[Message], max_bytes: int) -> Callable[[bytes], Message | Rejected]:
    def parse(data: bytes) -> Message | Rejected:
        if len(data) > max_bytes:
            return Rejected(
                f"request is {len(data) / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit "
                "(--max-message-mib)"
            )
        try:
            return cls.FromString(data)
        except DecodeError as exc:
            return Rejected(f"request is not a valid {cls.DESCRIPTOR.full_name}: {exc}")

    return parse


Work = Callable[[Any, Deadline], Message]


def _rpc(config: ServerConfig, work: Work) -> Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Message]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if isinstance(request, Rejected):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)
        deadline = Deadline(context.time_remaining())
        try:
            return await asyncio.to_thread(work, request, deadline)
        except InputError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except _NotFound as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except DeadlineExceeded as exc:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        except Exception:
            log.exception("rpc_failed")
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the sidecar log")
        raise AssertionError("unreachable: context.abort raises")

    return handle


def generic_handler(service: RepackService, config: ServerConfig) -> grpc.GenericRpcHandler:  # type: ignore[type-arg]
    methods: dict[str, tuple[type[Message], Work]] = {
        "Evaluate": (service_pb2.EvaluateRequest, service.evaluate),
        "Plan": (service_pb2.PlanRequest, service.plan),
        "Filter": (service_pb2.FilterRequest, service.filter),
        "Prioritize": (service_pb2.PrioritizeRequest, service.prioritize),
        "OpenSession": (service_pb2.OpenSessionRequest, service.open_session),
        "CloseSession": (service_pb2.CloseSessionRequest, service.close_session),
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _rpc(config, work),
            request_deserializer=_deserializer(req, config.max_message_bytes),
            response_serializer=lambda m: m.SerializeToString(),
        )
        for name, (req, work) in methods.items()
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)
