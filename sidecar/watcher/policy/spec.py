"""A RepackPolicy's spec, read and checked: every problem names its field, so the policy's ``Valid``
condition (and its event) can say exactly what to fix.

The CRD refuses most mistakes before they reach the watcher (types, enums, minimums, the run
template's schema, CEL: a schedule or a whenPending trigger). What a schema cannot say is checked
here: the cron expression and the time zone (as Kubernetes checks a CronJob's), and the template
as the planner validates a RepackRun's spec — with one rule of the policy's own: a whenPending
trigger sets the template's ``for`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from enum import StrEnum
from typing import TypeVar

from sidecar.api.v1alpha1 import policy_pb2, snapshot_pb2, spec_pb2
from sidecar.errors import InputError
from sidecar.kubeobj import Obj
from sidecar.mirror.selectors import LABEL_OPS
from sidecar.repack.spec import validate
from sidecar.snapshot.io import parse_dict
from sidecar.watcher.policy.schedule import Schedule, parse, time_zone

#: CronJob's defaults
DEFAULT_SUCCESSFUL_HISTORY, DEFAULT_FAILED_HISTORY = 3, 1
DEFAULT_RETRY_SECONDS = 1800
T = TypeVar("T")


class Invalid(StrEnum):
    """The ``Valid`` condition's reason when False."""

    SCHEDULE = "InvalidSchedule"
    TIME_ZONE = "InvalidTimeZone"
    TEMPLATE = "InvalidTemplate"
    SPEC = "InvalidSpec"


class Concurrency(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"


class PolicyError(Exception):
    """What is wrong (the ``Valid`` condition's reason) and where (``error.field``)."""

    def __init__(self, reason: Invalid, error: InputError) -> None:
        super().__init__(str(error))
        self.reason, self.error = reason, error


@dataclass(frozen=True)
class Pending:
    """``spec.whenPending``."""

    min_pending_seconds: int
    queues: frozenset[str]
    namespaces: frozenset[str]
    selector: snapshot_pb2.LabelSelector | None
    retry_seconds: int


@dataclass(frozen=True)
class PolicySpec:
    template: Obj  # runTemplate as the policy stores it (camelCase): copied into each run
    run: spec_pb2.RepackSpec  # its spec, parsed and validated
    schedule: Schedule | None
    zone: tzinfo
    starting_deadline: int | None
    pending: Pending | None
    concurrency: Concurrency
    suspend: bool
    successful_history: int
    failed_history: int


def read(policy: Obj) -> PolicySpec:
    """The policy's spec, or PolicyError naming the first field that is wrong."""
    doc = policy.get("spec") or {}
    try:
        spec = parse_dict(doc, policy_pb2.RepackPolicySpec(), source="spec")
    except InputError as exc:
        raise PolicyError(Invalid.SPEC, exc) from None
    zone = _check(Invalid.TIME_ZONE, lambda: time_zone(spec.time_zone if spec.HasField("time_zone") else None))
    schedule = None
    if spec.schedule:
        schedule = _check(Invalid.SCHEDULE, lambda: parse(spec.schedule, "spec.schedule", zone=zone))
    if schedule is None and not spec.HasField("when_pending"):
        raise PolicyError(Invalid.SPEC, InputError("spec", "needs a schedule, a whenPending trigger, or both"))
    concurrency = _concurrency(spec.concurrency_policy)
    pending = _pending(spec.when_pending) if spec.HasField("when_pending") else None
    run = _template(spec, pending is not None)
    limits = []
    for field, json, default in (
        ("successful_runs_history_limit", "successfulRunsHistoryLimit", DEFAULT_SUCCESSFUL_HISTORY),
        ("failed_runs_history_limit", "failedRunsHistoryLimit", DEFAULT_FAILED_HISTORY),
    ):
        value = getattr(spec, field) if spec.HasField(field) else default
        if value < 0:
            raise PolicyError(Invalid.SPEC, InputError(f"spec.{json}", f"must not be negative, got {value}"))
        limits.append(int(value))
    deadline = None
    if spec.HasField("starting_deadline_seconds"):
        deadline = int(spec.starting_deadline_seconds)
        if deadline < 0:
            raise PolicyError(
                Invalid.SPEC, InputError("spec.startingDeadlineSeconds", f"must not be negative, got {deadline}")
            )
    return PolicySpec(
        template=dict(doc.get("runTemplate") or {}),
        run=run,
        schedule=schedule,
        zone=zone,
        starting_deadline=deadline,
        pending=pending,
        concurrency=concurrency,
        suspend=spec.suspend,
        successful_history=limits[0],
        failed_history=limits[1],
    )


def _check(reason: Invalid, read: Callable[[], T]) -> T:
    try:
        return read()
    except InputError as exc:
        raise PolicyError(reason, exc) from None


def _concurrency(value: str) -> Concurrency:
    if value in ("", Concurrency.FORBID):
        return Concurrency.FORBID
    if value == Concurrency.ALLOW:
        return Concurrency.ALLOW
    why = (
        "Replace is not offered: deleting an Execute run under way would abandon its journal"
        if value == "Replace"
        else f'unknown policy "{value}"'
    )
    raise PolicyError(Invalid.SPEC, InputError("spec.concurrencyPolicy", f"{why} (Forbid or Allow)"))


def _pending(trigger: policy_pb2.PendingTrigger) -> Pending:
    path = "spec.whenPending"
    if trigger.min_pending_seconds < 0:
        raise PolicyError(Invalid.SPEC, InputError(f"{path}.minPendingSeconds", "must not be negative"))
    retry = trigger.retry_seconds if trigger.HasField("retry_seconds") else DEFAULT_RETRY_SECONDS
    if retry < 0:
        raise PolicyError(Invalid.SPEC, InputError(f"{path}.retrySeconds", "must not be negative"))
    selector = trigger.selector if trigger.HasField("selector") else None
    for j, req in enumerate(selector.match_expressions if selector is not None else ()):
        where = f"{path}.selector.matchExpressions[{j}]"
        if req.operator not in LABEL_OPS:
            raise PolicyError(Invalid.SPEC, InputError(f"{where}.operator", f'unknown operator "{req.operator}"'))
        if req.operator in ("In", "NotIn") and not req.values:
            raise PolicyError(Invalid.SPEC, InputError(f"{where}.values", f"{req.operator} needs at least one value"))
    return Pending(
        int(trigger.min_pending_seconds),
        frozenset(trigger.queues),
        frozenset(trigger.namespaces),
        selector,
        int(retry),
    )


def _template(spec: policy_pb2.RepackPolicySpec, pending: bool) -> spec_pb2.RepackSpec:
    path = "spec.runTemplate.spec"
    if not spec.run_template.HasField("spec"):
        raise PolicyError(Invalid.TEMPLATE, InputError(path, "missing"))
    run = spec.run_template.spec
    if pending and run.HasField("target"):
        raise PolicyError(Invalid.TEMPLATE, InputError(f"{path}.for", "set by the whenPending trigger: leave it out"))
    _check(Invalid.TEMPLATE, lambda: validate(run, path))
    return run
