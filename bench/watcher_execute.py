"""Benchmark of an Execute RepackRun on the fake cluster loaded with an openb trace fill.

Loads ``openb_snapshot(..., Stop(at_fill=0.7))`` into the fake cluster (``sidecar.fake``) whose
simulated Volcano runs on its threads (scheduler every ``--schedule-period`` seconds, Volcano's own
``schedulePeriod`` default 1 s; kubelets; the Job controller's rebuilds), starts a real sidecar gRPC
server on loopback, and runs the watcher in this process exactly as ``watch`` wires it
(``runner.build_controller``: informers, the event-driven controller, DryRun/Execute/TTL), planning
through ``sidecar.client.RepackClient``, no leader election. Then one Execute RepackRun is created
(goal ``nvidia.com/gpu``, ``maxPerRun.podGroups`` 20, ``eviction.gracePeriodSeconds`` 0) and measured:

* wall time from the create to the terminal phase, phase and reason;
* the watcher's cluster calls (counted at its port) per relocation, by verb and resource;
* the sidecar calls (counted at the watcher's sidecar port) and their time: how many decode the
  cluster (an inline snapshot, or OpenSession) in each Execute pass that chose placements, and the
  sidecar time per relocation spent choosing placements (OpenSession, Filter, Prioritize, Pipeline,
  CloseSession);
* for each replacement pod: was ``status.nominatedNodeName`` set before ``spec.nodeName``, and did it
  end on the node the watcher selected; ``result.freedNodeCount`` against the plan's.

Every variant runs ``--repeats`` times on a fresh fake; medians are printed. The shipped path is the
default: rebuilt pods are created behind the scheduling gate ``repack.volcano.sh/placement``, as the
watcher's admission webhook decides (``GateIndex.review``, answered in process where the API server
would call it), until the watcher has nominated them; ``--compare-gates`` (default) runs the bare
path too. Goals: at least 95% of the planned nodes freed and every replacement nominated before it
binds (issue 22), one decode per pass and at most 0.07 s of sidecar time per relocation choosing
placements (issue 36), on the shipped path.

Modelling choices (printed too): the openb trace's GPU pods carry no owner, so every Volcano pod
without a controller owner gets the ``volcano.sh/job-name`` label of its PodGroup and is rebuilt
under the same name, as Volcano rebuilds a Job's pod; grace periods are 0 for speed. Skipped with a
message when ../shared/traces is absent (set REPACK_TRACES). ``--source guide`` runs the same on the
guide's 3-node Ascend cluster (the smoke test).

Run: ``.venv/bin/python -m bench.watcher_execute [--repeats N] [--schedule-period S] [--gates | --no-compare-gates]``.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import machine, save
from bench.shapes import TRACES
from sidecar import logs
from sidecar.api.repackrun import TERMINAL
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.client import RepackClient
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.fake.plane import ControlPlane, PlaneConfig
from sidecar.server.background import BackgroundServer
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher.args import ExecuteFlags, WatchOptions
from sidecar.watcher.execute.reconciler import ExecuteReconciler
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.informer import Backoff
from sidecar.watcher.kit.port import NAMESPACES, PODS, REPACKRUNS, Resource
from sidecar.watcher.runner import build_controller, placement_gate

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "sidecar" / "data" / "guide-ascend.json"
LABELS = {True: "webhook gate", False: "bare"}
GOAL_FREED, GOAL_NOMINATED, GOAL_DECODES, GOAL_PLACING_S = 0.95, 1.0, 1, 0.07
JOB_NAME = "volcano.sh/job-name"
RUN_NAME = "bench-execute"
PLACING = ("OpenSession", "Filter", "Prioritize", "Pipeline", "CloseSession")


def cluster_objects(snap: pb.Snapshot) -> tuple[list[Obj], int]:
    """The snapshot as objects; ownerless Volcano pods labelled as their PodGroup's Volcano Job (so
    the Job controller rebuilds them); grace 0. Returns (objects, how many were labelled)."""
    objs = objects_from_snapshot(snap)
    labelled = 0
    for obj in objs:
        if obj["kind"] != "Pod":
            continue
        obj["spec"]["terminationGracePeriodSeconds"] = 0
        meta = obj["metadata"]
        owned = any(r.get("controller") for r in meta.get("ownerReferences") or [])
        group = (meta.get("annotations") or {}).get(GROUP_NAME)
        if obj["spec"].get("schedulerName") == "volcano" and group and not owned:
            meta.setdefault("labels", {})[JOB_NAME] = group
            labelled += 1
    return objs, labelled


def execute_run(goal: str, budget: int) -> Obj:
    spec = {"mode": "Execute", "goals": [{"resource": goal}], "maxPerRun": {"podGroups": budget},
            "eviction": {"gracePeriodSeconds": 0}}  # fmt: skip
    return {"apiVersion": REPACKRUNS.api_version, "kind": "RepackRun", "metadata": {"name": RUN_NAME}, "spec": spec}


class Counted:
    """A port (cluster or sidecar) whose every call is counted, timed and, where it decodes the
    cluster in the sidecar, noted as a decode (an inline snapshot, or OpenSession)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.decodes = 0

    def __getattr__(self, method: str) -> Callable[..., Any]:
        call = getattr(self.inner, method)

        def counted(*args: Any, **kwargs: Any) -> Any:
            name = method
            if args and isinstance(args[0], Resource):  # a cluster call: by verb and kind
                name = f"{method} {args[0].plural}" + ("/status" if kwargs.get("status") else "")
            elif method == "evict":
                name = "evict pods"
            else:
                name = "".join(w.capitalize() for w in method.split("_"))
                request = args[0] if args else None
                inline = "source" in getattr(getattr(request, "DESCRIPTOR", None), "oneofs_by_name", {})
                if method == "open_session" or (
                    inline and request is not None and request.WhichOneof("source") == "snapshot"
                ):
                    self.decodes += 1
            t0 = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.calls[name] += 1
                self.seconds[name] += time.perf_counter() - t0

        return counted


@dataclass
class PodTimes:
    nominated_at: float | None = None
    bound_at: float | None = None
    bound_node: str = ""


@dataclass
class Observer:
    """A fake listener (under the store's lock: it only takes note): when each pod was first seen
    nominated and bound, and when the run first reached a terminal phase."""

    pods: dict[str, PodTimes] = field(default_factory=dict)
    terminal_at: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def __call__(self, resource: Resource, kind: str, obj: Obj) -> None:
        now = time.perf_counter()
        if resource is REPACKRUNS and obj["metadata"].get("name") == RUN_NAME and kind != "DELETED":
            if (obj.get("status") or {}).get("phase") in TERMINAL and self.terminal_at is None:
                self.terminal_at = now
                self.done.set()
        elif resource is PODS and kind != "DELETED":
            times = self.pods.setdefault(obj["metadata"].get("uid", ""), PodTimes())
            if (obj.get("status") or {}).get("nominatedNodeName") and times.nominated_at is None:
                times.nominated_at = now
            if obj["spec"].get("nodeName") and times.bound_at is None:
                times.bound_at, times.bound_node = now, obj["spec"]["nodeName"]


def passes_counted(controller: Any, sidecar: Counted) -> list[tuple[int, bool]]:
    """Wrap the controller's Execute reconciler: per pass, (decodes in it, whether it chose placements)."""
    passes: list[tuple[int, bool]] = []
    for rec in controller.reconcilers:
        if isinstance(rec, ExecuteReconciler):
            inner = rec.reconcile

            def reconcile(run: Obj, inner: Any = inner) -> Any:
                decodes, filters = sidecar.decodes, sidecar.calls["Filter"]
                try:
                    return inner(run)
                finally:
                    passes.append((sidecar.decodes - decodes, sidecar.calls["Filter"] > filters))

            rec.reconcile = reconcile  # type: ignore[method-assign]
    return passes


def one_run(objects: list[Obj], goal: str, *, gates: bool, period: float, budget: int, timeout: float,
            target: str) -> dict[str, Any]:  # fmt: skip
    """A fresh fake with ``objects``, the watcher, one Execute run; what it measured."""
    seen = Observer()
    fake = FakeCluster(history=100_000)
    t0 = time.perf_counter()
    fake.load(objects)
    fake.create(NAMESPACES, {"metadata": {"name": "volcano-system"}})
    load_s = time.perf_counter() - t0
    fake.listeners.append(seen)
    plane = ControlPlane(fake, PlaneConfig(scheduler_period=period)).start()
    cluster, sidecar = Counted(fake), Counted(RepackClient(target, timeout=60.0))
    options = WatchOptions(leader_elect=False, execute=ExecuteFlags(cooldown=1.0))
    cache = ClusterCache(cluster, backoff=Backoff(initial=0.1, cap=2.0))
    index, lifter = placement_gate(cluster, cache, options.webhook.gate_timeout)
    if gates:
        fake.admission = index.review
    controller = build_controller(cluster, sidecar, cache, options, [lifter] if gates else [])
    passes = passes_counted(controller, sidecar)
    try:
        t0 = time.perf_counter()
        cache.start()
        if not cache.wait_for_sync(120):
            raise RuntimeError("the watcher's cache did not sync")
        sync_s = time.perf_counter() - t0
        controller.start_leading()
        time.sleep(0.5)  # the start-up resync has passed: the run is brought in by its own event
        for counted in (cluster, sidecar):
            counted.calls.clear()
            counted.seconds.clear()
        created = time.perf_counter()
        fake.create(REPACKRUNS, execute_run(goal, budget))
        if not seen.done.wait(timeout):
            raise RuntimeError(f"the run did not finish within {timeout:.0f} s")
        assert seen.terminal_at is not None
        wall_s = seen.terminal_at - created
    finally:
        controller.stop_leading()
        cache.stop()
        plane.stop()
        sidecar.inner.close()
    status = (fake.get(REPACKRUNS, RUN_NAME) or {}).get("status") or {}
    rels = status.get("relocations") or []
    replacements = []
    for rel in rels:
        placement = rel.get("placement") or {}
        times = seen.pods.get(placement.get("replacementPodUID", ""))
        if times is None:
            continue
        first = times.nominated_at is not None and (times.bound_at is None or times.nominated_at <= times.bound_at)
        selected = placement.get("selectedNodeName", "")
        replacements.append({"pod": f"{rel['namespace']}/{rel['victimPodName']}", "nominated_before_bind": first,
                             "on_selected": bool(selected) and times.bound_node == selected})  # fmt: skip
    summary, result = (status.get("plan") or {}).get("summary") or {}, status.get("result") or {}
    n, placing = len(rels), [d for d, chose in passes if chose]
    calls = sum(cluster.calls.values())
    return {
        "gates": gates, "load_s": load_s, "cache_sync_s": sync_s, "wall_s": wall_s,
        "phase": status.get("phase", ""), "reason": _reason(status), "message": result.get("message", ""),
        "relocations": n, "pod_groups": len({(r["namespace"], r.get("podGroupName", "")) for r in rels}),
        "placements": dict(Counter(str((r.get("placement") or {}).get("phase", "")) for r in rels)),
        "api_requests": calls, "api_requests_per_relocation": calls / n if n else None,
        "api_requests_by_kind": dict(sorted(cluster.calls.items())),
        "replacements": replacements,
        "nominated_before_bind": sum(r["nominated_before_bind"] for r in replacements),
        "on_selected_node": sum(r["on_selected"] for r in replacements),
        "sidecar_calls": dict(sidecar.calls), "sidecar_seconds": {k: round(v, 4) for k, v in sidecar.seconds.items()},
        "passes": len(passes), "placing_passes": len(placing),
        "max_decodes_per_placing_pass": max(placing, default=0),
        "max_decodes_per_pass": max((d for d, _ in passes), default=0),
        "placing_seconds_per_relocation": sum(sidecar.seconds[k] for k in PLACING) / n if n else None,
        "plan_freed_nodes": int(summary.get("freedNodeCount") or 0),
        "result_freed_nodes": int(result.get("freedNodeCount") or 0),
        "frag_before_percent": summary.get("fragBeforePercent"), "frag_after_percent": result.get("fragAfterPercent"),
    }  # fmt: skip


def _reason(status: Obj) -> str:
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    for kind in ("Failed", "Complete", "Progressing"):
        if kind in conds and (kind != "Failed" or conds[kind].get("status") == "True"):
            return str(conds[kind].get("reason", ""))
    return ""


def _median(runs: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("wall_s", "relocations", "api_requests", "api_requests_per_relocation", "nominated_before_bind",
            "on_selected_node", "plan_freed_nodes", "result_freed_nodes", "frag_before_percent", "frag_after_percent",
            "placing_passes", "max_decodes_per_placing_pass", "placing_seconds_per_relocation")  # fmt: skip
    out: dict[str, Any] = {k: _median(runs, k) for k in keys}
    reps = [r for run in runs for r in run["replacements"]]
    out["nominated_before_bind_share"] = sum(r["nominated_before_bind"] for r in reps) / len(reps) if reps else None
    out["on_selected_share"] = sum(r["on_selected"] for r in reps) / len(reps) if reps else None
    out["max_decodes_per_placing_pass"] = max(r["max_decodes_per_placing_pass"] for r in runs)
    out["max_decodes_per_pass"] = max(r["max_decodes_per_pass"] for r in runs)
    out["phases"] = dict(Counter(f"{r['phase']}/{r['reason']}" for r in runs))
    return out


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _report(label: str, runs: list[dict[str, Any]]) -> None:
    print(f"\n{label}: {len(runs)} runs")
    for i, r in enumerate(runs):
        print(f"  run {i + 1}: {r['wall_s']:.2f} s, {r['phase']}/{r['reason']}, {r['relocations']} relocations "
              f"({r['pod_groups']} PodGroups; {r['placements']}), {r['api_requests']} cluster calls, nominated "
              f"before bind {r['nominated_before_bind']}/{len(r['replacements'])}, on the selected node "
              f"{r['on_selected_node']}, freed {r['result_freed_nodes']} of {r['plan_freed_nodes']} planned, "
              f"fragmentation {r['frag_before_percent']}% -> {r['frag_after_percent']}%; {r['passes']} passes, "
              f"{r['placing_passes']} choosing placements; at most {r['max_decodes_per_pass']} decode(s) in a "
              f"pass; choosing placements {r['placing_seconds_per_relocation'] or 0:.3f} s of sidecar "
              f"time per relocation")  # fmt: skip
    calls: Counter[str] = Counter()
    secs: defaultdict[str, float] = defaultdict(float)
    kinds: Counter[str] = Counter()
    for r in runs:
        calls.update(r["sidecar_calls"])
        kinds.update(r["api_requests_by_kind"])
        for k, v in r["sidecar_seconds"].items():
            secs[k] += v
    print(
        "  sidecar calls per run (mean count, seconds): "
        + ", ".join(f"{k} {v / len(runs):.1f} ({secs[k] / len(runs):.3f} s)" for k, v in calls.most_common())
    )
    print("  cluster calls per run (mean) by kind: "
          + ", ".join(f"{k} {v / len(runs):.1f}" for k, v in kinds.most_common()))  # fmt: skip


def _goals(s: dict[str, Any]) -> bool:
    freed = s["result_freed_nodes"] / max(s["plan_freed_nodes"], 1)
    nominated = s["nominated_before_bind_share"] or 0.0
    checks = [
        (freed >= GOAL_FREED, f"planned nodes freed {freed:.0%} (>= {GOAL_FREED:.0%})"),
        (nominated >= GOAL_NOMINATED, f"nominated before bind {nominated:.0%} (>= {GOAL_NOMINATED:.0%})"),
        (s["max_decodes_per_pass"] <= GOAL_DECODES,
         f"decodes of the cluster per pass {s['max_decodes_per_pass']}, in passes choosing placements "
         f"{s['max_decodes_per_placing_pass']} (<= {GOAL_DECODES})"),
        (s["placing_seconds_per_relocation"] <= GOAL_PLACING_S, "sidecar time choosing placements "
         f"{s['placing_seconds_per_relocation']:.3f} s per relocation (<= {GOAL_PLACING_S} s)"),
    ]  # fmt: skip
    for ok, what in checks:
        print(f"  {'✔' if ok else '✘'} {what}")
    return all(ok for ok, _ in checks)


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
        help="with --no-compare-gates: the shipped path (the gate, the default) or bare (--no-gates)",
    )
    p.add_argument("--compare-gates", action=argparse.BooleanOptionalAction, default=True,
                   help="run the bare path and the shipped path (default)")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    ns = p.parse_args(argv)
    logs.configure("console", "warning")
    if ns.source == "openb":
        openb = TRACES / "openb"
        if not (openb / "openb_node_list_all_node.csv").exists():
            print(f"bench.watcher_execute: skipped, the openb trace is not in {openb} (set REPACK_TRACES)")
            return 0
        from sidecar.scenarios.traces import Stop, openb_snapshot

        t0 = time.perf_counter()
        snap, _ = openb_snapshot(openb, Stop(at_fill=ns.fill))
        source, goal = (
            f"openb {ns.fill:.0%} (replayed in {time.perf_counter() - t0:.1f} s)",
            ns.goal or "nvidia.com/gpu",
        )
    else:
        snap, source, goal = load_snapshot(GUIDE), "guide-ascend.json", ns.goal or "huawei.com/ascend-1980"
    objects, labelled = cluster_objects(snap)
    counts = Counter(o["kind"] for o in objects)
    print(f"machine: {machine()}")
    print(f"{source}: {counts['Node']} nodes, {counts['Pod']} pods, {counts['PodGroup']} PodGroups; {labelled} "
          f"ownerless Volcano pods labelled {JOB_NAME} (rebuilt by the Job controller); grace periods 0")  # fmt: skip
    print(f"Execute run: goal {goal}, maxPerRun.podGroups {ns.budget}; scheduler period {ns.schedule_period:g} s")
    results: dict[str, list[dict[str, Any]]] = {}
    with BackgroundServer() as sidecar:
        for gates in [False, True] if ns.compare_gates else [ns.gates]:
            results[LABELS[gates]] = [
                one_run(objects, goal, gates=gates, period=ns.schedule_period, budget=ns.budget, timeout=ns.timeout,
                        target=sidecar.target)
                for _ in range(ns.repeats)
            ]  # fmt: skip
    summaries = {label: _summary(runs) for label, runs in results.items()}
    for label, runs in results.items():
        _report(label, runs)
    goal_met = None
    if LABELS[True] in summaries:
        print("\ngoals, shipped path (medians over the runs; decodes: the most in any pass):")
        goal_met = _goals(summaries[LABELS[True]])
    save("watcher_execute" if ns.source == "openb" else "watcher_execute_guide",
         {"machine": machine(), "source": source, "goal": goal, "budget_pod_groups": ns.budget,
          "schedule_period_s": ns.schedule_period, "repeats": ns.repeats, "pods_labelled_as_jobs": labelled,
          "summaries": summaries, "goal_met": goal_met, "runs": results})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
