"""References a snapshot leaves dangling, said as warnings rather than refused.

Real sessions contain them: Volcano's cache leaves out a node whose Node object is gone while its
Job keeps the task (with ``NodeName`` set) until pod GC, and an informer may see a pod before its
PodGroup or after the PodGroup was deleted. :func:`sidecar.snapshot.decode.decode` keeps such a
task (on no node; in no PodGroup, so not movable) and these functions word what it kept, once per
kind with a count and the first example, bounded in size like error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from sidecar.errors import bounded
from sidecar.snapshot.taskstatus import PENDING, TERMINATED_MASK
from sidecar.wording import count

#: a producer's own warnings kept per snapshot (the rest are counted): answers stay small
MAX_WARNINGS = 20


def producer_warnings(notes: Sequence[str]) -> list[str]:
    out = [bounded(n) for n in notes[:MAX_WARNINGS]]
    if len(notes) > MAX_WARNINGS:
        out.append(f"{count(len(notes) - MAX_WARNINGS, 'more warning')} from the snapshot's producer left out")
    return out


def dangling_warnings(
    t_node: npt.NDArray[np.int32],
    t_status: npt.NDArray[np.int32],
    n_col: int,
    ghost_nodes: list[tuple[int, str]],
    missing_groups: dict[int, str],
    pod: Callable[[int], str],
) -> list[str]:
    """The warnings for references the snapshot does not resolve (see the module docstring): one
    per kind, with a count and the first example."""
    out = []
    # a placed task (not Pending, not terminated) without a node: a row naming an unlisted node,
    # or a columnar one whose producer could not index its node
    placed = (t_status != PENDING) & ((t_status & TERMINATED_MASK) == 0)
    unlisted = set(np.flatnonzero(placed & (t_node < 0)).tolist()) | {n_col + k for k, _ in ghost_nodes}
    if unlisted:
        if ghost_nodes:
            k, node = ghost_nodes[0]
            example = f'tasks[{k}] "{pod(n_col + k)}" on "{node}"'
        else:
            i = min(unlisted)
            example = f'task_columns.node[{i}] "{pod(i)}"' if i < n_col else f'tasks[{i - n_col}] "{pod(i)}"'
        out.append(
            bounded(
                f"{count(len(unlisted), 'task')} on nodes the snapshot does not list (e.g. {example}): counted on "
                "no node, as Volcano's session counts a task whose Node object is gone"
            )
        )
    if missing_groups:
        i, group = next(iter(missing_groups.items()))
        out.append(
            bounded(
                f"{count(len(missing_groups), 'task')} of PodGroups the snapshot does not list (e.g. "
                f'tasks[{i - n_col}] "{pod(i)}": PodGroup "{group}"): not movable, so their nodes are no candidates'
            )
        )
    return out
