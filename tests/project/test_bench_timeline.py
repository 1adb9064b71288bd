"""bench.timeline: the engine on tiny hand-made clusters, the metrics' arithmetic, and a --quick run.

The hand-made cluster: four 8-card nodes, four one-card pods that Volcano's default node order
spreads one per node, then a whole-node gang of two 8-card pods — it cannot start until two nodes
are empty. Without repack it waits for the pods to leave; with the whenPending trigger (targeted
planner or drain) or a scheduled run it starts once the moves are executed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.shapes import TRACES
from bench.timeline import metrics
from bench.timeline.engine import Engine, Execution, JobRun, Record, Sample
from bench.timeline.run import main
from bench.timeline.targeted import check_drain, check_pending, drain_for, targeted_for
from bench.timeline.variants import NoRepack, Scheduled, Trigger
from bench.timeline.workload import GPU, JobSpec, LoadModel, Pod, Workload, assemble
from sidecar.api.v1alpha1 import snapshot_pb2 as pb

GIB = 1024.0**3
LIFE = 10_000.0


def _node(name: str) -> pb.Node:
    node = pb.Node(name=name)
    node.labels.update({"kubernetes.io/hostname": name, "gpu-model": "G2", "accelerator": "gpu"})
    node.allocatable.update({"cpu": 96_000.0, "memory": 384 * GIB, "pods": 110.0, GPU: 8000.0})
    return node


def _fragmented(gang_size: int = 2) -> Workload:
    """Four one-card pods (one per node, by the node order) then a whole-node gang at t=10 s."""
    specs = [JobSpec(float(k), LIFE, (Pod(f"small-{k}", 4000.0, 16 * GIB, 1),), 1, "LS") for k in range(4)]
    gang = tuple(Pod(f"gang-{m}", 88_000.0, 320 * GIB, 8) for m in range(gang_size))
    specs.append(JobSpec(10.0, 600.0, gang, gang_size, "BE", injected=True))
    return assemble("hand-made", [_node(f"n{k}") for k in range(4)], specs, LoadModel(hours=1.0))


def _gang_start(workload: Workload, record: Record) -> float:
    return next(r.start for j, r in zip(workload.jobs, record.runs, strict=True) if j.whole_node)


def test_the_gang_waits_under_fragmentation_without_repack() -> None:
    w = _fragmented()
    engine = Engine(w, NoRepack())
    record = engine.run(3600.0)
    nodes = {int(engine.sim.node_of[t]) for j in w.jobs[:4] for t in j.tasks}
    assert nodes == {0, 1, 2, 3}, "the default node order spreads the one-card pods"
    assert _gang_start(w, record) < 0 and record.samples[-1].waiting_whole_node == 1
    assert not record.executions
    # the pods leave at LIFE + their arrival: two nodes are empty at LIFE + 1, the gang starts then
    record = Engine(w, NoRepack()).run(LIFE + 100)
    assert _gang_start(w, record) == pytest.approx(LIFE + 1.0)


@pytest.mark.parametrize(
    ("choose", "repacker"), [(check_pending, targeted_for), (check_drain, drain_for)], ids=["targeted", "drain"]
)
def test_the_pending_trigger_starts_the_gang_after_a_repack(choose: object, repacker: object) -> None:
    w = _fragmented()
    trigger = Trigger("pending", choose, repacker, min_pending=60.0, check=30.0)  # type: ignore[arg-type]
    record = Engine(w, trigger, restart_delay=60.0).run(3600.0)
    start = _gang_start(w, record)
    assert 70.0 <= start <= 120.0, start  # first look after 60 s of waiting: t = 90
    (ex,) = [e for e in record.executions if e.evicted]
    assert ex.target_started and ex.target_job == 4
    assert ex.evicted == 2 and ex.on_target == 2 and ex.waiting == 0
    assert ex.below_min == 2 and ex.gangs_below_min == 0  # two single-pod PodGroups, no gang
    moved = [r for r in record.runs[:4] if r.evicted]
    assert len(moved) == 2 and all(r.finish == LIFE + k + 60.0 for k, r in enumerate(record.runs[:4]) if r.evicted)
    summary = metrics.summarize(w, record, 0.0)
    assert summary["disruption"]["pods_evicted"] == 2
    assert summary["waiting_whole_node"]["censored"] == 0


def test_a_scheduled_run_frees_nodes_and_the_gang_starts_at_once() -> None:
    w = _fragmented()
    record = Engine(w, Scheduled(minutes=2.0)).run(3600.0)
    assert _gang_start(w, record) == pytest.approx(120.0)
    assert record.executions[0].evicted >= 2


def test_the_cooldown_holds_the_next_run() -> None:
    """After a run that evicted pods no run is admitted for ``cooldown`` seconds."""
    w = _fragmented()
    trigger = Trigger("pending", check_pending, targeted_for, min_pending=0.0, check=30.0)
    engine = Engine(w, trigger, cooldown=300.0)
    engine.run(3600.0)
    assert engine.admit_after == pytest.approx(engine.record.executions[0].time + 300.0)


def test_a_run_is_deterministic() -> None:
    def run() -> dict[str, object]:
        w = _fragmented(3)
        trigger = Trigger("pending", check_pending, targeted_for, min_pending=60.0, check=30.0)
        return metrics.summarize(w, Engine(w, trigger).run(3600.0), 0.0)

    assert run() == run()


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(10, 0, -1)]
    assert metrics.percentile(values, 50) == 5.0
    assert metrics.percentile(values, 95) == 10.0
    assert metrics.percentile(values, 0) == 1.0
    assert metrics.percentile([], 50) is None


def test_metrics_arithmetic() -> None:
    w = _fragmented()
    runs = [JobRun() for _ in w.jobs]
    for k, start in enumerate([0.0, 1.0, 502.0, 3.0]):  # waits 0, 0, 500, 0
        runs[k].start = start
    record = Record(runs, end=1000.0)  # the gang (arrived at 10 s) never starts: censored at 990 s
    record.samples = [
        Sample(0.0, 0.0, 0.0, 0, 0, 4),
        Sample(100.0, 16.0, 32.0, 1, 1, 0),  # saturated (arrived = capacity): 50%
        Sample(200.0, 24.0, 40.0, 1, 1, 0),  # saturated: 75%
        Sample(300.0, 8.0, 16.0, 0, 0, 2),
    ]
    record.executions = [Execution(500.0, "pending", evicted=3, below_min=2, gangs_below_min=1)]
    s = metrics.summarize(w, record, 5.0)
    whole, every = s["waiting_whole_node"], s["waiting_all"]
    assert whole == {"jobs": 1, "censored": 1, "p50_s": 990.0, "p95_s": 990.0, "mean_s": 990.0}
    assert every["jobs"] == 1  # only the gang arrived after the 5 s warm-up
    alloc = s["allocation"]
    assert alloc["at_saturation"] == pytest.approx(0.625)
    assert alloc["mean"] == pytest.approx((16 + 24 + 8) / 32 / 3, abs=1e-4)
    assert alloc["saturated_share_of_window"] == pytest.approx(2 / 3, abs=1e-4)
    d = s["disruption"]
    hours = 995 / 3600
    assert d["jobs_started"] == 1 and d["whole_node_jobs_started"] == 0  # the job started at 502 s
    assert d["pods_evicted_per_hour"] == pytest.approx(3 / hours, abs=1e-3)
    assert d["pods_evicted_per_started_job"] == 3.0
    assert d["below_min_available_per_started_job"] == 2.0 and d["gangs_below_min_available"] == 1
    assert d["pods_evicted_per_started_whole_node_job"] is None


@pytest.mark.skipif(
    not (TRACES / "openb" / "openb_pod_list_default.csv").exists(),
    reason=f"the openb trace is not in {TRACES / 'openb'} (set REPACK_TRACES)",
)
def test_quick_run_writes_byte_identical_results_for_a_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--quick", "--hours", "1", "--seed", "3"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "pods evicted / started job" in out and out.count("✔") + out.count("✘") == 3
    assert main([*args, "--out", str(tmp_path / "b"), "--workers", "1"]) == 0
    first, second = (tmp_path / d / "timeline.json" for d in "ab")
    assert first.read_bytes() == second.read_bytes()
    assert (tmp_path / "a" / "timeline.html").read_text().startswith("<!doctype html>")


def test_a_job_ready_below_its_size_starts_and_its_other_pods_follow() -> None:
    """minAvailable 1 of 2 (traces.py's LS groups): the job starts with one pod on the one empty
    node; the other waits for the next node to empty (Volcano places it in a later cycle)."""
    specs = [JobSpec(float(k), LIFE, (Pod(f"small-{k}", 4000.0, 16 * GIB, 1),), 1, "LS") for k in range(3)]
    pair = tuple(Pod(f"pair-{m}", 88_000.0, 320 * GIB, 8) for m in range(2))
    specs.append(JobSpec(10.0, 3 * LIFE, pair, 1, "LS"))
    w = assemble("hand-made", [_node(f"n{k}") for k in range(4)], specs, LoadModel(hours=1.0))
    engine = Engine(w, NoRepack())
    record = engine.run(LIFE + 100)
    job = w.jobs[3]
    assert record.runs[3].start == 10.0
    placed = [int(engine.sim.node_of[t]) for t in job.tasks]
    assert sorted(placed)[0] >= 0 and engine.waiting == {}, "the second pod found the first emptied node"


def test_a_run_created_in_the_cooldown_waits_for_admission() -> None:
    """Two single-pod whole-node jobs: the first check's run starts the first at once; the next
    check creates a run for the second, which the watcher admits only when the cooldown ends."""
    specs = [JobSpec(float(k), LIFE, (Pod(f"small-{k}", 4000.0, 16 * GIB, 1),), 1, "LS") for k in range(4)]
    specs += [JobSpec(10.0 + k, 600.0, (Pod(f"whole-{k}", 88_000.0, 320 * GIB, 8),), 1, "BE") for k in range(2)]
    w = assemble("hand-made", [_node(f"n{k}") for k in range(4)], specs, LoadModel(hours=1.0))
    trigger = Trigger("pending", check_pending, targeted_for, min_pending=60.0, check=30.0)
    record = Engine(w, trigger, cooldown=300.0).run(3600.0)
    assert [r.start for r in record.runs[4:]] == [90.0, 390.0]
    assert [e.time for e in record.executions] == [90.0, 390.0]
    assert record.verdicts["check/Fragmentation"] == 2 and record.verdicts["check/Unchecked"] == 1
