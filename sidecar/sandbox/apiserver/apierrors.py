"""Kubernetes ``Status`` errors: every failure the emulator answers is one of these, as the real server does."""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An HTTP error with the Status body clients parse (reason drives client-side retries and kubectl wording)."""

    def __init__(
        self, code: int, message: str, *, reason: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(name: str, group: str, plural: str) -> dict[str, Any]:
    return {"name": name, "group": group, "kind": plural}


def _what(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(404, f'{_what(group, plural)} "{name}" not found', details=_details(name, group, plural))


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        f'{_what(group, plural)} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(name, group, plural),
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {_what(group, plural)} "{name}": {why}'
    return ApiError(409, message, reason="Conflict", details=_details(name, group, plural))


def invalid(kind: str, group: str, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 as errors.NewInvalid words it: one cause as is, several deduplicated in brackets (utilerrors aggregate)."""
    what = f"{kind}.{group}" if group else kind
    texts = list(dict.fromkeys(f"{c.get('field', '')}: {c.get('message', '')}".lstrip(": ") for c in causes))
    text = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details = {"name": name, "group": group, "kind": kind, "causes": causes}
    return ApiError(422, f'{what} "{name}" is invalid: {text}', reason="Invalid", details=details)


def gone(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")


def success(details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200}
    if details:
        body["details"] = details
    return body
