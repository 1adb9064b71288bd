"""Planner quality: freed nodes vs the exact optimum on small random clusters.

    python -m bench.quality [--instances 200] [--max-nodes 30] [--seed 1] [--time-limit 20]

Each instance is a seeded synth cluster (<= 30 nodes: pools, taints, selectors, gangs, hostname
anti-affinity between replicas of some services) with a random RepackRun scope and budget. The
exact model (a MILP solved by HiGHS, benchmark-only dependency: pip install '.[bench]') chooses
which candidate nodes to empty and where every pod goes, under the same rules: the planner's
candidates (in scope, all goal pods movable), receivers never emptied and never idle, the mirror
core's node checks for each (pod, receiver) pair, capacity on every resource and pod count,
anti-affinity, and maxPerRun. Reported: mean of planner freed / optimal freed over instances
where the optimum frees at least one node, for the greedy planner and for ``planner.strategy:
Exact`` (greedy, then the exact model warm-started from it, kept only if better). Goal: >= 0.99.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from bench.common import machine, save
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.mirror.core import Mirror
from sidecar.repack import exact
from sidecar.repack.planner import Planner
from sidecar.repack.result import PlanResult
from sidecar.repack.spec import RunSpec, validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

GOAL = 0.99
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
    """Exact maximum number of freed nodes: the sidecar's own exact model
    (sidecar/repack/exact.py, ``planner.strategy: Exact``) solved from scratch, with no size cap.
    RuntimeError when the model cannot express the instance (pod affinity, spread, ports)."""
    best, status, _ = optimum_nodes(state, run, time_limit)
    return best, status


def optimum_nodes(state: ClusterState, run: RunSpec, time_limit: float) -> tuple[int, str, list[int]]:
    """:func:`optimum`, with the nodes the optimal solution empties."""
    planner = Planner(Mirror(state), run)
    cands = planner.prepare().candidates
    if not cands:
        return 0, "no candidates", []
    try:
        model = exact.Model(planner, cands, max_pairs=None)
    except exact.Unsupported as exc:
        raise RuntimeError(f"the exact model cannot express this instance: {exc}") from exc
    solution = model.solve(None, time_limit)
    nodes = [cands[ci].node for ci in solution.emptied] if solution is not None else []
    return len(nodes), model.status, nodes


def why_short(state: ClusterState, greedy: PlanResult, optimal: list[int]) -> str:
    """Which choices kept the greedy below the optimum: the nodes it emptied that the optimum
    keeps, and for each node only the optimum empties, what the greedy did with it (a receiver
    of which emptied nodes' pods, or its explanation)."""
    name = state.node_names
    ours, best = set(greedy.freed), set(optimal)
    parts = []
    for n in sorted(ours - best, key=lambda n: name[n]):
        targets = sorted({m.target for m in greedy.moves if m.source == n}, key=lambda t: name[t])
        parts.append(f"the greedy emptied {name[n]} (kept by the optimum) into {', '.join(name[t] for t in targets)}")
    for n in sorted(best - ours, key=lambda n: name[n]):
        sources = sorted({m.source for m in greedy.moves if m.target == n}, key=lambda s: name[s])
        if sources:
            senders = ", ".join(name[s] for s in sources)
            parts.append(f"{name[n]} (emptied by the optimum) received the pods of {senders}")
        else:
            o = greedy.outcomes.get(n)
            what = f"{o.reason}: {o.message}" if o is not None else "no candidate"
            parts.append(f"{name[n]} (emptied by the optimum) was not emptied ({what})")
    return "; ".join(parts)


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
    gaps: list[tuple[int, int, int, str]] = []
    zero_both = 0
    exact_ratios: list[float] = []
    exact_wins = 0
    not_optimal = 0
    start = time.perf_counter()
    for k in range(ns.instances):
        state, run = random_instance(rng, ns.max_nodes)
        planner = Planner(Mirror(state), run)
        greedy = planner.plan()
        planned = len(greedy.freed)
        improved = exact.improve(planner, planner.prepare(), greedy)
        with_exact = len(improved.freed) if improved is not None else planned
        exact_wins += with_exact > planned
        best, status, optimal = optimum_nodes(state, run, ns.time_limit)
        if status not in ("Optimal", "no fragmentation", "no candidates"):
            not_optimal += 1
        if planned > best and status == "Optimal":
            raise AssertionError(f"instance {k}: planner freed {planned} > optimum {best}: the model is wrong")
        if best == 0:
            zero_both += planned == 0
            continue
        ratios.append(planned / best)
        exact_ratios.append(with_exact / best)
        if planned < best:
            gaps.append((k, planned, best, why_short(state, greedy, optimal)))
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
        f"  greedy: mean freed/optimal {mean:.3f} {'✔' if mean >= GOAL else '✘'} (goal >= {GOAL}); "
        f"min {min(ratios) if ratios else float('nan'):.3f}; below optimum on {len(gaps)} instances"
    )
    exact_mean = statistics.fmean(exact_ratios) if exact_ratios else float("nan")
    print(
        f"  planner.strategy Exact: mean freed/optimal {exact_mean:.3f} {'✔' if exact_mean >= GOAL else '✘'} "
        f"(goal >= {GOAL}); beats greedy on {exact_wins} instances"
    )
    for k, got, best, why in gaps[:10]:
        print(f"    worst: instance {k} (seed {ns.seed}): greedy frees {got} of {best}: {why}")
    print(f"  total time {time.perf_counter() - start:.1f} s")
    save(
        "quality",
        {
            "instances": ns.instances,
            "compared": len(ratios),
            "mean_ratio": mean,
            "exact_mean_ratio": exact_mean,
            "exact_beats_greedy": exact_wins,
            "below_optimum": [list(g) for g in gaps[:50]],
            "machine": machine(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
