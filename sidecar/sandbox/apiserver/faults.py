"""Fault injection and the audit log, so tests can make the server misbehave and prove which calls happened.

Rules match ``(verb, resource[, subresource])`` with the Kubernetes verbs (get, list, watch, create,
update, patch, delete, deletecollection); ``"*"`` matches any.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sidecar.errors import InputError
from sidecar.sandbox.apiserver.apierrors import ApiError
from sidecar.sandbox.apiserver.store import Store

MESSAGES = {
    409: "injected conflict: the object has been modified; please apply your changes to the latest version",
    429: "injected: too many requests, please try again later",
    500: "injected internal error",
    503: "injected: the server is currently unable to handle the request",
}


@dataclass
class _Rule:
    verb: str
    resource: str
    subresource: str | None
    code: int
    times: int
    message: str

    def matches(self, verb: str, resource: str, subresource: str) -> bool:
        return (
            self.verb in ("*", verb)
            and self.resource in ("*", resource)
            and (self.subresource is None or self.subresource == subresource)
        )


@dataclass(frozen=True)
class AuditRecord:
    """One request as served: who asked for what, and the code it got."""

    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user_agent: str
    code: int
    path: str


class Faults:
    """Failures answered N times, added latency, dropped watches and forced resourceVersion expiry."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._delays: list[tuple[str, str, float]] = []

    def fail(
        self, verb: str, resource: str, code: int, times: int = 1, subresource: str | None = None, message: str = ""
    ) -> None:
        """The next ``times`` matching requests answer ``code`` (409, 429, 500 or 503) with a Status body."""
        with self._lock:
            self._rules.append(
                _Rule(verb, resource, subresource, code, times, message or MESSAGES.get(code, "injected"))
            )

    def delay(self, seconds: float, verb: str = "*", resource: str = "*") -> None:
        with self._lock:
            self._delays.append((verb, resource, seconds))

    def drop_watches(self) -> int:
        """Cut every open watch stream now (as a load balancer or restart would); returns how many."""
        return self._store.drop_watches()

    def expire(self) -> int:
        """Compact now: watches and continue tokens from older resourceVersions get 410 Gone."""
        return self._store.compact()

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._delays.clear()

    def pending(self) -> int:
        with self._lock:
            return sum(r.times for r in self._rules)

    def check(self, verb: str, resource: str, subresource: str) -> None:
        """Called before each request: sleep any matching latency, then raise a matching failure."""
        with self._lock:
            pause = sum(s for v, r, s in self._delays if v in ("*", verb) and r in ("*", resource))
            rule = next((r for r in self._rules if r.matches(verb, resource, subresource)), None)
            if rule is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._rules.remove(rule)
        if pause:
            time.sleep(pause)
        if rule is not None:
            raise ApiError(rule.code, rule.message)


VERBS = frozenset({"*", "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"})
_RULE_KEYS = {"verb", "resource", "subresource", "code", "times", "message"}
_DELAY_KEYS = {"verb", "resource", "seconds"}


def load_faults(faults: Faults, data: object, source: str = "faults") -> int:
    """Install the rules of a faults file (``sandbox serve --faults FILE``); returns how many.

    ``{"failures": [{verb, resource, subresource?, code, times?, message?}], "delays": [{verb?,
    resource?, seconds}]}``: every field checked first, errors naming it, so a bad file installs
    nothing."""
    if not isinstance(data, dict):
        raise InputError(source, "must be a mapping with failures and/or delays")
    unknown = sorted(set(data) - {"failures", "delays"})
    if unknown:
        raise InputError(f"{source}.{unknown[0]}", "unknown field (expected failures, delays)")
    failures, delays = data.get("failures") or [], data.get("delays") or []
    rules: list[tuple[str, str, int, int, str | None, str]] = []
    for i, rule in enumerate(_items(failures, f"{source}.failures")):
        where = f"{source}.failures[{i}]"
        _known(rule, _RULE_KEYS, where)
        verb, resource = _verb(rule, where), _text(rule, "resource", where, required=True)
        code = rule.get("code")
        if code not in MESSAGES:
            raise InputError(f"{where}.code", f"must be one of {', '.join(map(str, MESSAGES))}, got {code!r}")
        times = rule.get("times", 1)
        if not isinstance(times, int) or isinstance(times, bool) or times < 1:
            raise InputError(f"{where}.times", f"must be a whole number >= 1, got {times!r}")
        sub = _text(rule, "subresource", where) or None
        rules.append((verb, resource, code, times, sub, _text(rule, "message", where)))
    pauses: list[tuple[float, str, str]] = []
    for i, delay in enumerate(_items(delays, f"{source}.delays")):
        where = f"{source}.delays[{i}]"
        _known(delay, _DELAY_KEYS, where)
        seconds = delay.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 60:
            raise InputError(f"{where}.seconds", f"must be a number of seconds in (0, 60], got {seconds!r}")
        pauses.append((float(seconds), _verb(delay, where), _text(delay, "resource", where) or "*"))
    for verb, resource, code, times, sub, message in rules:
        faults.fail(verb, resource, code, times=times, subresource=sub, message=message)
    for seconds, verb, resource in pauses:
        faults.delay(seconds, verb, resource)
    return len(rules) + len(pauses)


def _items(value: object, where: str) -> list[dict[str, object]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(where, "must be a list of mappings")
    return value


def _known(item: dict[str, object], keys: set[str], where: str) -> None:
    unknown = sorted(set(item) - keys)
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", f"unknown field (expected {', '.join(sorted(keys))})")


def _text(item: dict[str, object], key: str, where: str, required: bool = False) -> str:
    value = item.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise InputError(f"{where}.{key}", "missing" if required and not value else f"must be a string, got {value!r}")
    return value


def _verb(item: dict[str, object], where: str) -> str:
    verb = _text(item, "verb", where) or "*"
    if verb not in VERBS:
        raise InputError(f"{where}.verb", f"must be one of {', '.join(sorted(VERBS))}, got {verb!r}")
    return verb


class Audit:
    """Every request the server answered, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[AuditRecord] = []

    def add(self, record: AuditRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self, verb: str | None = None, resource: str | None = None) -> list[AuditRecord]:
        with self._lock:
            return [
                r
                for r in self._records
                if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
            ]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
