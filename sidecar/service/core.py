"""The Repack application service: one code path behind gRPC, the CLI and every later front door.

It takes and returns the contract's messages (``service_pb2``) and knows nothing of transports:
callers map ``InputError``, ``NotFound`` and ``DeadlineExceeded`` to their own answers. Calls may
run for seconds; async front doors run them in a worker thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from sidecar import heap
from sidecar.api.sessions import LATEST
from sidecar.api.v1alpha1 import service_pb2, snapshot_pb2, spec_pb2
from sidecar.errors import InputError
from sidecar.mirror.core import Mirror, Verdict
from sidecar.mirror.explain import failure_code, fit_message
from sidecar.repack import pending
from sidecar.repack.fragmentation import fragmentation, goal_resources
from sidecar.repack.planner import Planner
from sidecar.repack.spec import require_provided_goal, validate
from sidecar.repack.status import fragmentation_message, to_status
from sidecar.service.deadline import Deadline
from sidecar.service.limits import ServiceLimits, snapshot_cost, state_cost
from sidecar.service.observer import Observer
from sidecar.service.sessions import Session, SessionCache
from sidecar.service.sources import CheckRequest, SourceRequest, Sources, subject
from sidecar.service.supplement import merged
from sidecar.snapshot.taskstatus import TERMINATED_MASK
from sidecar.snapshot.units import is_goal_resource
from sidecar.snapshot.validation import validate_pdbs


@dataclass(frozen=True)
class _Published:
    """A published session's snapshot as it came (before any supplement), to merge again."""

    snapshot: snapshot_pb2.Snapshot
    ttl: float


class RepackService:
    """Evaluate, Plan, Filter, Prioritize and the session lifecycle, on contract messages."""

    def __init__(
        self,
        limits: ServiceLimits | None = None,
        *,
        sessions: SessionCache | None = None,
        observer: Observer | None = None,
    ) -> None:
        limits = limits or ServiceLimits()
        self._sessions = sessions or SessionCache(limits.max_sessions, limits.session_ttl_seconds)
        self._observer = observer or Observer()
        self._sources = Sources(limits, self._sessions, self._observer)
        #: publish and supplement, one at a time: a re-publish never overwrites a newer session.
        #: Lock order: the memory budget (``_admit``) first, then this.
        self._publishing = threading.Lock()
        self._supplement = snapshot_pb2.Snapshot()
        self._published: dict[str, _Published] = {}
        #: admission by estimated working memory (None: unbounded, as offline)
        self._budget = limits.budget()

    def _admit(self, cost: int | None, deadline: Deadline) -> AbstractContextManager[None]:
        """Hold ``cost`` bytes of the memory budget for a block; waits (within the deadline) or
        raises ``Overloaded``. None: work on a decoded session that allocates little."""
        if self._budget is None or cost is None:
            return contextlib.nullcontext()
        return self._budget.admit(cost, lambda: deadline.check("waiting for the memory budget"))

    @staticmethod
    def _inline_cost(request: SourceRequest) -> int | None:
        return snapshot_cost(request.snapshot) if request.WhichOneof("source") == "snapshot" else None

    def evaluate(self, request: service_pb2.EvaluateRequest, deadline: Deadline) -> service_pb2.EvaluateResponse:
        with self._admit(self._inline_cost(request), deadline):
            return self._evaluate(request, deadline)

    def _evaluate(self, request: service_pb2.EvaluateRequest, deadline: Deadline) -> service_pb2.EvaluateResponse:
        state = self._sources.state(request, deadline)
        names = list(request.resources)
        goals = goal_resources(state)
        for i, name in enumerate(names):
            if not name:
                raise InputError(f"resources[{i}]", "empty resource name")
            if not is_goal_resource(name):
                raise InputError(f"resources[{i}]", f'"{name}" is not an extended resource (GPUs, NPUs, ...)')
            if name in names[:i]:  # each would be evaluated again: a small request, unbounded work
                raise InputError(
                    f"resources[{i}]", f'duplicate resource "{name}" (first at resources[{names.index(name)}])'
                )
        out = service_pb2.EvaluateResponse(warnings=state.warnings)
        for name in names or goals:
            answer = fragmentation_message(fragmentation(state, name))
            if name not in goals:  # a pool scaled to zero: an answer, so a dashboard polling many goes on
                answer.message = f'no node provides "{name}": nothing to fragment'
            out.resources.append(answer)
            deadline.check(f"evaluating {name}")
        return out

    def plan(self, request: service_pb2.PlanRequest, deadline: Deadline) -> service_pb2.PlanResponse:
        """The spec is validated first, so a bad spec costs nothing however large the snapshot."""
        if not request.HasField("spec"):
            raise InputError("spec", "missing")
        run = validate(request.spec)
        cost = self._inline_cost(request)
        if cost is None:  # a session: the planner's working copies of its state
            session = self._sessions.get(request.session_id)
            cost = state_cost(session.state) if session is not None else None
        with self._admit(cost, deadline), heap.collection_paused():  # the Mirror and the status too
            resolved = self._sources.mirror(request, deadline)
            with resolved.locked(deadline):
                started = time.perf_counter()
                result = Planner(resolved.mirror, run).plan(deadline.check, deadline.remaining)
                status = to_status(resolved.mirror.state, result, run)
        self._observer.planned(time.perf_counter() - started, status)
        return service_pb2.PlanResponse(status=status)

    def check_pending(
        self, request: service_pb2.CheckPendingRequest, deadline: Deadline
    ) -> service_pb2.CheckPendingResponse:
        """Why each PodGroup waits (a policy's whenPending check: ``sidecar.repack.pending``)."""
        if not request.HasField("spec"):
            raise InputError("spec", "missing")
        spec = spec_pb2.RepackSpec()
        spec.CopyFrom(request.spec)
        spec.ClearField("target")  # each PodGroup is the target in turn
        run = validate(spec)
        for i, key in enumerate(request.pod_groups):
            namespace, sep, name = key.partition("/")
            if not (namespace and sep and name) or "/" in name:
                raise InputError(f"pod_groups[{i}]", f'"{key}": PodGroups are named namespace/name')
        if request.max_plans < 0:
            raise InputError("max_plans", f"must not be negative, got {request.max_plans}")
        cost = self._inline_cost(request)
        with self._admit(cost, deadline), heap.collection_paused():
            resolved = self._sources.mirror(request, deadline)
            with resolved.locked(deadline):
                require_provided_goal(run, resolved.mirror.state)
                found = pending.check(resolved.mirror, run, list(request.pod_groups), request.max_plans, deadline.check)
        out = service_pb2.CheckPendingResponse(warnings=resolved.mirror.state.warnings)
        for w in found:
            out.verdicts.add(pod_group=w.pod_group, verdict=w.verdict, message=w.message)
        return out

    def filter(self, request: service_pb2.FilterRequest, deadline: Deadline) -> service_pb2.FilterResponse:
        mirror, verdict, wanted = self._verdict(request, deadline, score=False)
        result = verdict.filter
        out = service_pb2.FilterResponse(
            feasible_nodes=mirror.names(result.feasible),
            future_idle_only_nodes=mirror.names(result.feasible & ~result.fits_idle),
            message=fit_message(result, wanted),
            warnings=mirror.state.warnings,
        )
        for reasons, members in result.groups:
            out.failures.add(reasons=reasons, nodes=mirror.names(members), code=failure_code(reasons))
        return out

    def prioritize(self, request: service_pb2.PrioritizeRequest, deadline: Deadline) -> service_pb2.PrioritizeResponse:
        mirror, verdict, _ = self._verdict(request, deadline, score=True)
        names = mirror.state.node_names
        out = service_pb2.PrioritizeResponse(warnings=mirror.state.warnings)
        scores = verdict.scores
        assert scores is not None
        for i in scores.ranked(names):
            entry = out.scores.add(node=names[scores.nodes[i]], score=float(scores.total[i]))
            for plugin, values in scores.plugins.items():
                entry.plugins[plugin] = float(values[i])
        for reasons, members in verdict.filter.groups:
            out.failures.add(reasons=reasons, nodes=mirror.names(members), code=failure_code(reasons))
        return out

    def open_session(
        self, request: service_pb2.OpenSessionRequest, deadline: Deadline
    ) -> service_pb2.OpenSessionResponse:
        if not request.HasField("snapshot"):
            raise InputError("snapshot", "missing")
        if request.ttl_seconds < 0:
            raise InputError("ttl_seconds", f"negative value {request.ttl_seconds}")
        if request.publish_as not in ("", LATEST):
            raise InputError("publish_as", f'{request.publish_as!r}: only "" (a new session) or "{LATEST}"')
        if request.publish_as:
            session = self.publish(request.publish_as, request.snapshot, deadline, float(request.ttl_seconds))
        else:
            with self._admit(snapshot_cost(request.snapshot), deadline):
                state = self._sources.decode(request.snapshot, deadline)
            session = self._sessions.open(state, float(request.ttl_seconds))
            self._observer.sessions_changed(len(self._sessions))
        expires = Timestamp()
        expires.FromNanoseconds(int(session.expires_at * 1e9))
        return service_pb2.OpenSessionResponse(
            session_id=session.id,
            expires_at=expires,
            node_count=session.state.n_nodes,
            task_count=session.state.n_tasks,
            warnings=session.state.warnings,
        )

    def pipeline(self, request: service_pb2.PipelineRequest, deadline: Deadline) -> service_pb2.PipelineResponse:
        """Statement.Pipeline in an open session: the pending task is counted on the node from now on."""
        if not request.session_id:
            raise InputError("session_id", "missing")
        resolved = self._sources.session_mirror(request.session_id, deadline)
        mirror, sim = resolved.mirror, resolved.simulation
        assert sim is not None
        task = mirror.task_index(request.task_uid)
        try:
            node = mirror.state.node(request.node)
        except KeyError:
            raise InputError("node", f'unknown node "{request.node}"' if request.node else "missing") from None
        deadline.check("recording the pipelined task")
        with resolved.locked(deadline):
            where = int(sim.node_of[task])
            if where >= 0 and not int(sim.status[task]) & TERMINATED_MASK:
                on = mirror.state.node_names[where]
                raise InputError("task_uid", f'task "{request.task_uid}" is already on node {on}')
            sim.pipeline(task, node)
        return service_pb2.PipelineResponse()

    def publish(self, name: str, snapshot: snapshot_pb2.Snapshot, deadline: Deadline, ttl: float = 0.0) -> Session:
        """Decode ``snapshot`` and make it the session called ``name`` (replacing any), for front
        doors that receive sessions pushed to them (the extender intake publishes ``latest``).
        Namespaces and PDBs it lacks come from the last supplement (its own win)."""
        if not name:
            raise InputError("session_id", "missing")
        with self._admit(snapshot_cost(snapshot), deadline), self._publishing:
            state = self._sources.decode(merged(snapshot, self._supplement), deadline)
            session = self._sessions.publish(name, state, ttl)
            self._published[name] = _Published(snapshot, ttl)
        self._observer.sessions_changed(len(self._sessions))
        return session

    def supplement(self, request: service_pb2.SupplementRequest, deadline: Deadline) -> service_pb2.SupplementResponse:
        """Keep ``request``'s namespaces and PDBs (replacing the last supplement) for sessions
        published from now on, and re-publish ``latest`` merged with them (same id, same age)."""
        supplement = snapshot_pb2.Snapshot(namespaces=request.namespaces, pdbs=request.pdbs)
        for i, ns in enumerate(supplement.namespaces):
            if not ns.name:
                raise InputError(f"namespaces[{i}].name", "missing")
        validate_pdbs(supplement.pdbs)  # refused now, not at every later publish of ``latest``
        while True:
            # The memory budget is taken before ``_publishing``, as ``publish`` takes them: in the
            # other order each would hold what the other waits for. So the cost is that of the
            # ``latest`` seen before the lock; if a publish replaced it meanwhile, admit again.
            with self._publishing:
                seen = self._published.get(LATEST)
            with self._admit(None if seen is None else snapshot_cost(seen.snapshot), deadline), self._publishing:
                current, published = self._sessions.get(LATEST), self._published.get(LATEST)
                if published is not seen:
                    continue
                updated = current is not None and published is not None
                if current is not None and published is not None:
                    # decoded before it is kept: a supplement the decoder rejects changes nothing
                    state = self._sources.decode(merged(published.snapshot, supplement), deadline)
                    self._sessions.publish(LATEST, state, published.ttl, opened_at=current.opened_at)
                else:
                    self._published.pop(LATEST, None)
                self._supplement = supplement
                break
        return service_pb2.SupplementResponse(
            namespace_count=len(supplement.namespaces), pdb_count=len(supplement.pdbs), latest_updated=updated
        )

    def memory_budget(self) -> tuple[int, int]:
        """(bytes held by admitted requests, the budget); (0, 0) without a budget."""
        return (0, 0) if self._budget is None else (self._budget.used, self._budget.total)

    def sweep_sessions(self) -> int:
        """Drop expired sessions (and the snapshot kept to re-publish them), so their memory goes
        back without waiting for the next session call; returns how many went."""
        gone = self._sessions.sweep()
        with self._publishing:
            for name in [name for name in self._published if self._sessions.get(name) is None]:
                del self._published[name]
        if gone:
            self._observer.sessions_changed(len(self._sessions))
        return gone

    def session(self, name: str) -> Session | None:
        """The open session called ``name`` (with its ``opened_at``), or None."""
        return self._sessions.get(name)

    def session_age(self, name: str = LATEST) -> float | None:
        """Seconds since the session ``name`` was published or opened, or None while there is none."""
        session = self._sessions.get(name)
        return None if session is None else max(0.0, time.time() - session.opened_at)

    def close_session(
        self, request: service_pb2.CloseSessionRequest, deadline: Deadline
    ) -> service_pb2.CloseSessionResponse:
        if not request.session_id:
            raise InputError("session_id", "missing")
        closed = self._sessions.close(request.session_id)
        self._observer.sessions_changed(len(self._sessions))
        return service_pb2.CloseSessionResponse(closed=closed)

    def _verdict(self, request: CheckRequest, deadline: Deadline, score: bool) -> tuple[Mirror, Verdict, int]:
        """Filter (or Filter then score) the request's task over its nodes; ``wanted`` counts those nodes."""
        with self._admit(self._inline_cost(request), deadline):
            return self._checked(request, deadline, score)

    def _checked(self, request: CheckRequest, deadline: Deadline, score: bool) -> tuple[Mirror, Verdict, int]:
        resolved = self._sources.mirror(request, deadline)
        mirror, sim = resolved.mirror, resolved.simulation
        task = subject(mirror, request)
        nodes = mirror.node_indices(list(request.nodes))
        deadline.check("preparing the check")
        with resolved.locked(deadline):
            verdict = mirror.prioritize(task, nodes, sim) if score else Verdict(mirror.filter(task, nodes, sim))
        wanted = mirror.state.n_nodes if nodes is None else len(nodes)
        return mirror, verdict, wanted
