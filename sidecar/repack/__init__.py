"""Repacking: fragmentation, scope, gang-aware cost, the planner and its RepackRun status."""

from __future__ import annotations

from sidecar.api.v1alpha1 import plan_pb2, spec_pb2
from sidecar.mirror.core import Mirror
from sidecar.snapshot.state import ClusterState


def plan_status(
    state: ClusterState, spec: spec_pb2.RepackSpec, *, mirror: Mirror | None = None, deadline: object | None = None
) -> plan_pb2.RepackStatus:
    """The one code path behind the Plan RPC and `repack-sidecar plan`."""
    from sidecar.repack.planner import Planner
    from sidecar.repack.spec import validate
    from sidecar.repack.status import to_status

    run = validate(spec)
    result = Planner(mirror or Mirror(state), run).plan(deadline)
    return to_status(state, result, run)
