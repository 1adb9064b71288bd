"""The per-domain counting rule of topology spread and required anti-affinity, written once.

Both checks count, per value of a node label (a domain), the pods of some set placed there, and
fail a node when

    count(node's domain) + self_match - minimum > maxSkew                       (:func:`too_skewed`)

PodTopologySpread (DoNotSchedule): ``self_match`` is 1 when the pod matches its own selector, the
minimum is the smallest count over the eligible domains (0 with fewer domains than minDomains,
:func:`domain_min`); releasing pods do not count. Required anti-affinity (the pod's own terms and
existing pods' terms toward it): maxSkew 0, minimum 0, self 0 -- a node fails when its domain
holds one such pod, releasing ones included (:func:`counted`).

The Filter (spread.py, interpod.py), the search's reference loop and the exact planner's spread
caps (:func:`room`) read these; the kernels read ``too_skewed`` and ``domain_min`` in
``ext/volcano.pxd``, the same expressions.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from sidecar.mirror.simulation import Simulation
from sidecar.snapshot.taskstatus import RELEASING

I64 = npt.NDArray[np.int64]
Tasks = npt.NDArray[np.intp]
Count = TypeVar("Count", int, I64)


def too_skewed(count: Count, self_match: int, minimum: int, max_skew: int) -> bool | npt.NDArray[np.bool_]:
    """Does a node whose domain holds ``count`` pods fail the rule (ints, or counts per node)?"""
    out: bool | npt.NDArray[np.bool_] = count + self_match - minimum > max_skew
    return out


def domain_min(counts: I64, domains: npt.NDArray[np.integer], zero_min: bool) -> int:
    """The minimum the skew is measured from: 0 where forced (``zero_min``) or without domains,
    else the smallest of ``counts`` over ``domains``."""
    if zero_min or not domains.size:
        return 0
    return int(counts[domains].min())


def room(count: int, minimum: int, max_skew: int) -> int:
    """How many more pods that count in their own domain the domain takes, one after another,
    before :func:`too_skewed` fails (the minimum held fixed)."""
    return max(0, max_skew + minimum - count)


def counted(sim: Simulation, tasks: Tasks, *, include_releasing: bool) -> Tasks:
    """The pods of ``tasks`` a domain counts now: on a node (not terminated, not a refused Binding
    task), Releasing ones only where ``include_releasing`` (anti-affinity, not spread)."""
    keep = sim.on_node()[tasks]
    if not include_releasing:
        keep &= sim.status[tasks] != RELEASING
    out: Tasks = tasks[keep]
    return out
