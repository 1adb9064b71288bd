"""The report's plots (matplotlib, Agg): occupancy heatmap, freed-vs-cards scatter, Pareto view, curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench import baselines as B
from sidecar.snapshot.state import ClusterState

GPU = "nvidia.com/gpu"


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
    names = list(dict.fromkeys(str(r["fn"]) for r in rows))
    for name, marker in zip(names, "o^sDvP<>", strict=False):
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


def pareto(curve: list[B.Outcome], points: list[B.Outcome], path: Path, title: str) -> None:
    """Ours at each plan prefix (a line) and every baseline's point, on nodes freed vs cards moved;
    each point labelled with the PodGroups it pushes below MinAvailable (the third axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    if curve:
        ax.plot([o.cards_moved for o in curve], [o.freed for o in curve], marker=".", label="ours, plan prefixes")
        last = curve[-1]
        ax.annotate(f"below {last.below_min_available}", (last.cards_moved, last.freed), fontsize=7)
    off = [o for o in points if o.freed < 0]  # nodes lit up: far below, they would squash the chart
    for o, marker in zip(points, "^sDvP<>x*", strict=False):
        if o.freed < 0:
            continue
        ax.scatter([o.cards_moved], [o.freed], marker=marker, label=o.method)
        ax.annotate(f"below {o.below_min_available}", (o.cards_moved, o.freed), fontsize=7)
    ax.set_xlabel("cards moved")
    ax.set_ylabel("nodes freed (net)")
    if off:
        title += "\noff the chart (net freed < 0): " + "; ".join(f"{o.method} {o.freed}" for o in off)
    ax.set_title(title, fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
