"""Trace replay: the mapping on a tiny hand-written trace, and realism on the real one if present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.mirror.core import Mirror
from sidecar.repack.fragmentation import fragmentation
from sidecar.scenarios.traces import Stop, openb_snapshot
from sidecar.snapshot.decode import decode

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,8,V100M16
n1,64000,262144,8,V100M32
n2,64000,262144,2,T4
c0,96000,393216,0,
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,4000,8192,1,460,,LS,Running,0,100,0
p1,4000,8192,1,460,,LS,Running,10,1000,10
p2,8000,16384,4,1000,V100M16|V100M32,BE,Running,20,1000,20
p3,2000,4096,0,0,,BE,Running,30,1000,30
p4,8000,16384,2,1000,T4,BE,Running,2000,3000,2000
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    (tmp_path / "openb_node_list_all_node.csv").write_text(NODES)
    (tmp_path / "openb_pod_list_default.csv").write_text(PODS)
    return tmp_path


def test_mapping_and_time_replay(trace: Path) -> None:
    snap, stats = openb_snapshot(trace, Stop(at_time=500))
    state = decode(snap)
    names = state.task_name
    assert sorted(names) == ["p1", "p2", "p3"]  # p0 deleted at 100, p4 not created yet
    g = state.resource("nvidia.com/gpu")
    p1, p2, p3 = (names.index(x) for x in ("p1", "p2", "p3"))
    assert state.task_req[p1, g] == 1000  # a shared fraction holds a whole card
    assert state.task_req[p2, g] == 4000
    assert state.task_req[p3, g] == 0 and state.task_pod_group[p3] == -1
    assert state.profiles[state.task_profile[p3]].scheduler_name == "default-scheduler"
    term = state.profiles[state.task_profile[p2]].required_node_affinity[0].match_expressions[0]
    assert (term.key, term.operator, list(term.values)) == ("gpu-model", "In", ["V100M16", "V100M32"])
    assert state.node_names[state.task_node[p2]] in ("n0", "n1")
    assert stats["time"] == 100 and stats["unplaced"] == 0  # the last event before 500: p0 leaves
    gang = state.pod_groups[state.task_pod_group[p2]]
    assert gang.min_member == 1 and gang.owner_references[0].kind == "Job"


def test_fill_replay_ignores_deletions_and_every_pod_is_feasible(trace: Path) -> None:
    snap, stats = openb_snapshot(trace, Stop(at_fill=0.4))
    state = decode(snap)
    assert stats["fill"] >= 0.4
    assert "p0" in state.task_name  # deletions are not replayed for fill
    # Every placed pod passes the mirror where it stands (checked off its own node).
    mirror = Mirror(state)
    for t in np.flatnonzero(state.task_node >= 0):
        assert mirror.filter(mirror.subject_for_task(int(t))).feasible[state.task_node[t]]


TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces" / "openb"


@pytest.mark.skipif(
    not (TRACES / "openb_pod_list_default.csv").exists(), reason="../shared/traces/openb is not present on this machine"
)
def test_real_openb_replay_is_fragmented_and_plannable() -> None:
    from sidecar.api.v1alpha1 import spec_pb2
    from tests.plan_cases import plan_status

    snap, stats = openb_snapshot(TRACES, Stop(at_fill=0.5))
    state = decode(snap)
    f = fragmentation(state, "nvidia.com/gpu")
    assert 0.5 <= stats["fill"] < 0.52
    assert f.occupied_nodes > f.min_occupied_nodes
    spec = spec_pb2.RepackSpec(mode=spec_pb2.RepackSpec.DryRun, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
    spec.max_per_run.pod_groups = 20
    status = plan_status(state, spec)
    assert status.conditions[0].reason == "RepackRecommended"
    assert len({m.pod_group_name for m in status.plan.moves}) <= 20
    assert isinstance(snap, pb.Snapshot)


DLRM = Path(__file__).resolve().parents[3] / "shared" / "traces" / "dlrm2025"


@pytest.mark.skipif(
    not (DLRM / "disaggregated_DLRM_trace.csv").exists(),
    reason="../shared/traces/dlrm2025 is not present on this machine",
)
def test_real_dlrm_replay_models_apps_and_per_node_limits() -> None:
    from sidecar.scenarios.traces import dlrm_snapshot

    snap, stats = dlrm_snapshot(DLRM, Stop(at_fill=0.3))
    state = decode(snap)
    assert stats["fill"] >= 0.3
    gpu = state.resource("nvidia.com/gpu")
    hn = np.flatnonzero(state.task_req[:, gpu] > 0)
    assert (state.task_pod_group[hn] >= 0).all()  # every HN instance belongs to its application's PodGroup
    cn = np.flatnonzero(state.task_req[:, gpu] == 0)
    assert (state.task_pod_group[cn] == -1).all()
    profiles = [state.profiles[p] for p in np.unique(state.task_profile[hn])]
    # the trace's limits are -1, 2, 4, 8, 10, 16 (never 1): hostname spread with maxSkew k
    skews = {c.max_skew for p in profiles for c in p.topology_spread_constraints}
    assert skews and skews <= {2, 4, 8, 10, 16}
    # A per-node limit holds in the replayed placement: at most k instances of an app per node.
    mirror = Mirror(state)
    for t in hn[:200]:
        assert mirror.filter(mirror.subject_for_task(int(t))).feasible[state.task_node[t]]
