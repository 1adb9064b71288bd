"""Three baseline repackers and one after-the-fact judge, for comparison with the planner.

Every method sees the same scope rules (a node whose goal pods cannot all move is never
drained) and proposes an ordered list of evictions, with a target node or none. The judge
(`measure`) replays them through the mirror core: an eviction with a target the scheduler would
reject counts as an infeasible move, and the rebuilt pod goes where Volcano would put it; an
eviction without a target (the descheduler) is re-placed by Volcano's own node order, possibly
back onto a node being drained. Freed nodes are counted on the final state, net of idle nodes
the moves lit up.

Baselines are judged twice: as proposed, and `repair`ed — every source node with a move the
mirror rejects (infeasible or stranded) dropped, to a fixed point — so ours is compared with each
at its best. `dominates` is the Pareto test of the report's "never dominated" goal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sidecar.mirror.core import Mirror
from sidecar.mirror.simulation import Simulation
from sidecar.repack.cost import GangState
from sidecar.repack.planner import Planner
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.holding import holding_nodes, holding_tasks
from sidecar.snapshot.state import ClusterState

TOL = 0.1


@dataclass
class Proposal:
    method: str
    evictions: list[tuple[int, int | None]]  # (task, target node or None)
    seconds: float = 0.0


@dataclass
class Outcome:
    method: str
    freed: int  # net: nodes emptied minus idle nodes the moves lit up (occupied nodes saved)
    cards_moved: float
    pods_moved: int
    below_min_available: int
    infeasible_moves: int
    stranded_pods: int
    seconds: float
    freed_nodes: list[int] = field(default_factory=list)  # emptied, before subtracting lit nodes
    lit: int = 0  # nodes that held none of the goal resource before and hold some after
    #: the goal resource's allocatable on the emptied nodes minus on the lit ones, in cards: what
    #: the freed count leaves out (one emptied 8-card node weighs as much as one 1-card node)
    freed_cards: float = 0.0
    rejected_sources: set[int] = field(default_factory=set)  # nodes with an infeasible or stranded move
    node_of: npt.NDArray[np.int32] | None = None


def _candidates(state: ClusterState, run: RunSpec) -> tuple[list[int], dict[int, list[int]]]:
    """Nodes every method may drain (the planner's candidate rules) and their goal pods."""
    prep = Planner(Mirror(state), run).prepare()
    if not prep.candidates:
        return [], {}
    return [c.node for c in prep.candidates], {c.node: [int(t) for t in c.pods] for c in prep.candidates}


class _Budget:
    """maxPerRun for the baselines: a node is drained only if the run stays within budget."""

    def __init__(self, state: ClusterState, run: RunSpec) -> None:
        self.state, self.run = state, run
        self.groups: set[int] = set()
        self.cards = 0.0

    def fits(self, pods: list[int]) -> bool:
        g = self.state.resource(self.run.resource)
        groups = self.groups | {int(self.state.task_pod_group[t]) for t in pods}
        cards = self.cards + float(self.state.task_req[pods, g].sum())
        if self.run.max_pod_groups is not None and len(groups) > self.run.max_pod_groups:
            return False
        return self.run.max_resource is None or cards <= self.run.max_resource + TOL

    def take(self, pods: list[int]) -> None:
        g = self.state.resource(self.run.resource)
        self.groups |= {int(self.state.task_pod_group[t]) for t in pods}
        self.cards += float(self.state.task_req[pods, g].sum())


def descheduler_high_node_utilization(state: ClusterState, run: RunSpec, threshold: float = 0.5) -> Proposal:
    """HighNodeUtilization-style: evict everything from under-utilised nodes (goal use < threshold),
    least used first, while the aggregate free capacity elsewhere covers it. No per-node fit."""
    g = state.resource(run.resource)
    nodes, pods = _candidates(state, run)
    alloc = state.node_alloc[:, g]
    used = state.ledger.used[:, g]
    util = np.divide(used, alloc, out=np.zeros_like(used), where=alloc > 0)
    under = [n for n in nodes if util[n] < threshold]
    under.sort(key=lambda n: (util[n], state.node_names[n]))
    free = alloc - used
    others = np.ones(state.n_nodes, bool)
    others[under] = False
    aggregate = float(free[others & (alloc > 0)].sum())
    evictions: list[tuple[int, int | None]] = []
    budget = _Budget(state, run)
    for n in under:
        load = float(used[n])
        if load <= aggregate + TOL and budget.fits(pods[n]):
            budget.take(pods[n])
            aggregate -= load
            evictions += [(t, None) for t in pods[n]]
    return Proposal("descheduler HighNodeUtilization", evictions)


def karpenter_consolidation(state: ClusterState, run: RunSpec) -> Proposal:
    """Karpenter-style: candidates in disruption-cost order (fewest pods, then least used), one
    node at a time; a node is drained when the scheduler would place all its pods elsewhere."""
    g = state.resource(run.resource)
    nodes, pods = _candidates(state, run)
    mirror = Mirror(state)
    sim = Simulation(state)
    nodes.sort(key=lambda n: (len(pods[n]), state.ledger.used[n, g], state.node_names[n]))
    drained = np.zeros(state.n_nodes, bool)
    evictions: list[tuple[int, int | None]] = []
    budget = _Budget(state, run)
    for n in nodes:
        if not budget.fits(pods[n]):
            continue
        mark = sim.checkpoint()
        targets = []
        for t in pods[n]:
            sim.remove(t)
        others = np.flatnonzero(~drained & (np.arange(state.n_nodes) != n))
        ok = True
        for t in pods[n]:
            best = mirror.allocate(mirror.subject_for_task(t), sim, others)
            if best < 0:
                ok = False
                break
            sim.place(t, best)
            targets.append(best)
        if ok:
            sim.commit()
            budget.take(pods[n])
            drained[n] = True
            evictions += list(zip(pods[n], targets, strict=True))
        else:
            sim.rollback(mark)
    return Proposal("Karpenter-style consolidation", evictions)


def ffd_drain(state: ClusterState, run: RunSpec) -> Proposal:
    """Node-anchored first-fit-decreasing: least-used nodes first, their goal pods largest first
    into the fullest nodes that have room in the goal resource; no other constraint, no gangs."""
    g = state.resource(run.resource)
    nodes, pods = _candidates(state, run)
    alloc = state.node_alloc[:, g]
    free = alloc - state.ledger.used[:, g]
    used = state.ledger.used[:, g].copy()
    nodes.sort(key=lambda n: (used[n], state.node_names[n]))
    drained = np.zeros(state.n_nodes, bool)
    receiving = np.zeros(state.n_nodes, bool)
    evictions: list[tuple[int, int | None]] = []
    budget = _Budget(state, run)
    for n in nodes:
        if receiving[n] or not budget.fits(pods[n]):
            continue
        trial_free = free.copy()
        plan = []
        for t in sorted(pods[n], key=lambda t: -state.task_req[t, g]):
            req = state.task_req[t, g]
            order = np.flatnonzero(~drained & (alloc > 0) & (used > TOL) & (trial_free >= req - TOL))
            order = order[order != n]
            if order.size == 0:
                plan = []
                break
            target = int(order[np.lexsort((order, -used[order]))[0]])
            trial_free[target] -= req
            plan.append((t, target))
        if plan and len(plan) == len(pods[n]):
            budget.take(pods[n])
            free = trial_free
            drained[n] = True
            for t, target in plan:
                used[target] += state.task_req[t, g]
                receiving[target] = True
            used[n] = 0
            evictions += plan
    return Proposal("first-fit-decreasing drain", evictions)


def planner_proposal(state: ClusterState, run: RunSpec) -> Proposal:
    result = Planner(Mirror(state), run).plan()
    return Proposal("repack planner (ours)", [(m.task, m.target) for m in result.moves])


def measure(state: ClusterState, run: RunSpec, proposal: Proposal) -> Outcome:
    """Replay a proposal through the mirror core and count what actually happens."""
    g = state.resource(run.resource)
    mirror = Mirror(state)
    sim = Simulation(state)
    infeasible = stranded = 0
    moved: Counter[int] = Counter()
    cards = 0.0
    rejected: set[int] = set()
    for t, target in proposal.evictions:
        if not sim.on_node()[t]:
            continue
        source = int(state.task_node[t])
        sim.remove(t)
        subj = mirror.subject_for_task(t)
        if target is not None:
            if mirror.predicates.feasible_nodes(subj, sim, np.array([target])).size:
                sim.place(t, target)
                moved[int(state.task_pod_group[t])] += 1
                cards += state.task_req[t, g]
                continue
            infeasible += 1
            rejected.add(source)
        best = mirror.allocate(subj, sim)
        if best < 0:
            stranded += 1
            rejected.add(source)
            continue
        sim.place(t, best)
        moved[int(state.task_pod_group[t])] += 1
        cards += state.task_req[t, g]
    sim.commit()
    # the nodes holding the goal resource before and after the moves (the planner's definition)
    before = holding_nodes(state, g)
    after = holding_nodes(state, g, sim.node_of)
    # A move onto an idle node saves nothing: count what the occupied-node total lost.
    freed = np.flatnonzero(before & ~after).tolist()
    lit_mask = ~before & after
    lit = int(lit_mask.sum())
    freed_cards = float(state.node_alloc[freed, g].sum() - state.node_alloc[lit_mask, g].sum()) / 1000.0
    gang = GangState.build(state, g, holding_tasks(state))
    below = sum(1 for pg, n in moved.items() if pg >= 0 and n > gang.safe(pg))
    return Outcome(
        proposal.method,
        len(freed) - lit,
        cards / 1000.0,
        sum(moved.values()),
        below,
        infeasible,
        stranded,
        proposal.seconds,
        freed_nodes=freed,
        node_of=sim.node_of.copy(),
        lit=lit,
        freed_cards=freed_cards,
        rejected_sources=rejected,
    )


def repair(state: ClusterState, run: RunSpec, proposal: Proposal, rounds: int = 20) -> Proposal:
    """``proposal`` without the source nodes whose moves the mirror rejects, repeated until every
    remaining move replays (dropping a source can invalidate a later move that counted on it)."""
    evictions = list(proposal.evictions)
    for _ in range(rounds):
        bad = measure(state, run, Proposal(proposal.method, evictions)).rejected_sources
        if not bad:
            break
        evictions = [(t, target) for t, target in evictions if int(state.task_node[t]) not in bad]
    return Proposal(f"{proposal.method} (repaired)", evictions, proposal.seconds)


def dominates(a: Outcome, b: Outcome) -> bool:
    """``a`` is at least as good as ``b`` on freed nodes (↑), PodGroups below MinAvailable (↓) and
    cards moved (↓), and strictly better on one (Pareto dominance; cards compared within TOL)."""
    no_worse = a.freed >= b.freed and a.below_min_available <= b.below_min_available
    no_worse = no_worse and a.cards_moved <= b.cards_moved + 1e-9
    better = a.freed > b.freed or a.below_min_available < b.below_min_available or a.cards_moved < b.cards_moved - 1e-9
    return no_worse and better


def _sources(state: ClusterState, proposal: Proposal) -> list[int]:
    """Source nodes in the order the proposal first evicts from them."""
    return list(dict.fromkeys(int(state.task_node[t]) for t, _ in proposal.evictions))


def _prefix(state: ClusterState, run: RunSpec, proposal: Proposal, order: list[int], k: int) -> Outcome:
    keep = set(order[:k])
    part = [(t, target) for t, target in proposal.evictions if int(state.task_node[t]) in keep]
    return measure(state, run, Proposal(proposal.method, part))


def prefixes(state: ClusterState, run: RunSpec, proposal: Proposal, points: int = 30) -> list[Outcome]:
    """The judge's outcome after the first k source nodes' moves, in the proposal's order (about
    ``points`` values of k, the whole plan last): a plan cut short is a point on the same curve."""
    order = _sources(state, proposal)
    ks = sorted({max(1, round(len(order) * i / points)) for i in range(1, points + 1)}) if order else []
    return [_prefix(state, run, proposal, order, k) for k in ks]


def shortest_prefix(state: ClusterState, run: RunSpec, proposal: Proposal, freed: int) -> Outcome | None:
    """The judged outcome of the shortest prefix (by source node) that frees at least ``freed``
    nodes, by bisection (a valid plan's freed count grows with its prefix); None if none does."""
    order = _sources(state, proposal)
    lo, hi = 1, len(order)
    if not order or _prefix(state, run, proposal, order, hi).freed < freed:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if _prefix(state, run, proposal, order, mid).freed >= freed:
            hi = mid
        else:
            lo = mid + 1
    return _prefix(state, run, proposal, order, lo)
