"""``planner.strategy: Exact``: on random small clusters its plan replays through an independent
judge, never frees fewer nodes than greedy, and reaches the optimum; what the model cannot express
falls back to greedy; HiGHS' banner never reaches stdout (the JSON log)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.api.v1alpha1 import spec_pb2
from sidecar.mirror.core import Mirror
from sidecar.repack import exact
from sidecar.repack.planner import Planner
from sidecar.repack.spec import validate
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.decode import decode
from sidecar.snapshot.forms import to_rows

pytest.importorskip("highspy", reason="HiGHS is part of the test extra")

from bench import baselines as B
from bench.quality import optimum, random_instance


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31))
def test_exact_replays_never_loses_to_greedy_and_is_optimal(seed: int) -> None:
    state, run = random_instance(np.random.default_rng(seed), 24)
    planner = Planner(Mirror(state), run)
    greedy = planner.plan()
    improved = exact.improve(planner, planner.prepare(), greedy, time_limit=10.0)
    best, status = optimum(state, run, 10.0)
    final = improved if improved is not None else greedy
    if status == "Optimal":
        assert len(final.freed) == best, "warm-started from greedy and solved to optimality"
    if improved is None:
        return
    assert len(improved.freed) >= len(greedy.freed)
    judged = B.measure(state, run, B.Proposal("exact", [(m.task, m.target) for m in improved.moves]))
    assert (judged.infeasible_moves, judged.stranded_pods) == (0, 0)
    assert judged.freed == len(improved.freed)
    assert {m.source for m in improved.moves} == set(improved.freed)
    for n in improved.freed:
        assert improved.outcomes[n].selected and improved.outcomes[n].reason == "Emptied"


def test_greedy_stays_when_the_model_cannot_express_a_constraint() -> None:
    snap = to_rows(synth(SynthOptions(nodes=12, fill=0.5, seed=7)))
    for task in snap.tasks:
        term = task.profile.topology_spread_constraints.add()
        term.topology_key, term.max_skew, term.when_unsatisfiable = "topology.kubernetes.io/zone", 1, "DoNotSchedule"
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    planner = Planner(Mirror(state), run)
    cands = planner.prepare().candidates
    if not cands or not any(
        state.profiles[state.task_profile[int(t)]].topology_spread_constraints for c in cands for t in c.pods
    ):
        pytest.skip("the spread pods are on no candidate in this seed")
    with pytest.raises(exact.Unsupported):
        exact.Model(planner, cands)
    assert exact.improve(planner, planner.prepare(), planner.plan()) is None


def test_the_solver_banner_never_reaches_stdout() -> None:
    """In a fresh process (the banner comes once per process, at the first solver)."""
    code = "from sidecar.repack import exact; exact._highs(); exact._highs(); print('done')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"


def test_the_solver_runs_without_the_rins_sub_mip() -> None:
    """RINS' sub-MIP presolve could outlive the time limit by tens of minutes (highspy 1.16.0, an
    openb cut): a Plan with strategy Exact must end near its limit, so the solver runs without it."""
    h = exact._highs()
    status, value = h.getOptionValue("mip_heuristic_run_rins")
    assert str(status).endswith("kOk") and value is False


def test_a_plan_request_with_strategy_exact_frees_more_than_greedy() -> None:
    """Through the service, as every front door calls it: a seeded cluster where the exact model
    empties one node more than the greedy plan; every move in the answer names real nodes."""
    from sidecar.api.v1alpha1 import service_pb2
    from sidecar.service import Deadline, RepackService

    snap = synth(SynthOptions(nodes=24, fill=0.7, seed=1, cards_per_node=8))
    service = RepackService()

    def plan(strategy: int) -> spec_pb2.RepackSpec:
        spec = spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
        spec.planner.strategy = strategy
        return service.plan(service_pb2.PlanRequest(snapshot=snap, spec=spec), Deadline(60)).status.plan

    greedy, best = plan(spec_pb2.PlannerOptions.Greedy), plan(spec_pb2.PlannerOptions.Exact)
    assert (len(greedy.freed_nodes), len(best.freed_nodes)) == (4, 5)
    names = {n.name for n in snap.nodes}
    assert all(p.from_node in best.freed_nodes and p.to_node in names for m in best.moves for p in m.pods)
    assert {c.node for c in best.candidates if c.selected} == set(best.freed_nodes)
    unset = plan(spec_pb2.PlannerOptions.STRATEGY_UNSPECIFIED)
    assert unset == greedy, "unset is Greedy"


def test_an_unknown_strategy_is_refused_naming_the_field() -> None:
    from sidecar.errors import InputError

    spec = spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")])
    spec.planner.strategy = 7  # type: ignore[assignment]
    with pytest.raises(InputError, match=r"spec\.planner\.strategy"):
        validate(spec)


@pytest.mark.parametrize("seed", [3, 11, 19])
def test_hostname_spread_is_in_the_model_and_its_plans_replay(seed: int) -> None:
    """dlrm's per-node limits: pods of each PodGroup spread by hostname with maxSkew 2. The model
    takes them (no fallback), and whatever it returns passes the independent judge."""
    snap = to_rows(synth(SynthOptions(nodes=16, fill=0.6, seed=seed)))
    groups = sorted({t.pod_group for t in snap.tasks if t.pod_group})
    for t in snap.tasks:
        if t.pod_group:
            t.profile.labels["spread-group"] = t.pod_group
            c = t.profile.topology_spread_constraints.add(topology_key="kubernetes.io/hostname", max_skew=2)
            c.when_unsatisfiable = "DoNotSchedule"
            c.label_selector.match_labels["spread-group"] = t.pod_group
    assert groups
    state = decode(snap)
    run = validate(spec_pb2.RepackSpec(mode=1, goals=[spec_pb2.RepackGoal(resource="nvidia.com/gpu")]))
    planner = Planner(Mirror(state), run)
    greedy = planner.plan()
    cands = planner.prepare().candidates
    if not cands:
        pytest.skip("no fragmentation in this seed")
    model = exact.Model(planner, cands)  # no Unsupported
    assert model.caps, "the spread constraints are in the model"
    improved = exact.improve(planner, planner.prepare(), greedy, time_limit=10.0)
    final = improved if improved is not None else greedy
    judged = B.measure(state, run, B.Proposal("x", [(m.task, m.target) for m in final.moves]))
    assert (judged.infeasible_moves, judged.stranded_pods, judged.freed) == (0, 0, len(final.freed))
