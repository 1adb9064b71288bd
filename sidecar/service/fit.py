"""Answer wording shared by Filter, Prioritize and the extender: Volcano's FitErrors histogram."""

from __future__ import annotations

from sidecar.mirror.types import FilterResult


def fit_message(result: FilterResult, wanted: int) -> str:
    """Volcano's FitErrors histogram: "3/5 nodes are unavailable: 1 Insufficient cpu, 2 ...".

    Empty when every requested node is feasible.
    """
    counts: dict[str, int] = {}
    failed = 0
    for reasons, members in result.groups:
        failed += len(members)
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + len(members)
    if not failed:
        return ""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"{failed}/{wanted} nodes are unavailable: {', '.join(parts)}."
