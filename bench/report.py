"""Evidence on real traces: regenerate bench/REPORT.md and its plots in bench/report/.

    pip install -e '.[bench]' && python -m bench.report [--cuts 20] [--quick]

Scenarios are openb replays (sidecar.scenarios.traces) at several card fills and pod lists.
Every method (ours and three baselines, bench/baselines.py) is judged after the fact by the same
mirror-core replay. Each scenario runs twice: the minimal DryRun (no budget) and a first-rollout
budget (maxPerRun.podGroups 20). Small cuts (40 nodes) of each snapshot are solved exactly
(bench/quality.py's MILP) for the optimality ratio. Reads ../shared/traces; exits with a clear
message when the traces are absent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import baselines as B
from bench.common import machine, median_seconds
from bench.decode import build
from bench.quality import optimum
from bench.shapes import TRACES
from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.api.v1alpha1 import spec_pb2
from sidecar.cli.progress import Progress
from sidecar.mirror.core import Mirror
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.scenarios.traces import Stop, dlrm_pods, openb_pods, replay
from sidecar.snapshot.decode import decode
from sidecar.snapshot.state import ClusterState

HERE = Path(__file__).resolve().parent
OUT = HERE / "report"
GPU = "nvidia.com/gpu"
SCENARIOS = [
    ("openb default, 50% cards", "openb_pod_list_default.csv", 0.5),
    ("openb default, 70% cards", "openb_pod_list_default.csv", 0.7),
    ("openb default, 85% cards", "openb_pod_list_default.csv", 0.85),
    ("openb gpuspec33, 70% cards", "openb_pod_list_gpuspec33.csv", 0.7),
    ("openb multigpu50, 70% cards", "openb_pod_list_multigpu50.csv", 0.7),
    ("dlrm, 70% GPUs", "dlrm", 0.7),
]
METHODS = [B.planner_proposal, B.descheduler_high_node_utilization, B.karpenter_consolidation, B.ffd_drain]


def spec(budget: int | None) -> spec_pb2.RepackSpec:
    s = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource=GPU)])
    if budget is not None:
        s.max_per_run.pod_groups = budget
    return s


def cut(snap: pb.Snapshot, nodes: list[int]) -> pb.Snapshot:
    """The sub-cluster of ``nodes`` with the pods placed on them."""
    out = pb.Snapshot(
        name=f"{snap.name}[cut]",
        namespaces=snap.namespaces,
        profiles=snap.profiles,
        pod_groups=snap.pod_groups,
        scheduler_config=snap.scheduler_config,
    )
    remap = {n: i for i, n in enumerate(nodes)}
    out.nodes.extend(snap.nodes[n] for n in nodes)
    c = snap.task_columns
    keep = [i for i, n in enumerate(c.node) if n in remap]
    oc = out.task_columns
    oc.uid.extend(c.uid[i] for i in keep)
    oc.name.extend(c.name[i] for i in keep)
    oc.node.extend(remap[c.node[i]] for i in keep)
    for field in ("namespace", "status", "pod_group", "priority", "profile"):
        values = getattr(c, field)
        getattr(oc, field).extend(values[i] for i in keep)
    for col in c.requests:
        oc.requests.add(resource=col.resource, values=[col.values[i] for i in keep])
    return out


def heatmap(state: ClusterState, node_of: np.ndarray, path: Path, title: str) -> None:  # type: ignore[type-arg]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = state.resource(GPU)
    alloc = state.node_alloc[:, g]
    holds = (state.task_node >= 0) & (state.task_req[:, g] > 0)
    before = np.bincount(state.task_node[holds], weights=state.task_req[holds, g], minlength=state.n_nodes)
    on = (node_of >= 0) & (state.task_req[:, g] > 0)
    after = np.bincount(node_of[on], weights=state.task_req[on, g], minlength=state.n_nodes)
    models = sorted({n.labels.get("gpu-model", "") for n in state.nodes} - {""})
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 1.1 * len(models) + 1), squeeze=False)
    for ax, model in zip(axes[:, 0], models, strict=True):
        idx = np.array([i for i, n in enumerate(state.nodes) if n.labels.get("gpu-model") == model])
        frac_b = before[idx] / alloc[idx]
        order = np.argsort(-frac_b, kind="stable")
        grid = np.vstack([frac_b[order], (after[idx] / alloc[idx])[order]])
        ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.set_yticks([0, 1], ["before", "after"])
        ax.set_xticks([])
        ax.set_ylabel(f"{model}\n{idx.size} nodes", rotation=0, ha="right", va="center", fontsize=8)
    fig.suptitle(title + " — card occupancy per node (columns: nodes sorted by occupancy before)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def scatter(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = dict(zip([m.__name__ for m in METHODS], "o^sD", strict=True))
    for name, marker in markers.items():
        pts = [(r["cards"], r["freed"]) for r in rows if r["fn"] == name and r["budget"] is None]
        if pts:
            ax.scatter(
                *zip(*pts, strict=True), marker=marker, label=str(next(r["method"] for r in rows if r["fn"] == name))
            )
    ax.set_xlabel("cards moved")
    ax.set_ylabel("nodes freed")
    ax.set_title("Nodes freed vs cards moved, trace snapshots (openb, dlrm), no budget")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def line(xs: list[float], ys: list[float], xlabel: str, ylabel: str, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, ys, marker="o")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cuts", type=int, default=20, help="40-node cuts per scenario for the optimum")
    p.add_argument("--quick", action="store_true", help="two scenarios, 5 cuts, small size curve")
    ns = p.parse_args(argv)
    openb = TRACES / "openb"
    if not (openb / "openb_pod_list_default.csv").exists():
        print(f"bench.report needs the traces in {TRACES} (set REPACK_TRACES)", file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    scenarios = SCENARIOS[:2] if ns.quick else SCENARIOS
    cuts = 5 if ns.quick else ns.cuts
    lines: list[str] = []
    rows: list[dict[str, object]] = []
    goals: list[str] = []
    ratios_all: list[float] = []
    start = time.perf_counter()
    progress = Progress("bench.report")  # a live line on a terminal only; the run takes minutes
    for k, (title, pods_file, fill) in enumerate(scenarios):
        progress.step(f"scenario {k + 1}/{len(scenarios)} {title}: replaying the trace")
        if pods_file == "dlrm":
            pods, times = dlrm_pods(TRACES / "dlrm2025")
        else:
            pods, times = openb_pods(openb, pods_file)
        snap, stats = replay(pods, times, Stop(at_fill=fill), progress=progress.update)
        state = decode(snap)
        f = fragmentation(state, GPU)
        lines += [
            f"### {title}",
            "",
            f"{state.n_nodes} nodes ({f.providing_nodes} with GPUs), {int(stats['pods'])} pods, "
            f"{len(snap.pod_groups)} PodGroups; fragmentation {f.percent:.1f}% "
            f"({f.occupied_nodes} occupied, minimum {f.min_occupied_nodes} {f.min_method}).",
            "",
            "| budget | method | freed nodes (net) | idle nodes lit | cards moved | pods moved "
            "| PodGroups below minAvailable | infeasible moves | stranded pods | plan time |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for budget in (None, 20):
            run = validate(spec(budget))
            outcomes = []
            for fn in METHODS:
                progress.step(f"scenario {k + 1}/{len(scenarios)} {title}: {fn.__name__}, budget {budget or 'none'}")
                t0 = time.perf_counter()
                prop = fn(state, run)
                prop.seconds = time.perf_counter() - t0
                o = B.measure(state, run, prop)
                outcomes.append(o)
                rows.append(
                    {
                        "scenario": title,
                        "budget": budget,
                        "fn": fn.__name__,
                        "method": o.method,
                        "freed": o.freed,
                        "cards": o.cards_moved,
                    }
                )
                lines.append(
                    f"| {budget or 'none'} | {o.method} | {o.freed} | {o.lit} | {o.cards_moved:g} | {o.pods_moved} | "
                    f"{o.below_min_available} | {o.infeasible_moves} | {o.stranded_pods} | "
                    f"{prop.seconds * 1e3:.0f} ms |"
                )
                if k == 1 and budget is None and fn is B.planner_proposal and o.node_of is not None:
                    heatmap(state, o.node_of, OUT / "occupancy_openb70.png", title)
            ours, base = outcomes[0], outcomes[1:]
            best = max(base, key=lambda o: (o.freed, -o.cards_moved))
            unaware_below = min(o.below_min_available for o in base)
            checks = [
                ("freed ≥ best baseline", ours.freed >= best.freed, f"{ours.freed} vs {best.freed} ({best.method})"),
                (
                    "cards ≤ that baseline's",
                    ours.cards_moved <= best.cards_moved,
                    f"{ours.cards_moved:g} vs {best.cards_moved:g}",
                ),
                ("zero infeasible moves", ours.infeasible_moves == 0, str(ours.infeasible_moves)),
                (
                    "fewer PodGroups below minAvailable than every baseline",
                    ours.below_min_available < unaware_below,
                    f"{ours.below_min_available} vs best baseline {unaware_below}",
                ),
            ]
            goals += [
                f"| {title} | {budget or 'none'} | {name} | {'met' if ok else 'MISSED'} | {detail} |"
                for name, ok, detail in checks
            ]
        lines.append("")
        # optimality on cuts
        rng = np.random.default_rng(k)
        gpu_nodes = [i for i, n in enumerate(snap.nodes) if n.allocatable.get(GPU, 0) > 0]
        ratios = []
        skipped = 0
        for c in range(cuts):
            progress.step(f"scenario {k + 1}/{len(scenarios)} {title}: exact optimum, cut {c + 1}/{cuts}")
            chosen = sorted(rng.choice(gpu_nodes, size=min(40, len(gpu_nodes)), replace=False).tolist())
            sub = decode(cut(snap, chosen))
            run = validate(spec(None))
            planned = len(Planner(Mirror(sub), run).plan().freed)
            try:
                best_n, _status = optimum(sub, run, 30.0)
            except RuntimeError:  # pod-level terms the exact model does not encode (dlrm spread)
                skipped += 1
                continue
            if best_n > 0:
                ratios.append(planned / best_n)
        ratios_all += ratios
        if ratios:
            lines += [
                f"Optimality on {cuts} random 40-node cuts: mean freed/optimal "
                f"{statistics.fmean(ratios):.3f} over {len(ratios)} cuts where the optimum frees a node "
                f"(min {min(ratios):.2f}).",
                "",
            ]
        if skipped:
            lines += [
                f"{skipped} of {cuts} cuts left out of the optimum: their pods carry topology spread "
                "constraints, which the exact model does not encode.",
                "",
            ]
    scatter(rows, OUT / "freed_vs_cards.png")
    sizes = [1000, 2000, 5000] if ns.quick else [1000, 2000, 5000, 10000, 20000]
    plan_ms, decode_ms, mb = [], [], []
    for n in sizes:
        progress.step(f"size curve: {n:,} nodes")
        synth = build(n, 10 * n, 1)
        data = synth.SerializeToString()
        mb.append(len(data) / 1e6)
        dec, _ = median_seconds(lambda data=data: decode(pb.Snapshot.FromString(data)), 3)
        decode_ms.append(dec * 1e3)
        st = decode(synth)
        t0 = time.perf_counter()
        Planner(Mirror(st), validate(spec(None))).plan()
        plan_ms.append((time.perf_counter() - t0) * 1e3)
    progress.close()
    line(
        sizes,
        plan_ms,
        "nodes (synth, 10 tasks per node)",
        "Plan time (ms), minimal DryRun",
        "Planning time vs cluster size",
        OUT / "plan_time.png",
    )
    line(
        mb,
        decode_ms,
        "snapshot size (MB, columnar protobuf)",
        "parse + decode (ms)",
        "Decode time vs snapshot size",
        OUT / "decode_time.png",
    )
    mean_ratio = statistics.fmean(ratios_all) if ratios_all else float("nan")
    report = [
        "# Evidence on real traces",
        "",
        f"Regenerate with `pip install -e '.[bench]' && python -m bench.report` ({machine()}; "
        f"took {time.perf_counter() - start:.0f} s). Snapshots are replays of the openb trace "
        "(`repack-sidecar snapshot from-trace openb --fill F`): pods placed one by one by the mirror core with "
        "Volcano's default scheduler configuration. Every method is judged by the same mirror-core replay "
        "(bench/baselines.py `measure`): an infeasible move is a failure, an eviction without a target is "
        "re-placed where Volcano would put it.",
        "",
        "Methods: **ours** (the planner); **descheduler HighNodeUtilization** (evict from under-50%-used nodes "
        "while aggregate free capacity remains, no per-node fit); **Karpenter-style** (fewest-pods-first, one "
        "node at a time, drained when the scheduler would place all its pods elsewhere); **first-fit-decreasing "
        "drain** (least-used nodes first, pods largest first into the fullest nodes with room in cards, no other "
        "constraint, no gangs). All use the same scope rules and, in the budgeted runs, maxPerRun.podGroups 20.",
        "",
        "## Headline",
        "",
        f"* Mean optimality ratio on 40-node cuts (exact MILP, HiGHS): **{mean_ratio:.3f}** "
        f"over {len(ratios_all)} cuts (goal ≥ 0.95: {'met' if mean_ratio >= 0.95 else 'MISSED'}).",
        "* Goals per scenario (table below): ours never makes an infeasible move; see the misses and why.",
        "",
        "| scenario | budget | goal | result | detail |",
        "| --- | --- | --- | --- | --- |",
        *goals,
        "",
        "*Freed nodes* are net: nodes a method emptied minus idle nodes its moves lit up (a pod moved onto an "
        "idle node saves no node; the planner never does that, receiver rule 1, while the scheduler-driven "
        "baselines may). The fragmentation a method can remove is bounded by occupied minus minimum nodes "
        "(per scenario, above its table). Why the misses. *PodGroups below MinAvailable*: on openb 78% of "
        "the PodGroups have one pod, and moving a one-pod group always leaves it below MinAvailable, so the "
        "count mostly tracks how many pods a method moves; a baseline that frees nothing (the descheduler "
        "here) trivially pushes none below. The gang cost ranks such moves last but is not a prohibition (the "
        "guide: exclude what must not be interrupted), and the minimal DryRun has no budget, so the planner "
        "empties every node it can. *Freed nodes / cards*: the planner chooses by interruption cost, not by "
        "nodes per budget, so under a 20-PodGroup budget a fewest-pods-first order can free more nodes.",
        "",
        "DLRM instances carry per-node limits (max_instance_per_node) modelled as anti-affinity or hostname "
        "spread; cuts whose pods have spread constraints are left out of the optimum (the MILP encodes "
        "anti-affinity only).",
        "",
        "## Plots",
        "",
        "![occupancy](report/occupancy_openb70.png)",
        "",
        "![freed vs cards](report/freed_vs_cards.png)",
        "",
        "![plan time](report/plan_time.png) ![decode time](report/decode_time.png)",
        "",
        "| nodes | snapshot MB | decode ms | plan ms |",
        "| --- | --- | --- | --- |",
        *[f"| {n} | {m:.1f} | {d:.0f} | {t:.0f} |" for n, m, d, t in zip(sizes, mb, decode_ms, plan_ms, strict=True)],
        "",
        "## Scenarios",
        "",
        *lines,
    ]
    (HERE / "REPORT.md").write_text("\n".join(report) + "\n")
    print(f"wrote {HERE / 'REPORT.md'} and {OUT}/*.png in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
