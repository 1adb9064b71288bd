"""What a test makes the fake cluster do wrong, and what it proves happened: injected answers
(``fail``), added latency (``delay``), and the audit of every call with the code it got.

Calls are named with Kubernetes' verbs on (resource, subresource), as an audit log names them: a
status write is ``update repackruns/status``, an eviction ``create pods/eviction``; ``"*"`` matches any.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

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
class Call:
    """One call as answered: ``code`` is the HTTP status a real server would have sent (0: none)."""

    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int


class Faults:
    """Failures answered N times, and latency, per (verb, resource[, subresource])."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._delays: list[tuple[str, str, float]] = []

    def fail(
        self, verb: str, resource: str, code: int, times: int = 1, subresource: str | None = None, message: str = ""
    ) -> None:
        """The next ``times`` matching calls answer ``code`` (409, 429, 500, 503, ...)."""
        with self._lock:
            self._rules.append(
                _Rule(verb, resource, subresource, code, times, message or MESSAGES.get(code, "injected"))
            )

    def delay(self, seconds: float, verb: str = "*", resource: str = "*") -> None:
        """Matching calls take ``seconds`` longer (a call with a shorter timeout is cut at it)."""
        with self._lock:
            self._delays.append((verb, resource, seconds))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._delays.clear()

    def pending(self) -> int:
        """Injected failures not yet answered."""
        with self._lock:
            return sum(r.times for r in self._rules)

    def take(self, verb: str, resource: str, subresource: str) -> tuple[float, int, str]:
        """(added seconds, injected code or 0, its message) for one call; consumes one failure."""
        with self._lock:
            delay = sum(s for v, r, s in self._delays if v in ("*", verb) and r in ("*", resource))
            for rule in self._rules:
                if rule.times > 0 and rule.matches(verb, resource, subresource):
                    rule.times -= 1
                    self._rules = [r for r in self._rules if r.times > 0]
                    return delay, rule.code, rule.message
        return delay, 0, ""


class Audit:
    """Every call the fake answered, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []

    def record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def records(self, verb: str | None = None, resource: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if verb in (None, c.verb) and resource in (None, c.resource)]

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
