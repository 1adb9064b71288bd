"""The service's own limits; each front door builds them from its flags (the server from ``serve``'s)."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.snapshot.decode import Limits


@dataclass(frozen=True)
class ServiceLimits:
    #: Snapshots beyond these are refused while decoding, before any work is spent on them.
    max_nodes: int = 100_000
    max_tasks: int = 2_000_000
    #: Default lifetime of a session; a request may ask for up to 10x.
    session_ttl_seconds: float = 120.0
    #: Sessions kept; the least recently used is dropped first.
    max_sessions: int = 8

    def decode_limits(self) -> Limits:
        return Limits(max_nodes=self.max_nodes, max_tasks=self.max_tasks)
