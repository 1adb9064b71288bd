"""Planner quality: freed nodes vs the exact optimum on small random clusters.

    python -m bench.quality [--instances 200] [--max-nodes 30] [--seed 1] [--time-limit 20]

Each instance is a seeded synth cluster (<= 30 nodes: pools, taints, selectors, gangs, hostname
anti-affinity between replicas of some services) with a random RepackRun scope and budget. The
exact model (a MILP solved by HiGHS, benchmark-only dependency: pip install '.[bench]') chooses
which candidate nodes to empty and where every pod goes, under the same rules: the planner's
candidates (in scope, all goal pods movable), receivers never emptied and never idle, the mirror
core's node checks for each (pod, receiver) pair, capacity on every resource and pod count,
anti-affinity, and maxPerRun. Reported: mean of planner freed / optimal freed over instances
where the optimum frees at least one node. Goal: >= 0.95.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import numpy as np

from bench.common import machine, save
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import S_OK
from sidecar.repack.planner import Planner
from sidecar.repack.spec import RunSpec, validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

GOAL = 0.95
GPU = "nvidia.com/gpu"


def random_instance(rng: np.random.Generator, max_nodes: int) -> tuple[ClusterState, RunSpec]:
    snap = synth(
        SynthOptions(
            nodes=int(rng.integers(6, max_nodes + 1)),
            fill=float(rng.uniform(0.3, 0.85)),
            seed=int(rng.integers(0, 10**9)),
            cards_per_node=int(rng.choice([4, 8])),
        )
    )
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=GPU)])
    if rng.random() < 0.5:
        spec.scope.pod_groups.exclude.selector.match_labels["repack.volcano.sh/protected"] = "true"
    if rng.random() < 0.3:
        pools = rng.choice(["pool-a", "pool-b", "pool-c"], size=int(rng.integers(1, 3)), replace=False)
        spec.scope.nodes.include.selector.match_expressions.add(
            key="accelerator-pool", operator="In", values=list(pools)
        )
    if rng.random() < 0.4:
        spec.max_per_run.pod_groups = int(rng.integers(1, 6))
    if rng.random() < 0.4:
        spec.max_per_run.resources[GPU] = float(rng.integers(2, 24))
    return decode(snap), validate(spec)


def optimum(state: ClusterState, run: RunSpec, time_limit: float) -> tuple[int, str]:
    """Exact maximum number of freed nodes (HiGHS MILP)."""
    import highspy

    mirror = Mirror(state)
    # The planner's own candidate rules decide what the model may empty.
    cands = Planner(mirror, run).prepare().candidates
    if not cands:
        return 0, "no candidates"
    g = state.resource(run.resource)
    sim = Simulation(state)
    free = sim.future_idle()
    pods_left = state.node_alloc[:, state.resource("pods")] - sim.pod_count
    held = sim.used[:, g] - sim.releasing[:, g] + sim.pipelined[:, g]
    receivers = np.flatnonzero(held > 0.1)  # never re-light a node whose goal resource is idle
    cand_index = {c.node: i for i, c in enumerate(cands)}
    p = mirror.predicates
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
    inf = highspy.kHighsInf
    y = [h.addVariable(0, 1) for _ in cands]
    for v in y:
        h.changeColIntegrality(v.index, highspy.HighsVarType.kInteger)
    x: dict[tuple[int, int], Any] = {}
    anti_members: dict[int, list[int]] = {}
    for ci, c in enumerate(cands):
        for t in c.pods.tolist():
            subj = mirror.subject_for_task(t)
            static_ok = p.static(subj.profile, profile_index=subj.profile_index).code == S_OK
            dims = p.fit_dims(subj.req)
            vars_t = []
            for n in receivers.tolist():
                if n == c.node or not static_ok[n] or pods_left[n] < 1:
                    continue
                if any(subj.req[d] - free[n, d] >= 0.1 for d in dims):
                    continue
                v = h.addVariable(0, 1)
                h.changeColIntegrality(v.index, highspy.HighsVarType.kInteger)
                x[(t, n)] = v
                vars_t.append(v)
            # every pod of an emptied node moves exactly once: sum_n x[t, n] = y[c]
            h.addRow(0, 0, len(vars_t) + 1, [v.index for v in vars_t] + [y[ci].index], [1.0] * len(vars_t) + [-1.0])
            prof = subj.profile
            if prof.pod_anti_affinity:
                anti_members.setdefault(int(state.task_profile[t]) * 100_000 + int(state.task_namespace[t]), []).append(
                    t
                )
            if prof.pod_affinity or prof.topology_spread_constraints or prof.host_ports:
                raise RuntimeError("the exact model covers anti-affinity only; synth has no other pod-level terms")
    by_receiver: dict[int, list[tuple[int, Any]]] = {}
    for (t, n), v in x.items():
        by_receiver.setdefault(n, []).append((t, v))
    for n, items in by_receiver.items():
        idx = [v.index for _, v in items]
        if n in cand_index:  # a receiver that is emptied receives nothing: x <= 1 - y
            for v in idx:
                h.addRow(-inf, 1, 2, [v, y[cand_index[n]].index], [1.0, 1.0])
        for r in range(len(state.resources)):
            if r == state.resource("pods"):
                h.addRow(-inf, float(pods_left[n]), len(idx), idx, [1.0] * len(idx))
                continue
            coeff = [float(state.task_req[t, r]) for t, _ in items]
            if any(coeff):
                h.addRow(-inf, float(free[n, r]) + 0.09, len(idx), idx, coeff)
    # hostname anti-affinity within each replica set (members match their own term)
    on = sim.on_node()
    for members in anti_members.values():
        t0 = members[0]
        prof = state.profiles[state.task_profile[t0]]
        assert all(term.topology_key == "kubernetes.io/hostname" for term in prof.pod_anti_affinity)
        group = p.matching_tasks(
            prof.pod_anti_affinity[0].label_selector, frozenset({state.namespaces[state.task_namespace[t0]]})
        )
        staying = np.bincount(state.task_node[group[on[group]]], minlength=state.n_nodes)
        moving = set(members)
        for n in receivers.tolist():
            vs = [x[(t, n)].index for t in moving if (t, n) in x]
            if vs:
                h.addRow(-inf, max(0.0, 1.0 - float(staying[n])), len(vs), vs, [1.0] * len(vs))
    # budgets
    if run.max_pod_groups is not None:
        groups = sorted({m.group for c in cands for m in c.groups})
        z = {grp: h.addVariable(0, 1) for grp in groups}
        for ci, c in enumerate(cands):
            for m in c.groups:
                h.addRow(-inf, 0, 2, [y[ci].index, z[m.group].index], [1.0, -1.0])
        h.addRow(-inf, float(run.max_pod_groups), len(z), [v.index for v in z.values()], [1.0] * len(z))
    if run.max_resource is not None:
        h.addRow(-inf, run.max_resource + 0.09, len(y), [v.index for v in y], [c.cards for c in cands])
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    for v in y:
        h.changeColCost(v.index, 1.0)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    return round(h.getInfo().objective_function_value), status


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--instances", type=int, default=200)
    p.add_argument("--max-nodes", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-limit", type=float, default=20.0)
    ns = p.parse_args(argv)
    try:
        import highspy  # noqa: F401
    except ImportError:
        print("bench.quality needs HiGHS: pip install '.[bench]'", file=sys.stderr)
        return 2
    rng = np.random.default_rng(ns.seed)
    ratios: list[float] = []
    gaps: list[tuple[int, int, int]] = []
    zero_both = 0
    not_optimal = 0
    start = time.perf_counter()
    for k in range(ns.instances):
        state, run = random_instance(rng, ns.max_nodes)
        planned = len(Planner(Mirror(state), run).plan().freed)
        best, status = optimum(state, run, ns.time_limit)
        if status not in ("Optimal", "no fragmentation", "no candidates"):
            not_optimal += 1
        if planned > best and status == "Optimal":
            raise AssertionError(f"instance {k}: planner freed {planned} > optimum {best}: the model is wrong")
        if best == 0:
            zero_both += planned == 0
            continue
        ratios.append(planned / best)
        if planned < best:
            gaps.append((k, planned, best))
    mean = statistics.fmean(ratios) if ratios else float("nan")
    print(
        f"planner quality vs exact optimum (HiGHS): {ns.instances} instances <= {ns.max_nodes} nodes, "
        f"seed {ns.seed}; {machine()}"
    )
    print(
        f"  instances where the optimum frees >= 1 node: {len(ratios)}; both free none: {zero_both}; "
        f"solver not proven optimal: {not_optimal}"
    )
    print(
        f"  mean freed/optimal: {mean:.3f} (goal >= {GOAL}: {'met' if mean >= GOAL else 'MISSED'}); "
        f"min {min(ratios) if ratios else float('nan'):.3f}; below optimum on {len(gaps)} instances"
    )
    print(f"  total time {time.perf_counter() - start:.1f} s")
    save(
        "quality",
        {
            "instances": ns.instances,
            "compared": len(ratios),
            "mean_ratio": mean,
            "below_optimum": gaps[:50],
            "machine": machine(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
