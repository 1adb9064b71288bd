"""SIGTERM ends ``serve`` within ``--grace`` (and a moment), even with every worker thread planning:
the workers are daemon threads nobody joins, and the calls still running are cancelled."""

from __future__ import annotations

import signal
import threading
import time
import urllib.request

import grpc

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, spec_pb2
from sidecar.client import MIB, client_options
from sidecar.scenarios.synth import SynthOptions, synth
from tests.server_process import ServeProcess

GRACE = 1.0
#: generous for a loaded 2-core machine; the work in flight would take far longer (see below)
MARGIN = 4.0
#: Plans in flight at SIGTERM, one worker each (within the default --max-concurrent-rpcs 16)
CALLS = 15


def test_sigterm_exit_is_bounded_by_grace_with_plans_in_flight() -> None:
    # big enough that the cut-short work stays far above --grace + MARGIN as the planner gets faster
    # (4,000 nodes planned in 0.32 s by December 2026, 10,000 in 0.35 s on 2 Dec, both under the
    # 0.36 s this test needs)
    snapshot = synth(SynthOptions(nodes=20000, fill=0.8, seed=5))
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
    args = ("--metrics-port", "0", "--metrics-host", "127.0.0.1", "--grace", str(GRACE), "--workers", str(CALLS))
    args += ("--memory-budget-mib", "8192")  # every Plan admitted at once
    with ServeProcess(*args) as serve:
        metrics_address = str(serve.events("metrics")[0]["address"])
        assert metrics_address.startswith("127.0.0.1:")  # --metrics-host is honoured
        with urllib.request.urlopen(f"http://{metrics_address}/readyz", timeout=10) as reply:
            assert reply.status == 200
        channel = grpc.insecure_channel(serve.target, options=client_options(64 * MIB))
        stub = service_pb2_grpc.RepackStub(channel)
        sid = stub.OpenSession(service_pb2.OpenSessionRequest(snapshot=snapshot), timeout=60).session_id
        request = service_pb2.PlanRequest(session_id=sid, spec=spec)
        stub.Plan(request, timeout=120)  # builds the session's mirror
        started = time.monotonic()
        stub.Plan(request, timeout=120)  # one Plan alone: how long each Plan in flight would take
        one_plan = time.monotonic() - started
        # the Plans on one session run one after another (the session's lock): every worker stays busy
        outcomes: list[grpc.StatusCode] = []

        def call() -> None:
            try:
                stub.Plan(request, timeout=120)
                outcomes.append(grpc.StatusCode.OK)
            except grpc.RpcError as err:
                outcomes.append(err.code())

        callers = [threading.Thread(target=call) for _ in range(CALLS)]
        for t in callers:
            t.start()
        time.sleep(min(0.5, one_plan / 2))  # every Plan is in flight, the first one in its worker
        serve.proc.send_signal(signal.SIGTERM)
        took = serve.wait_exit(timeout=120)
        for t in callers:
            t.join(30)
        channel.close()
    print(f"one Plan {one_plan:.2f} s; exit {took:.2f} s after SIGTERM; outcomes {[c.name for c in outcomes]}")
    assert serve.proc.returncode == 0, "\n".join(serve.lines[-20:])
    assert took <= GRACE + MARGIN, f"exit took {took:.1f} s after SIGTERM (--grace {GRACE})"
    # the work that was cut short: waiting for the workers would have taken about CALLS - 1 Plans more
    assert (CALLS - 1) * one_plan > GRACE + MARGIN, f"one Plan takes only {one_plan:.2f} s: the test proves nothing"
    assert any(code != grpc.StatusCode.OK for code in outcomes), outcomes
    assert serve.events("stopped"), "\n".join(serve.lines[-20:])
