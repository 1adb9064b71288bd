"""The extender intake on the bodies Volcano itself sends: ``volcano-oracle`` opens a session of
the cluster in Volcano's scheduler cache and writes it with the extender plugin's own
``json.Marshal`` (go/plugin/fidelity writeSessionBody). Decoded, it must be the cluster the
objects describe: the same nodes, tasks, placements and PodGroups, and the same answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import fidelity as F
from sidecar.fake.objects import objects_from_snapshot
from sidecar.mirror.conf import DEFAULT_CONF
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot import taskstatus as ts
from sidecar.snapshot.forms import to_rows
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.volcano import snapshot_from_session
from tests.server.test_extender_decode import GUIDE, answers, plan


@pytest.fixture(scope="module")
def oracle(volcano_oracle: Path) -> Iterator[F.Oracle]:
    with F.Oracle(volcano_oracle) as o:
        yield o


def volcano_body(oracle: F.Oracle, snap, tmp: Path) -> bytes:  # type: ignore[no-untyped-def]
    path = tmp / "body.json"
    oracle.session_body(objects_from_snapshot(snap), DEFAULT_CONF, path)
    return path.read_bytes()


def test_the_guide_from_volcanos_own_body_plans_the_same(oracle: F.Oracle, tmp_path: Path) -> None:
    snap = load_snapshot(GUIDE)
    back = snapshot_from_session(volcano_body(oracle, snap, tmp_path))
    assert answers(back) == answers(snap)
    assert plan(back) == plan(snap)


def test_a_synth_cluster_from_volcanos_own_body_keeps_every_task(oracle: F.Oracle, tmp_path: Path) -> None:
    snap = to_rows(synth(SynthOptions(nodes=30, fill=0.7, seed=3)))
    raw = volcano_body(oracle, snap, tmp_path)
    assert raw.startswith(b'{"Jobs":')  # Volcano's field names, in its struct's order
    back = snapshot_from_session(raw)
    assert sorted(n.name for n in back.nodes) == sorted(n.name for n in snap.nodes)
    for got in back.nodes:
        want = next(n for n in snap.nodes if n.name == got.name)
        assert dict(got.allocatable) == pytest.approx(dict(want.allocatable), abs=1.0)
    want_tasks = {(t.namespace, t.name, t.node, t.status) for t in snap.tasks if t.status != ts.PENDING}
    assert {(t.namespace, t.name, t.node, t.status) for t in back.tasks if t.status != ts.PENDING} == want_tasks
    assert {(g.namespace, g.name, g.min_member) for g in back.pod_groups} == {
        (g.namespace, g.name, g.min_member) for g in snap.pod_groups
    }
    assert answers(back) == answers(snap)
