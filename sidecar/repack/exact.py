"""``planner.strategy: Exact`` — the move problem solved exactly on small scopes (HiGHS MILP).

With ``y_c`` (candidate ``c`` is emptied) and ``x_tn`` (pod ``t`` of an emptied candidate goes to
receiver ``n``), all binary::

    maximise   Σ y_c  −  ε Σ cost_c · y_c             more nodes; among equals, the guide's cost order
    subject to Σ_n x_tn = y_c(t)                        every pod of an emptied node moves, once
               x_tn ≤ 1 − y_n                           an emptied node receives nothing
               Σ_t req_tr · x_tn ≤ futureIdle_nr        every resource, and the pod count, per receiver
               x_tn + x_un ≤ 1                          t and u repel by hostname anti-affinity
               Σ_{u∈S} x_un ≤ maxSkew − staying_S(n)     hostname topology spread (DoNotSchedule)
               Σ_g z_g ≤ maxPerRun.podGroups,  y_c ≤ z_g for g disturbed by c
               Σ cards_c · y_c ≤ maxPerRun.resources[goal]
               Σ pdb_pc · y_c ≤ disruptionsAllowed_p    every PodDisruptionBudget

``x_tn`` exists only where the mirror's Filter passes ``t`` on ``n`` in the cluster as it is
(receivers never lose pods, so that verdict stands) and ``n`` is an allowed receiver (rule 1:
it holds the goal resource, :func:`sidecar.snapshot.holding.holding_nodes`). The model speaks only
node-level constraints, hostname anti-affinity and hostname topology spread (a receiver ends with
at most maxSkew matching pods: exact once some eligible node has none, which an emptied node
ensures); a scope with pod affinity, host ports, or anti-affinity or spread on another key is
planned greedily. The solver
starts from the greedy plan and stops at ``time_limit``; its answer is replayed through the
mirror (a Statement) and kept only when every move passes there and it frees more nodes than the
greedy plan, or as many at a lower cost.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from sidecar.mirror.domaincount import room
from sidecar.mirror.simulation import Simulation, task_ports
from sidecar.repack.candidates import RECEIVER, Candidate, Outcome, Prepared, emptied_outcome
from sidecar.repack.cost import GangState, initial_deltas
from sidecar.repack.fragmentation import fragmentation
from sidecar.repack.ranking import ranking_scores
from sidecar.repack.result import Move, PlanningContext, PlanResult
from sidecar.snapshot.holding import holding_nodes, holding_tasks
from sidecar.snapshot.units import TOLERANCE

#: scopes with more candidate nodes are planned greedily (the MILP grows with candidates × receivers)
MAX_CANDIDATES = 60
#: (pod, receiver) pairs above which the model is not built (it would take longer than the solve)
MAX_PAIRS = 20_000
#: the solver's time limit, seconds (the greedy plan stands if nothing better is proven by then)
TIME_LIMIT = 2.0
#: below this much time left (80% of the caller's deadline), the greedy plan is answered as is
MIN_TIME_LIMIT = 0.05
HOSTNAME = "kubernetes.io/hostname"
NOT_CHOSEN = "NotChosen"


def available() -> bool:
    """HiGHS is an optional extra: ``pip install 'volcano-repack-sidecar[exact]'``."""
    return importlib.util.find_spec("highspy") is not None


@dataclass(frozen=True)
class Solution:
    emptied: list[int]  # candidate indices, in cost order
    targets: dict[int, int]  # task -> receiver


_BANNER = threading.Lock()
_quiet = False


def _highs() -> Any:
    """A solver with output off. HiGHS prints a banner to file descriptor 1 when the process
    creates its first solver, before any option can be set; that once, fd 1 points at /dev/null
    (stdout carries the JSON log)."""
    global _quiet
    import highspy

    with _BANNER:
        if not _quiet:
            sys.stdout.flush()
            saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, 1)
                h = highspy.Highs()  # type: ignore[no-untyped-call]
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(null)
            _quiet = True
        else:
            h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    # RINS solves a sub-MIP whose presolve does not check the time limit everywhere: with highspy
    # 1.16.0 one 40-node openb cut spent over 40 minutes in strengthenInequalities under a 30 s
    # limit (HiGHS issues 1501, 2226 track such gaps). Without RINS every cut tried reached the same
    # best value within the limit, and that one was proven optimal in 20 s.
    h.setOptionValue("mip_heuristic_run_rins", False)
    return h


class Unsupported(Exception):
    """A constraint the model cannot express: plan greedily."""


def improve(
    planner: PlanningContext, prep: Prepared, greedy: PlanResult, time_limit: float = TIME_LIMIT
) -> PlanResult | None:
    """An exact plan better than ``greedy`` (replayed through the mirror), or None to keep greedy."""
    cands = prep.candidates
    if not cands or len(cands) > MAX_CANDIDATES or not available():
        return None
    try:
        model = Model(planner, cands)
    except Unsupported:
        return None
    solution = model.solve(greedy, time_limit)
    if solution is None:
        return None
    result = _replay(planner, prep, cands, solution, greedy)
    if result is None:
        return None
    better = len(result.freed) > len(greedy.freed)
    cheaper = (
        len(result.freed) == len(greedy.freed) and model.cost_of(result.freed) < model.cost_of(greedy.freed) - 1e-9
    )
    return result if better or cheaper else None


class Model:
    """The MILP above for ``cands``; raises Unsupported for what it cannot express (or when it has
    more than ``max_pairs`` (pod, receiver) pairs)."""

    def __init__(self, planner: PlanningContext, cands: list[Candidate], max_pairs: int | None = MAX_PAIRS) -> None:
        mirror, state, goal = planner.mirror, planner.state, planner.goal
        self.planner, self.cands = planner, cands
        self.status = "not solved"
        p = mirror.predicates
        sim = Simulation(state)
        self.receivers = np.flatnonzero(holding_nodes(state, goal))  # rule 1, as the greedy planner's
        self.free = sim.future_idle()
        # the pod slot is bounded twice: allocate's fit on FutureIdle (``free``) and, with the
        # predicates plugin, the pod-number check (``pod_cap``, infinite without it)
        self.pods_left = np.minimum(p.pod_cap - sim.pod_count, self.free[:, p.pods_dim])
        self.index = {c.node: i for i, c in enumerate(cands)}
        # the guide's cost of emptying each candidate against the empty plan (the first round's ranking)
        deltas = initial_deltas(GangState.build(state, goal, holding_tasks(state)), cands)
        scores = ranking_scores(deltas, planner.spec.weights.as_tuple())
        self.cost = {c.node: float(s) for c, s in zip(cands, scores - scores.min(initial=0.0), strict=True)}
        self.allowed: dict[int, np.ndarray[Any, np.dtype[np.intp]]] = {}
        self.repels: list[tuple[int, int]] = []
        #: hostname spread (DoNotSchedule) per distinct constraint: selector, namespaces, maxSkew, its pods
        self.caps: dict[tuple[bytes, Any, int], tuple[Any, Any, int, list[int]]] = {}
        moving = np.array([int(t) for c in cands for t in c.pods], np.intp)
        pairs = 0
        for c in cands:
            for t in map(int, c.pods):
                subj = mirror.subject_for_task(t)
                prof = subj.profile
                if prof.pod_affinity or subj.unknown_resources:
                    raise Unsupported("pod affinity or unknown resources")
                if p.pod_level(subj) and not _only_hostname_terms(subj.profile, p, subj):
                    raise Unsupported("pod-level terms other than hostname anti-affinity and spread")
                nodes = self.receivers[self.receivers != c.node]
                self.allowed[t] = p.feasible_nodes(subj, sim, nodes)
                pairs += self.allowed[t].size
                if max_pairs is not None and pairs > max_pairs:
                    raise Unsupported(f"over {max_pairs} (pod, receiver) pairs")
                for term in prof.pod_anti_affinity:
                    spaces = p.index.term_namespaces(term, subj.namespace)
                    matched = p.matching_tasks(term.label_selector, spaces)
                    self.repels += [(t, int(u)) for u in np.intersect1d(matched, moving) if int(u) != t]
                for spread in prof.topology_spread_constraints:
                    if spread.when_unsatisfiable == "DoNotSchedule":
                        spaces = p.index.term_namespaces(spread, subj.namespace)
                        key = (spread.label_selector.SerializeToString(deterministic=True), spaces, spread.max_skew)
                        self.caps.setdefault(key, (spread.label_selector, spaces, int(spread.max_skew), []))[3].append(
                            t
                        )

    def cost_of(self, freed: list[int]) -> float:
        return sum(self.cost.get(n, 0.0) for n in freed)

    def solve(self, greedy: PlanResult | None, time_limit: float) -> Solution | None:
        """The solver's best answer within ``time_limit`` (warm-started from ``greedy`` if given);
        None when it found no feasible one."""
        import highspy

        state, cands = self.planner.state, self.cands
        h = _highs()
        h.setOptionValue("time_limit", float(time_limit))
        inf = highspy.kHighsInf
        integer = highspy.HighsVarType.kInteger

        def var() -> int:
            v = h.addVariable(0, 1)
            h.changeColIntegrality(v.index, integer)
            return int(v.index)

        y = [var() for _ in cands]
        x: dict[tuple[int, int], int] = {}
        for ci, c in enumerate(cands):
            for t in map(int, c.pods):
                cols = []
                for n in map(int, self.allowed[t]):
                    x[(t, n)] = var()
                    cols.append(x[(t, n)])
                h.addRow(0, 0, len(cols) + 1, [*cols, y[ci]], [1.0] * len(cols) + [-1.0])
        by_receiver: dict[int, list[tuple[int, int]]] = {}
        for (t, n), col in x.items():
            by_receiver.setdefault(n, []).append((t, col))
        pods_dim = self.planner.mirror.predicates.pods_dim
        for n, items in by_receiver.items():
            cols = [col for _, col in items]
            if n in self.index:
                for col in cols:
                    h.addRow(-inf, 1, 2, [col, y[self.index[n]]], [1.0, 1.0])
            for r in range(len(state.resources)):
                if r == pods_dim:
                    h.addRow(-inf, float(self.pods_left[n]), len(cols), cols, [1.0] * len(cols))
                    continue
                coeff = [float(state.task_req[t, r]) for t, _ in items]
                if any(coeff):
                    h.addRow(-inf, float(self.free[n, r]) + TOLERANCE, len(cols), cols, coeff)
        for t, u in self.repels:
            for n in map(int, self.allowed[t]):
                if (u, n) in x:
                    h.addRow(-inf, 1, 2, [x[(t, n)], x[(u, n)]], [1.0, 1.0])
        self._spread(h, x, inf)
        self._budgets(h, y, inf)
        eps = 1.0 / (len(cands) * (max(self.cost.values(), default=0.0) + 1.0) + 1.0)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for ci, c in enumerate(cands):
            h.changeColCost(y[ci], 1.0 - eps * self.cost[c.node])
        if greedy is not None:
            self._warm_start(h, greedy, y, x)
        h.run()
        self.status = h.modelStatusToString(h.getModelStatus())
        if h.getInfo().primal_solution_status != 2:  # no feasible solution found
            return None
        values = h.getSolution().col_value
        emptied = [ci for ci in range(len(cands)) if values[y[ci]] > 0.5]
        emptied.sort(key=lambda ci: (self.cost[cands[ci].node], state.node_names[cands[ci].node]))
        targets = {t: n for (t, n), col in x.items() if values[col] > 0.5}
        return Solution(emptied, targets)

    def _spread(self, h: Any, x: dict[tuple[int, int], int], inf: float) -> None:
        """Hostname spread: a receiver holding a constrained pod ends with at most maxSkew matching
        pods. Exact once some eligible node has none (its skew floor is 0): an emptied node does."""
        state, p = self.planner.state, self.planner.mirror.predicates
        on = Simulation(state).on_node()
        for selector, spaces, skew, owners in self.caps.values():
            matched = p.matching_tasks(selector, spaces)
            staying = np.bincount(state.task_node[matched[on[matched]]], minlength=state.n_nodes)
            nodes = {n for t in owners for n in map(int, self.allowed[t])}
            for n in sorted(nodes):
                cols = [x[(int(u), n)] for u in matched if (int(u), n) in x]
                if cols:  # the domain rule with minimum 0: room for maxSkew - staying more
                    h.addRow(-inf, float(room(int(staying[n]), 0, skew)), len(cols), cols, [1.0] * len(cols))

    def _budgets(self, h: Any, y: list[int], inf: float) -> None:
        spec, cands, state = self.planner.spec, self.cands, self.planner.state
        if spec.max_pod_groups is not None:
            groups = sorted({m.group for c in cands for m in c.groups})
            z = {}
            for grp in groups:
                v = h.addVariable(0, 1)
                z[grp] = int(v.index)
            for ci, c in enumerate(cands):
                for m in c.groups:
                    h.addRow(-inf, 0, 2, [y[ci], z[m.group]], [1.0, -1.0])
            h.addRow(-inf, float(spec.max_pod_groups), len(z), list(z.values()), [1.0] * len(z))
        if spec.max_resource is not None:
            h.addRow(-inf, spec.max_resource + TOLERANCE, len(y), y, [c.cards for c in cands])
        for p, pdb in enumerate(state.pdbs):
            covered = [(y[ci], float(c.pdbs[p])) for ci, c in enumerate(cands) if c.pdbs.get(p)]
            if covered:
                cols, coeff = zip(*covered, strict=True)
                h.addRow(-inf, float(pdb.disruptions_allowed), len(cols), list(cols), list(coeff))

    def _warm_start(self, h: Any, greedy: PlanResult, y: list[int], x: dict[tuple[int, int], int]) -> None:
        import highspy

        values = [0.0] * h.getNumCol()
        for n in greedy.freed:
            values[y[self.index[n]]] = 1.0
        for m in greedy.moves:
            col = x.get((m.task, m.target))
            if col is None:
                return  # the greedy plan is outside the model (should not happen): start cold
            values[col] = 1.0
        start = highspy.HighsSolution()
        start.col_value = values
        start.value_valid = True
        h.setSolution(start)


def _only_hostname_terms(profile: Any, predicates: Any, subj: Any) -> bool:
    """Pod-level terms the model expresses: required anti-affinity by hostname (both directions)
    and topology spread by hostname (a ScheduleAnyway one only scores)."""
    if task_ports(profile):
        return False
    if any(term.topology_key != HOSTNAME for term in profile.pod_anti_affinity):
        return False
    if any(c.topology_key != HOSTNAME for c in profile.topology_spread_constraints):
        return False
    index = predicates.index
    targets = index.anti_targets(subj) if index.anti_groups else []
    return all(key == HOSTNAME for _, key in targets)


def _replay(
    planner: PlanningContext, prep: Prepared, cands: list[Candidate], solution: Solution, greedy: PlanResult
) -> PlanResult | None:
    """The solution through the mirror: every emptied node's pods removed, then each placed on its
    receiver only if the Filter passes there on the state holding every earlier move."""
    state, mirror = planner.state, planner.mirror
    sim = Simulation(state)
    chosen = [cands[ci] for ci in solution.emptied]
    for c in chosen:
        for t in map(int, c.pods):
            sim.remove(t)
    moves: list[Move] = []
    for c in chosen:
        for t in map(int, c.pods):
            target = solution.targets.get(t)
            if target is None:
                return None
            subj = mirror.subject_for_task(t)
            if not mirror.predicates.feasible_nodes(subj, sim, np.array([target], np.intp)).size:
                return None
            sim.place(t, target)
            moves.append(Move(t, c.node, target))
    sim.commit()
    gang = prep.gang  # the caller's fresh copy: nothing moved yet
    for c in chosen:
        for g in c.groups:
            gang.apply(g.group, g.pods, g.cards, g.roles)
    freed = [c.node for c in chosen]
    outcomes = dict(greedy.outcomes)
    receiving: dict[int, set[int]] = {}
    for m in moves:
        receiving.setdefault(m.source, set()).add(m.target)
    targets = {m.target for m in moves}
    for c in cands:
        if c.node in receiving:
            names = ", ".join(sorted(state.node_names[x] for x in receiving[c.node]))
            outcomes[c.node] = emptied_outcome(c, names)
        elif c.node in targets:
            outcomes[c.node] = Outcome(c.node, False, RECEIVER, "receives pods in this plan, so it stays occupied")
        elif outcomes.get(c.node) is not None and outcomes[c.node].selected:
            message = "the exact plan frees more nodes, or as many at a lower cost, without emptying it"
            outcomes[c.node] = Outcome(c.node, False, NOT_CHOSEN, message)
    after = fragmentation(state, planner.spec.resource, task_node=sim.node_of)
    return PlanResult(
        resource=greedy.resource,
        before=greedy.before,
        after=after,
        moves=moves,
        freed=freed,
        outcomes=outcomes,
        gang=gang,
        pod_group_count=prep.pod_group_count,
        node_count=prep.node_count,
    )
