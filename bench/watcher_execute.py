"""Benchmark of an Execute RepackRun on the sandbox loaded with an openb trace fill (issue 11's benchmark).

Loads ``openb_snapshot(..., Stop(at_fill=0.7))`` into a sandbox API server whose simulated control
plane runs on its threads (Volcano scheduler every ``--schedule-period`` seconds, Volcano's own
``schedulePeriod`` default 1 s; kubelet; Job controller rebuilding evicted pods), starts a real
sidecar gRPC server on loopback, and runs the watcher in this process: ``ClusterCache`` informers +
``Controller`` with ``runner.reconcilers`` (DryRun, Execute, TTL), planning through
``sidecar.client.RepackClient``, no leader election. Then one Execute RepackRun is created
(goal ``nvidia.com/gpu``, ``maxPerRun.podGroups`` 20, ``eviction.gracePeriodSeconds`` 0) and measured:

* wall time from the create to the terminal phase (seen by a store listener), phase and reason;
* relocations, and the API requests the watcher made while the run was going (the watcher's client
  has its own User-Agent; the window is from the create until 1 s after the terminal phase, so the
  controller's last read-your-writes GET is in it), per relocation, by verb and resource;
* for each replacement pod, from a store listener: was ``status.nominatedNodeName`` set before
  ``spec.nodeName`` (the nomination reached the pod before the scheduler bound it), and did the pod
  end on the node the watcher selected;
* ``result.freedNodeCount`` against the plan's ``freedNodeCount``; fragmentation before/after.

Every variant runs ``--repeats`` times on a fresh API server; medians are printed. The shipped path
is the default: the watcher serves the placement gate's admission webhook (its Secret, its CA
injected into the webhook configuration, registered by loopback URL: ``cli.localgate``) and the
sandbox's admission chain calls it over HTTPS for every rebuilt pod, which is created behind the
scheduling gate ``repack.volcano.sh/placement`` until the watcher has nominated it. With
``--compare-gates`` (default) the bare path runs too: no webhook, rebuilt pods race the scheduler.
Goal (issue 22, openb 70%): at least 95% of the planned nodes freed and every replacement nominated
before it binds, on the shipped path.

Modelling choices (stated in the output too): the openb trace's GPU pods carry no owner, and the
sandbox has no Deployment controller, so every Volcano pod without a controller owner is given the
``volcano.sh/job-name`` label of its PodGroup: the sandbox's Volcano Job controller rebuilds it under
the same name, as Volcano rebuilds a Job's pod. Pods' own ``terminationGracePeriodSeconds`` is 0 for
speed (evictions also ask for 0). Skipped with a message when ../shared/traces is absent (set
REPACK_TRACES). ``--source guide`` runs the same on the guide's 3-node Ascend cluster (smoke test).

Run: ``.venv/bin/python -m bench.watcher_execute [--repeats N] [--schedule-period S] [--gates | --no-compare-gates]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench.common import machine, save
from bench.shapes import TRACES
from sidecar import logs
from sidecar.api.repackrun import TERMINAL
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.cli.localgate import serve_local_gate
from sidecar.client import RepackClient
from sidecar.sandbox.apiserver import ApiServer
from sidecar.sandbox.apiserver.rest import POD_KEY
from sidecar.sandbox.apiserver.store import Event
from sidecar.sandbox.controlplane import ControlPlaneConfig
from sidecar.sandbox.objects import objects_from_snapshot
from sidecar.server.app import RunningServer, start
from sidecar.server.config import ServerConfig
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.args import ExecuteFlags, WatchOptions
from sidecar.watcher.cluster import ClusterCache
from sidecar.watcher.controller import Controller
from sidecar.watcher.informer import Backoff
from sidecar.watcher.runner import reconcilers
from sidecar.watcher.status import GROUP, PLURAL, VERSION

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "sidecar" / "data" / "guide-ascend.json"
GATE = "repack.volcano.sh/placement"
#: the variants: rebuilt pods behind the webhook's gate (shipped), or bare
LABELS = {True: "webhook gate", False: "bare"}
#: issue 22's goal on the shipped path: planned nodes freed, replacements nominated before they bind
GOAL_FREED, GOAL_NOMINATED = 0.95, 1.0
JOB_NAME = "volcano.sh/job-name"
GROUP_NAME = "scheduling.k8s.io/group-name"
RUN_KEY = f"{GROUP}/{PLURAL}"
RUN_NAME = "bench-execute"
WATCHER_AGENT = "repack-watcher-bench"
#: requests after the terminal phase still counted (the controller's settle GET after its last write)
TAIL_S = 1.0


def cluster_objects(snap: pb.Snapshot, grace: int = 0) -> tuple[list[Obj], int]:
    """The snapshot as objects; Volcano pods without a controller owner labelled as their PodGroup's
    Volcano Job (so the sandbox rebuilds them); every pod's own grace ``grace``. Returns (objects, labelled)."""
    objs = objects_from_snapshot(snap)
    labelled = 0
    for obj in objs:
        if obj["kind"] != "Pod":
            continue
        obj["spec"]["terminationGracePeriodSeconds"] = grace
        meta = obj["metadata"]
        owned = any(r.get("controller") for r in meta.get("ownerReferences") or [])
        group = (meta.get("annotations") or {}).get(GROUP_NAME)
        if obj["spec"].get("schedulerName") == "volcano" and group and not owned:
            meta.setdefault("labels", {})[JOB_NAME] = group
            labelled += 1
    return objs, labelled


def execute_run(goal: str, budget: int) -> Obj:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RepackRun",
        "metadata": {"name": RUN_NAME},
        "spec": {
            "mode": "Execute",
            "goals": [{"resource": goal}],
            "maxPerRun": {"podGroups": budget},
            "eviction": {"gracePeriodSeconds": 0},
        },
    }


@dataclass
class PodTimes:
    gated: bool = False
    ungated_at: float | None = None
    nominated_at: float | None = None
    nominated_node: str = ""
    bound_at: float | None = None
    bound_node: str = ""


class TimedPlanner:
    """The gRPC client, each call counted and timed per method (where a pass spends its time)."""

    def __init__(self, inner: RepackClient) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def _timed(self, method: str, call: Any, request: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return call(request)
        finally:
            self.calls[method] += 1
            self.seconds[method] += time.perf_counter() - t0

    def plan(self, request: Any) -> Any:
        return self._timed("Plan", self.inner.plan, request)

    def plan_latest(self, request: Any) -> Any:
        return self._timed("Plan on latest", self.inner.plan_latest, request)

    def evaluate(self, request: Any) -> Any:
        return self._timed("Evaluate", self.inner.evaluate, request)

    def filter(self, request: Any) -> Any:
        return self._timed("Filter", self.inner.filter, request)

    def prioritize(self, request: Any) -> Any:
        return self._timed("Prioritize", self.inner.prioritize, request)


@dataclass
class Observer:
    """A store listener (called under the store lock: it only takes note): per pod UID when it was first
    seen nominated and bound, and when the run first reached a terminal phase."""

    pods: dict[str, PodTimes] = field(default_factory=dict)
    running_at: float | None = None
    terminal_at: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def __call__(self, key: str, event: Event) -> None:
        kind, obj, _ = event
        now = time.perf_counter()
        if key == RUN_KEY and obj["metadata"].get("name") == RUN_NAME and kind != "DELETED":
            phase = (obj.get("status") or {}).get("phase")
            if phase == "Running" and self.running_at is None:
                self.running_at = now
            if phase in TERMINAL and self.terminal_at is None:
                self.terminal_at = now
                self.done.set()
        elif key == POD_KEY and kind != "DELETED":
            uid = obj["metadata"].get("uid", "")
            seen = self.pods.get(uid)
            nominated = (obj.get("status") or {}).get("nominatedNodeName") or ""
            node = (obj.get("spec") or {}).get("nodeName") or ""
            gates = (obj.get("spec") or {}).get("schedulingGates")
            if seen is None:
                if kind != "ADDED":
                    return  # a loaded pod modified later: not a replacement
                seen = self.pods[uid] = PodTimes(gated=bool(gates))
            if seen.gated and not gates and seen.ungated_at is None:
                seen.ungated_at = now
            if nominated and seen.nominated_at is None:
                seen.nominated_at, seen.nominated_node = now, nominated
            if node and seen.bound_at is None:
                seen.bound_at, seen.bound_node = now, node


class Sidecar:
    """A real sidecar gRPC server on loopback, on its own event loop in a thread (as tests' ServerThread)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.running: RunningServer = self._call(start(ServerConfig(port=0, metrics_port=-1)))
        self.target = f"127.0.0.1:{self.running.port}"

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def stop(self) -> None:
        self._call(self.running.server.stop(None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def _reason(status: Obj) -> str:
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    for kind in ("Failed", "Complete", "Progressing"):
        if kind in conds and (kind != "Failed" or conds[kind].get("status") == "True"):
            return str(conds[kind].get("reason", ""))
    return ""


def one_run(
    objects: list[Obj], goal: str, *, gates: bool, period: float, budget: int, timeout: float, target: str
) -> dict[str, Any]:
    """A fresh API server with ``objects``, the watcher, one Execute run; what it measured."""
    conf = ControlPlaneConfig(scheduler_period=period)
    seen = Observer()
    options = WatchOptions(leader_elect=False, execute=ExecuteFlags(cooldown=1.0))
    with ApiServer(history=100_000, control_plane=conf) as server, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        server.load(objects)
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
        load_s = time.perf_counter() - t0
        server.store.listeners.append(seen)
        kubeconfig = str(server.kubeconfig(Path(tmp) / "kubeconfig"))
        k8s = config.new_client_from_config(kubeconfig)
        k8s.user_agent = WATCHER_AGENT
        user = config.new_client_from_config(kubeconfig)
        planner = TimedPlanner(RepackClient(target, timeout=60.0))
        cache = ClusterCache(k8s, backoff=Backoff(initial=0.1, cap=2.0))
        gate = serve_local_gate(k8s, cache) if gates else None
        controller = Controller(k8s, reconcilers(k8s, planner, cache, options), cache=cache, period=options.period,
                                chores=[gate.lifter] if gate is not None else [])  # fmt: skip
        try:
            t0 = time.perf_counter()
            cache.start()
            if not cache.wait_for_sync(120):
                raise RuntimeError("the watcher's cache did not sync")
            sync_s = time.perf_counter() - t0
            controller.start_leading()
            time.sleep(0.5)  # the start-up resync has passed: the run is brought in by its own event
            first = len(server.audit.records())
            created = time.perf_counter()
            client.CustomObjectsApi(user).create_cluster_custom_object(
                GROUP, VERSION, PLURAL, execute_run(goal, budget)
            )
            if not seen.done.wait(timeout):
                raise RuntimeError(f"the run did not finish within {timeout:.0f} s")
            assert seen.terminal_at is not None
            wall_s = seen.terminal_at - created
            time.sleep(TAIL_S)
            last = len(server.audit.records())
        finally:
            controller.stop_leading()
            if gate is not None:
                gate.close()
            cache.stop()
            planner.inner.close()
        run = client.CustomObjectsApi(user).get_cluster_custom_object(GROUP, VERSION, PLURAL, RUN_NAME)
        user.close()
        k8s.close()
        records = [r for r in server.audit.records()[first:last] if r.user_agent == WATCHER_AGENT]
    status = run.get("status") or {}
    rels = status.get("relocations") or []
    calls = Counter(f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}" for r in records)
    replacements = []
    for rel in rels:
        placement = rel.get("placement") or {}
        uid = placement.get("replacementPodUID", "")
        times = seen.pods.get(uid)
        if not uid or times is None:
            continue
        first_nominated = times.nominated_at is not None and (
            times.bound_at is None or times.nominated_at <= times.bound_at
        )
        selected = placement.get("selectedNodeName", "")
        replacements.append(
            {
                "pod": f"{rel['namespace']}/{rel['victimPodName']}",
                "nominated_before_bind": first_nominated,
                "nominated": times.nominated_at is not None,
                "ungated_before_nominated": times.ungated_at is not None
                and (times.nominated_at is None or times.ungated_at < times.nominated_at),
                "selected": selected,
                "planned": rel.get("plannedNodeName", ""),
                "bound": times.bound_node,
                "on_selected": bool(selected) and times.bound_node == selected,
                "placement": placement.get("phase", ""),
            }
        )
    plan = status.get("plan") or {}
    summary = plan.get("summary") or {}
    result = status.get("result") or {}
    n = len(rels)
    binds = [t.bound_at for r in rels if (t := seen.pods.get((r.get("placement") or {}).get("replacementPodUID", "")))
             and t.bound_at is not None]  # fmt: skip
    return {
        "gates": gates,
        "load_s": load_s,
        "cache_sync_s": sync_s,
        "wall_s": wall_s,
        "admitted_s": None if seen.running_at is None else seen.running_at - created,
        "last_bound_s": max(binds) - created if binds else None,
        "phase": status.get("phase", ""),
        "reason": _reason(status),
        "message": result.get("message", ""),
        "relocations": n,
        "evicted": sum((r.get("eviction") or {}).get("phase") == "Evicted" for r in rels),
        "placements": dict(Counter((r.get("placement") or {}).get("phase", "") for r in rels)),
        "pod_groups": len({(r["namespace"], r.get("podGroupName", "")) for r in rels}),
        "api_requests": len(records),
        "api_requests_per_relocation": len(records) / n if n else None,
        "api_requests_by_kind": dict(sorted(calls.items())),
        "replacements": replacements,
        "nominated_before_bind": sum(r["nominated_before_bind"] for r in replacements),
        "on_selected_node": sum(r["on_selected"] for r in replacements),
        "ungated_before_nominated": sum(r["ungated_before_nominated"] for r in replacements),
        "sidecar_calls": dict(planner.calls),
        "sidecar_seconds": {k: round(v, 3) for k, v in planner.seconds.items()},
        "plan_freed_nodes": int(summary.get("freedNodeCount") or 0),
        "result_freed_nodes": int(result.get("freedNodeCount") or 0),
        "frag_before_percent": summary.get("fragBeforePercent"),
        "frag_planned_after_percent": summary.get("fragAfterPercent"),
        "frag_after_percent": result.get("fragAfterPercent"),
    }


def _median(runs: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: _median(runs, k)
        for k in ("wall_s", "admitted_s", "last_bound_s", "relocations", "api_requests",
                  "api_requests_per_relocation", "nominated_before_bind", "on_selected_node",
                  "ungated_before_nominated", "plan_freed_nodes", "result_freed_nodes", "frag_before_percent",
                  "frag_after_percent")
    }  # fmt: skip
    reps = [r for run in runs for r in run["replacements"]]
    out["nominated_before_bind_share"] = sum(r["nominated_before_bind"] for r in reps) / len(reps) if reps else None
    out["on_selected_share"] = sum(r["on_selected"] for r in reps) / len(reps) if reps else None
    out["phases"] = dict(Counter(f"{r['phase']}/{r['reason']}" for r in runs))
    return out


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _report(label: str, runs: list[dict[str, Any]], s: dict[str, Any]) -> None:
    print(f"\n{label}: {len(runs)} runs, {', '.join(f'{k} x{v}' for k, v in s['phases'].items())}")
    for i, r in enumerate(runs):
        print(f"  run {i + 1}: {r['wall_s']:.2f} s (admitted at {_s(r['admitted_s'])}, last replacement bound at "
              f"{_s(r['last_bound_s'])}), {r['phase']}/{r['reason']}, {r['relocations']} relocations "
              f"({r['pod_groups']} PodGroups; {r['placements']}), {r['api_requests']} requests, "
              f"nominated before bind {r['nominated_before_bind']}/{len(r['replacements'])}, "
              f"on the selected node {r['on_selected_node']}, gate lifted before the nomination "
              f"{r['ungated_before_nominated']}, freed {r['result_freed_nodes']} of "
              f"{r['plan_freed_nodes']} planned, fragmentation {r['frag_before_percent']}% -> "
              f"{r['frag_after_percent']}%")  # fmt: skip
    kinds: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    secs: Counter[str] = Counter()
    for r in runs:
        kinds.update(r["api_requests_by_kind"])
        calls.update(r["sidecar_calls"])
        secs.update(r["sidecar_seconds"])
    print("  sidecar calls per run (mean count, seconds): "
          + ", ".join(f"{k} {v / len(runs):.1f} ({secs[k] / len(runs):.2f} s)"
                      for k, v in calls.most_common()))  # fmt: skip
    print("  watcher requests per run (mean) by kind: "
          + ", ".join(f"{k} {v / len(runs):.1f}" for k, v in kinds.most_common()))  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", choices=("openb", "guide"), default="openb")
    p.add_argument("--fill", type=float, default=0.7)
    p.add_argument("--goal", default="", help="default: nvidia.com/gpu (openb), huawei.com/ascend-1980 (guide)")
    p.add_argument("--budget", type=int, default=20, help="maxPerRun.podGroups")
    p.add_argument("--schedule-period", type=float, default=1.0, help="the simulated scheduler's period (Volcano: 1 s)")
    p.add_argument(
        "--gates",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --no-compare-gates: the shipped path (webhook, the default) or bare (--no-gates)",
    )
    p.add_argument("--compare-gates", action=argparse.BooleanOptionalAction, default=True,
                   help="run the bare path and the shipped path (default)")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    ns = p.parse_args(argv)
    logs.configure("console", "warning")  # no access log per call, no status log per pass
    if ns.source == "openb":
        openb = TRACES / "openb"
        if not (openb / "openb_node_list_all_node.csv").exists():
            print(f"bench.watcher_execute: skipped, the openb trace is not in {openb} (set REPACK_TRACES)")
            return 0
        from sidecar.scenarios.traces import Stop, openb_snapshot

        t0 = time.perf_counter()
        snap, _ = openb_snapshot(openb, Stop(at_fill=ns.fill))
        source = f"openb {ns.fill:.0%} (replayed in {time.perf_counter() - t0:.1f} s)"
        goal = ns.goal or "nvidia.com/gpu"
    else:
        snap, source, goal = load_snapshot(GUIDE), "guide-ascend.json", ns.goal or "huawei.com/ascend-1980"
    objects, labelled = cluster_objects(snap)
    counts = Counter(o["kind"] for o in objects)
    variants = [False, True] if ns.compare_gates else [ns.gates]
    print(f"machine: {machine()}")
    print(f"{source}: {counts['Node']} nodes, {counts['Pod']} pods, {counts['PodGroup']} PodGroups; "
          f"{labelled} ownerless Volcano pods labelled {JOB_NAME} (rebuilt by the sandbox's Job controller); "
          f"pods' terminationGracePeriodSeconds 0")  # fmt: skip
    print(f"Execute run: goal {goal}, maxPerRun.podGroups {ns.budget}, eviction.gracePeriodSeconds 0; "
          f"scheduler period {ns.schedule_period:g} s; watcher requests counted by User-Agent {WATCHER_AGENT!r} "
          f"from the create to {TAIL_S:g} s after the terminal phase")  # fmt: skip
    sidecar = Sidecar()
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        for gates in variants:
            label = LABELS[gates]
            results[label] = [
                one_run(objects, goal, gates=gates, period=ns.schedule_period, budget=ns.budget, timeout=ns.timeout,
                        target=sidecar.target)
                for _ in range(ns.repeats)
            ]  # fmt: skip
    finally:
        sidecar.stop()
    summaries = {label: _summary(runs) for label, runs in results.items()}
    for label, runs in results.items():
        _report(label, runs, summaries[label])
    print("\nmedians          | wall s | relocations | requests | per relocation | nominated before bind | "
          "on selected node | freed (plan) | frag before -> after")  # fmt: skip
    for label, s in summaries.items():
        print(f"{label:16} | {s['wall_s']:6.2f} | {s['relocations']:11.0f} | {s['api_requests']:8.0f} | "
              f"{s['api_requests_per_relocation']:14.1f} | {_share(s['nominated_before_bind_share']):>21} | "
              f"{_share(s['on_selected_share']):>16} | {s['result_freed_nodes']:.0f} ({s['plan_freed_nodes']:.0f}) | "
              f"{s['frag_before_percent']}% -> {s['frag_after_percent']}%")  # fmt: skip
    if len(summaries) == 2:
        bare, gated = summaries[LABELS[False]], summaries[LABELS[True]]
        print(f"gate: wall time x{gated['wall_s'] / bare['wall_s']:.2f}, requests per relocation "
              f"x{gated['api_requests_per_relocation'] / bare['api_requests_per_relocation']:.2f}, nominated before "
              f"bind {_share(bare['nominated_before_bind_share'])} -> "
              f"{_share(gated['nominated_before_bind_share'])}")  # fmt: skip
    goal_met = None
    if LABELS[True] in summaries:
        shipped = summaries[LABELS[True]]
        freed = shipped["result_freed_nodes"] / max(shipped["plan_freed_nodes"], 1)
        nominated = shipped["nominated_before_bind_share"] or 0.0
        goal_met = freed >= GOAL_FREED and nominated >= GOAL_NOMINATED
        print(f"goal (shipped path): planned nodes freed {freed:.0%} (>= {GOAL_FREED:.0%}), nominated before bind "
              f"{nominated:.0%} (>= {GOAL_NOMINATED:.0%}): {'met' if goal_met else 'NOT met'}")  # fmt: skip
    save(
        "watcher_execute" if ns.source == "openb" else "watcher_execute_guide",
        {
            "machine": machine(),
            "source": source,
            "goal": goal,
            "budget_pod_groups": ns.budget,
            "schedule_period_s": ns.schedule_period,
            "repeats": ns.repeats,
            "pods_labelled_as_jobs": labelled,
            "summaries": summaries,
            "goal_met": goal_met,
            "runs": results,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
