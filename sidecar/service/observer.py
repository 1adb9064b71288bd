"""What the service reports as it works, so a front door can turn it into metrics.

The service stays free of any metrics library; the gRPC server subclasses this with Prometheus.
"""

from __future__ import annotations

from sidecar.snapshot.state import ClusterState


class Observer:
    """No-op by default (the command line and tests need no metrics)."""

    def snapshot_decoded(self, seconds: float, state: ClusterState) -> None:
        """A snapshot was validated and turned into columns in ``seconds``."""

    def sessions_changed(self, open_sessions: int) -> None:
        """A session was opened or closed; ``open_sessions`` are held now."""
