"""Departures (issue 27 item 4): fill to a high-water mark, then whole workloads leave — in the
recorded deletion order or a seeded random one — down to a lower fill, optionally refilled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sidecar.errors import InputError
from sidecar.mirror.core import Mirror
from sidecar.scenarios.traces import Stop, openb_snapshot
from sidecar.snapshot.decode import decode

GPU = "nvidia.com/gpu"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """12 nodes of 8 cards; 120 workloads of 1-4 cards (each its own: created > 10 min apart, two
    of them with two pods), deletion times shuffled."""
    rng = np.random.default_rng(3)
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"] + [f"n{i:02d},64000,262144,8,V100M32" for i in range(12)]
    rows = [HEADER]
    dies = rng.permutation(120) * 1000 + 10**6
    for k in range(120):
        cards = int(rng.choice([1, 2, 4]))
        born = k * 1000
        rows.append(f"w{k:03d},4000,8192,{cards},1000,,BE,Running,{born},{dies[k]},{born}")
        if k in (5, 50):  # a second pod of the same spec within 10 minutes: one workload of two
            rows.append(f"w{k:03d}b,4000,8192,{cards},1000,,BE,Running,{born + 1},{dies[k]},{born + 1}")
    (tmp_path / "openb_node_list_all_node.csv").write_text("\n".join(nodes) + "\n")
    (tmp_path / "openb_pod_list_default.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def groups(snap: object) -> dict[str, set[str]]:
    state = decode(snap)  # type: ignore[arg-type]
    out: dict[str, set[str]] = {}
    for t, g in enumerate(state.task_pod_group.tolist()):
        if g >= 0:
            out.setdefault(state.pod_groups[g].name, set()).add(state.task_name[t])
    return out


def test_departures_take_whole_workloads_down_to_the_fill(trace: Path) -> None:
    high, _ = openb_snapshot(trace, Stop(at_fill=0.9))
    churned, stats = openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=1))
    assert stats["high_fill"] >= 0.9 and stats["fill"] <= 0.5
    assert stats["fill"] > 0.5 - 4 / 96  # it stops at the first workload that reaches the fill
    before, after = groups(high), groups(churned)
    assert after and set(after) < set(before)
    assert all(after[g] == before[g] for g in after)  # a workload stays whole or leaves whole
    assert stats["departed_workloads"] == len(before) - len(after)
    assert stats["pods"] + stats["departed_pods"] == sum(map(len, before.values()))
    state = decode(churned)
    mirror = Mirror(state)
    for t in np.flatnonzero(state.task_node >= 0):  # every pod left where it is still fits there
        assert mirror.filter(mirror.subject_for_task(int(t))).feasible[state.task_node[t]]


def test_the_random_order_is_seeded_and_the_recorded_order_follows_deletions(trace: Path) -> None:
    one = openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=7))[0]
    assert one == openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=7))[0]
    assert one != openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=8))[0]
    recorded, _ = openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, departures="recorded"))
    high, _ = openb_snapshot(trace, Stop(at_fill=0.9))
    rows = [r.split(",") for r in (trace / "openb_pod_list_default.csv").read_text().splitlines()[1:]]
    dies = {r[0]: int(r[9]) for r in rows}
    stayed = set(decode(recorded).task_name)
    gone = set(decode(high).task_name) - stayed  # whole workloads, placed or still pending
    assert gone and max(dies[p] for p in gone) <= min(dies[p] for p in stayed)  # earliest deletions leave first


def test_refill_resumes_arrivals_with_the_traces_next_pods(trace: Path) -> None:
    churned, _ = openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=1))
    refilled, stats = openb_snapshot(trace, Stop(at_fill=0.9, depart_to=0.5, seed=1, refill=0.8))
    assert stats["fill"] >= 0.8 and "refill_unplaced" in stats
    high, _ = openb_snapshot(trace, Stop(at_fill=0.9))
    departed = set(decode(high).task_name) - set(decode(churned).task_name)
    now = set(decode(refilled).task_name)
    assert not departed & now  # nothing departed comes back
    assert now - set(decode(high).task_name)  # new pods arrived


ONE_OF = "random, recorded"
REFILL = "needs depart_to and must be within (depart_to, 1]"


@pytest.mark.parametrize(
    ("stop", "field", "problem"),
    [
        (dict(at_fill=0.9, depart_to=0.9), "depart_to", "needs at_fill and must be within [0, at_fill), got 0.9"),
        (dict(at_time=10.0, depart_to=0.1), "depart_to", "needs at_fill and must be within [0, at_fill), got 0.1"),
        (
            dict(at_fill=0.9, depart_to=0.5, departures="lifo"),
            "departures",
            "must be one of random, recorded, got 'lifo'",
        ),
        (
            dict(at_fill=0.9, depart_to=0.5, refill=0.4),
            "refill",
            "needs depart_to and must be within (depart_to, 1], got 0.4",
        ),
        (dict(at_fill=0.9, refill=0.95), "refill", "needs depart_to and must be within (depart_to, 1], got 0.95"),
        (dict(), "at_fill/at_time", "give exactly one of at_fill and at_time"),
    ],
)
def test_a_stop_that_cannot_be_played_is_refused_naming_the_field(
    stop: dict[str, object], field: str, problem: str
) -> None:
    with pytest.raises(InputError) as exc:
        Stop(**stop)  # type: ignore[arg-type]
    assert (exc.value.field, exc.value.problem) == (field, problem)
