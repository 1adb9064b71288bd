"""The service's own failure besides bad input (``sidecar.errors.InputError``).

Front doors map it to their "not found" answer: NOT_FOUND over gRPC, 404 on HTTP.
"""

from __future__ import annotations


class NotFound(LookupError):
    """The request names something the service no longer holds (an expired or closed session)."""
