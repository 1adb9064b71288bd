"""What the service reports as it works, so a front door can turn it into metrics.

The service stays free of any metrics library; the gRPC server subclasses this with Prometheus.
Every hook is called on the request's thread and must stay cheap (hand heavy work elsewhere).
"""

from __future__ import annotations

from sidecar.api.v1alpha1 import plan_pb2
from sidecar.snapshot.state import ClusterState


class Observer:
    """No-op by default (the command line and tests need no metrics)."""

    def snapshot_decoded(self, seconds: float, state: ClusterState) -> None:
        """A snapshot was validated and turned into columns in ``seconds``."""

    def state_used(self, state: ClusterState) -> None:
        """A request works on ``state``: a decoded inline snapshot, a new session, or an open session
        looked up again (the same object each time, so an observer can tell it has seen it)."""

    def planned(self, seconds: float, status: plan_pb2.RepackStatus) -> None:
        """A Plan answered ``status`` after ``seconds`` of planning (decoding excluded)."""

    def sessions_changed(self, open_sessions: int) -> None:
        """A session was opened or closed; ``open_sessions`` are held now."""
