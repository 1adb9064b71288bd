"""The service's own failure besides bad input (``sidecar.errors.InputError``).

Front doors map it to their "not found" answer: NOT_FOUND over gRPC, 404 on HTTP.
"""

from __future__ import annotations

from sidecar.errors import bounded


class NotFound(LookupError):
    """The request names something the service no longer holds (an expired or closed session).
    The message quotes the caller's name clipped (``sidecar.errors.bounded``)."""

    def __init__(self, message: str) -> None:
        super().__init__(bounded(message))
