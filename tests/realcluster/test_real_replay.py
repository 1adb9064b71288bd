"""Plans replayed through vc-scheduler on the real control plane (tests/realcluster/replay.py):
on random fragmented pools, an Execute run's rebuilt pods are bound by Volcano exactly where the
watcher nominated them, and there where the plan put them. ``python -m bench.replay`` runs the
same rounds on many more seeds and reports the planned-vs-actual figure."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from realcluster.launcher import RealCluster
from tests.realcluster.fixtures import Watcher
from tests.realcluster.replay import RoundResult, clean, play
from tests.realcluster.scenario import Scenario

pytestmark = pytest.mark.realcluster
SEEDS = (1, 2, 3)  # always played
MORE_SEEDS = range(4, 11)  # played one by one while no round has moved anything yet


@pytest.fixture(scope="module")
def rounds(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RoundResult]]:
    tmp = tmp_path_factory.mktemp("replay")
    setup = Scenario(real_cluster, tmp, "replay-setup")
    setup.install()
    kubeconfig = real_cluster.service_account_kubeconfig("volcano-system", "volcano-scheduler", tmp / "w.kubeconfig")
    watcher = Watcher(kubeconfig, tmp / "watcher.log", "--execute-cooldown", "0",
                      gate_port=real_cluster.gate_port).start()  # fmt: skip
    results = []
    try:
        # Volcano's placement of the arrivals depends on timing, so a seed does not fix how
        # fragmented the pool is after the departures; a round whose pool has nothing to free
        # ends InsufficientImprovement (correctly) and proves nothing about placements, so more
        # seeds are played until one moves pods (or they run out, and the test fails).
        for seed in (*SEEDS, *MORE_SEEDS):
            if seed not in SEEDS and any(r.relocations for r in results):
                break
            s = Scenario(real_cluster, tmp, f"replay-{seed}")
            try:
                results.append(play(s, seed))
            finally:
                clean(s)
        yield results
    finally:
        watcher.stop()
        print(f"watcher log ({watcher.log}):\n{watcher.tail()}")


def test_every_rebuilt_pod_is_bound_where_it_was_nominated_and_planned(rounds: list[RoundResult]) -> None:
    for r in rounds:
        print(r)
        assert r.phase == "Succeeded" or r.reason == "InsufficientImprovement", r
        assert r.bound == r.relocations, r  # every rebuilt pod was bound
        assert not r.off_nomination, r
        assert not r.off_plan, r
    assert sum(r.relocations for r in rounds) > 0, rounds  # the rounds moved something
