"""What the watcher reports as it works: one-line calls from its logic modules, logged here with the
pod (and, through structlog's context, the run) and handed to the installed observer for metrics.

The logic stays free of any metrics library: ``install`` puts ``watcher.metrics``' Prometheus
observer in place when ``watch --metrics-port`` asks for it; the default does nothing but log.
"""

from __future__ import annotations

import structlog

from sidecar.api.repackrun import TERMINAL, Condition
from sidecar.kubeobj import Obj
from sidecar.watcher.kit.status import mode_of, phase_of

log = structlog.get_logger("sidecar.watcher")
#: reconciler classes → their label in metrics
KINDS = {"DryRunReconciler": "dryrun", "ExecuteReconciler": "execute", "TTLReconciler": "ttl",
         "PolicyReconciler": "policy"}  # fmt: skip


class WatcherObserver:
    """No-op by default."""

    def eviction(self, result: str) -> None:
        """An eviction ended: evicted, already_gone, blocked or failed."""

    def nomination(self, result: str) -> None:
        """A nominatedNodeName patch: nominated, or rejected (the pod changed or went away)."""

    def reconciled(self, kind: str, seconds: float) -> None:
        """One reconcile of one run by the ``kind`` reconciler (dryrun, execute, ttl) took ``seconds``."""

    def run_finished(self, mode: str, outcome: str) -> None:
        """A run this watcher drove reached a terminal phase; ``outcome`` is its final reason."""

    def leading(self, leader: bool) -> None:
        """This replica started or stopped leading."""

    def planned(self, source: str) -> None:
        """A run was planned on ``source``: the scheduler's session, or the informer cache."""

    def gate(self, action: str) -> None:
        """The placement gate was ``added`` to a pod at admission, or ``lifted`` by the leader."""

    def policy_run(self, policy: str, trigger: str) -> None:
        """A RepackPolicy created a run, for its ``trigger`` (schedule or pending)."""


_current = WatcherObserver()


def install(observer: WatcherObserver) -> WatcherObserver:
    """Make ``observer`` the one reports go to; returns the previous one (to put back)."""
    global _current
    previous, _current = _current, observer
    return previous


def current() -> WatcherObserver:
    return _current


def eviction(pod: str, uid: str, node: str, result: str, attempts: int, message: str) -> None:
    """The eviction of ``pod`` reached a final phase (``result``: evicted, already_gone, blocked or
    failed) and was journaled."""
    emit = log.info if result in ("evicted", "already_gone") else log.warning
    emit("pod eviction", pod=pod, pod_uid=uid, node=node, result=result, attempts=attempts, message=message)
    _current.eviction(result)


def nomination(pod: Obj, node: str, ok: bool) -> bool:
    """A nomination patch answered ``ok``; returns ``ok`` (so the caller's ``return`` stays one line)."""
    meta = pod.get("metadata") or {}
    result = "nominated" if ok else "rejected"
    log.info("pod nomination", pod=f"{meta.get('namespace')}/{meta.get('name')}", pod_uid=meta.get("uid"),
             node=node, result=result)  # fmt: skip
    _current.nomination(result)
    return ok


def outcome_of(run: Obj | None, phase: str) -> str:
    """The reason of the run's final condition (Failed, else Complete), or ``phase`` without one."""
    if run is None or phase_of(run) != phase:
        return phase
    conditions = (run.get("status") or {}).get("conditions") or []
    for kind in (Condition.FAILED, Condition.COMPLETE):
        for c in conditions:
            if c.get("type") == kind and c.get("reason") and (kind == Condition.COMPLETE or c.get("status") == "True"):
                return str(c["reason"])
    return phase


def reconciled(reconciler: object, run: Obj, phase: str | None, current: Obj | None, seconds: float) -> None:
    """``reconciler`` took ``run`` (as handed) to ``phase``; ``current`` is the run as cached now."""
    _current.reconciled(KINDS.get(type(reconciler).__name__, type(reconciler).__name__.lower()), seconds)
    if phase in TERMINAL and phase_of(run) not in TERMINAL:
        outcome, mode = outcome_of(current, phase), mode_of(run) or "unknown"
        log.info("repackrun finished", mode=mode, phase=phase, outcome=outcome, seconds=round(seconds, 3))
        _current.run_finished(mode, outcome)


def leading(leader: bool) -> None:
    _current.leading(leader)


def planned(source: str) -> None:
    _current.planned(source)


def gate(action: str, pod: str, run: str = "", why: str = "") -> None:
    """The placement gate ``added`` to ``pod`` (rebuilding a relocation of ``run``), or ``lifted``
    by the leader (``why``); the pass's own un-gating after a nomination is not reported here."""
    log.info(
        "placement gate", action=action, pod=pod, **({"repackrun": run} if run else {}), **({"why": why} if why else {})
    )
    _current.gate(action)


def policy_run(policy: str, trigger: str, run: str, why: str) -> None:
    """``policy`` created ``run`` for its ``trigger`` (Schedule or Pending)."""
    log.info("repackpolicy created a run", policy=policy, trigger=trigger, repackrun=run, why=why)
    _current.policy_run(policy, trigger.lower())
