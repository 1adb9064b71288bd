"""``repack-sidecar demo``: the embedded default — a built-in fragmented cluster planned by a real
loopback sidecar (``--execute``: the guide's cluster repacked end to end on an in-memory cluster, see
``demo_execute``)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from sidecar.api.v1alpha1 import plan_pb2, service_pb2
from sidecar.cli.output import fragmentation_table
from sidecar.cli.plantable import plan_table
from sidecar.scenarios.synth import SynthOptions
from sidecar.wording import count

DEMO = SynthOptions(nodes=24, cards_per_node=8, fill=0.55, seed=2026, name="demo")


def cmd_demo(ns: argparse.Namespace) -> int:
    """The embedded default: a built-in fragmented cluster, evaluated through a real loopback server."""
    from sidecar.scenarios.synth import synth

    if ns.execute:
        from sidecar.cli.demo_execute import run_demo

        return run_demo(gates=ns.gates)
    opts = DEMO
    snap = synth(opts)
    pools = sorted({n.labels["accelerator-pool"] for n in snap.nodes})
    print(
        f"Demo cluster (built in: synth --nodes {opts.nodes} --cards-per-node {opts.cards_per_node} "
        f"--fill {opts.fill} --seed {opts.seed})\n"
        f"  {count(len(snap.nodes), 'node')} in pools {', '.join(pools)}; {count(len(snap.task_columns.uid), 'pod')}; "
        f"{count(len(snap.pod_groups), 'PodGroup')}\n"
    )
    spec = _demo_spec()
    if ns.offline:
        from sidecar.cli.offline import evaluate_offline, plan_offline

        response = evaluate_offline(service_pb2.EvaluateRequest(snapshot=snap))
        status = plan_offline(snap, spec)
        print("Fragmentation (offline):")
    else:
        response, status = asyncio.run(_demo_over_grpc(snap, spec))
        print("Fragmentation (Evaluate over gRPC on loopback):")
    print(fragmentation_table(response))
    print(f"\nPlan for the minimal DryRun (goal {DEMO.resource}, no scope, no budget):")
    print(plan_table(status))
    return 0


def _demo_spec() -> Any:
    from sidecar.api.v1alpha1 import spec_pb2

    return spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=DEMO.resource)])


async def _demo_over_grpc(snap: Any, spec: Any) -> tuple[service_pb2.EvaluateResponse, plan_pb2.RepackStatus]:
    from sidecar.client import RepackClient
    from sidecar.server.app import start
    from sidecar.server.config import ServerConfig

    running = await start(ServerConfig(port=0, metrics_port=-1))
    try:

        def call() -> tuple[service_pb2.EvaluateResponse, plan_pb2.RepackStatus]:
            with RepackClient(f"127.0.0.1:{running.port}") as client:
                session = client.open_session(service_pb2.OpenSessionRequest(snapshot=snap))
                try:
                    evaluated = client.evaluate(service_pb2.EvaluateRequest(session_id=session.session_id))
                    planned = client.plan(service_pb2.PlanRequest(session_id=session.session_id, spec=spec))
                    return evaluated, planned.status
                finally:
                    client.close_session(session.session_id)

        return await asyncio.to_thread(call)
    finally:
        await running.server.stop(None)
