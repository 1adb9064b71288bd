"""The repack planner: incremental, gang-aware greedy emptying of whole nodes.

Each round (the guide's "Dynamically Selecting Targets to Empty"):

1. every candidate node still in play gets the marginal interruption cost of emptying it on top
   of the plan so far (cost.py), min-max normalised over the round's candidates and weighted;
2. candidates are tried in ascending cost (ties: more capacity freed, then name); a try removes
   the node's goal-resource pods in the simulation and places them one by one (largest first)
   on receivers in the guide's order, with the mirror core deciding feasibility on the state that
   already holds every earlier move, backtracking over receiver choices within a budget;
3. the first candidate that fits joins the plan; the next round re-evaluates everything.

A candidate that fails on capacity, budget or a PodDisruptionBudget can never succeed later
(receivers only fill up, the plan only grows) and is dropped; one that failed on pod-level
constraints (affinity, spread, ports), which moves can loosen, is retried after the plan changes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sidecar.mirror.core import Mirror
from sidecar.mirror.ledger import PIPELINED
from sidecar.mirror.predicates import S_OK, Subject
from sidecar.mirror.selectors import label_selector_matches
from sidecar.mirror.simulation import Simulation
from sidecar.repack.cost import GangState, GroupMoves, marginal, normalised_scores
from sidecar.repack.fragmentation import Fragmentation, fragmentation, holding_mask
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import TOLERANCE

#: receiver choices tried per candidate before it is given up (backtracking bound)
PLACEMENT_BUDGET = 256

# candidate outcome reasons
EMPTIED = "Emptied"
OUT_OF_SCOPE = "OutOfScope"
UNMOVABLE = "UnmovablePod"
PIPELINED_POD = "PipelinedPod"
RECEIVER = "Receiver"
NO_RECEIVER = "NoReceiver"
BUDGET = "Budget"
PDB = "PodDisruptionBudget"


@dataclass(frozen=True)
class Move:
    task: int
    source: int
    target: int


@dataclass
class Candidate:
    node: int
    pods: npt.NDArray[np.intp]  # goal-resource pods to move, placement order
    groups: list[GroupMoves]
    cards: float  # Volcano units of the goal resource on the node
    cost_alone: float  # interruption cost of emptying it first (receiver rule 3)
    pdbs: Counter[int] = field(default_factory=Counter)
    retry_at: int = -1  # plan size at which a pod-level failure may be retried


@dataclass
class Outcome:
    node: int
    selected: bool
    reason: str
    message: str


@dataclass
class PlanResult:
    resource: str
    before: Fragmentation
    after: Fragmentation
    moves: list[Move]
    freed: list[int]
    outcomes: dict[int, Outcome]
    gang: GangState
    pod_group_count: int  # PodGroups in scope
    node_count: int  # nodes in scope

    @property
    def improvement(self) -> float:
        return self.before.percent - self.after.percent


class Planner:
    def __init__(self, mirror: Mirror, spec: RunSpec) -> None:
        self.mirror = mirror
        self.state: ClusterState = mirror.state
        self.spec = spec
        state = self.state
        self.goal = state.resource(spec.resource) if state.has_resource(spec.resource) else -1
        self.pg_in_scope = spec.scope.pod_group_mask(state) if state.pod_groups else np.zeros(0, bool)
        self.node_in_scope = spec.scope.node_mask(state)

    # -- preparation ---------------------------------------------------------------------------

    def _volcano_profiles(self) -> npt.NDArray[np.bool_]:
        names = self.spec.scheduler_names
        return np.array([p.scheduler_name in names for p in self.state.profiles], bool)

    def _pdbs_of(self, tasks: npt.NDArray[np.intp]) -> dict[int, list[int]]:
        state = self.state
        out: dict[int, list[int]] = {}
        for p, pdb in enumerate(state.pdbs):
            for t in tasks:
                t = int(t)
                if state.namespaces[state.task_namespace[t]] != pdb.namespace:
                    continue
                if label_selector_matches(pdb.selector, state.profiles[state.task_profile[t]].labels):
                    out.setdefault(t, []).append(p)
        return out

    def plan(self, deadline: object | None = None) -> PlanResult:
        state, spec = self.state, self.spec
        before = fragmentation(state, spec.resource)
        outcomes: dict[int, Outcome] = {}
        holds = holding_mask(state)
        gang = (
            GangState.build(state, max(self.goal, 0), holds)
            if self.goal >= 0
            else GangState.build(state, 0, holds & False)
        )
        pg_count = int(self.pg_in_scope.sum())
        node_count = int(self.node_in_scope.sum())
        if self.goal < 0 or before.occupied_nodes <= before.min_occupied_nodes:
            return PlanResult(spec.resource, before, before, [], [], outcomes, gang, pg_count, node_count)
        g = self.goal
        req_g = state.task_req[:, g]
        goal_pods = holds & (req_g > TOLERANCE)
        providing = state.node_alloc[:, g] > TOLERANCE
        volcano = self._volcano_profiles()[state.task_profile]
        pg = state.task_pod_group
        movable = goal_pods & volcano & (pg >= 0)
        movable &= np.where(pg >= 0, self.pg_in_scope[np.maximum(pg, 0)] if self.pg_in_scope.size else False, False)
        pipelined_goal = (state.task_node >= 0) & (state.task_status == PIPELINED) & (req_g > TOLERANCE)

        by_node = np.argsort(state.task_node, kind="stable")
        on = state.task_node[by_node]
        starts = np.searchsorted(on, np.arange(state.n_nodes))
        ends = np.searchsorted(on, np.arange(state.n_nodes), side="right")

        candidates: list[Candidate] = []
        pinned = np.zeros(state.n_nodes, bool)  # will stay occupied whatever the plan does
        load = np.bincount(state.task_node[goal_pods], weights=req_g[goal_pods], minlength=state.n_nodes)
        for n in map(int, np.flatnonzero(providing & (load > TOLERANCE))):
            tasks = by_node[starts[n] : ends[n]]
            pods = tasks[goal_pods[tasks]]
            if not self.node_in_scope[n]:
                pinned[n] = True
                outcomes[n] = Outcome(n, False, OUT_OF_SCOPE, "node is outside scope.nodes")
                continue
            blocked = pods[~movable[pods]]
            if blocked.size:
                pinned[n] = True
                outcomes[n] = Outcome(n, False, UNMOVABLE, self._why_unmovable(int(blocked[0]), volcano))
                continue
            if pipelined_goal[tasks].any():
                pinned[n] = True
                t = int(tasks[pipelined_goal[tasks]][0])
                outcomes[n] = Outcome(n, False, PIPELINED_POD, f"pod {self._pod(t)} is pipelined onto this node")
                continue
            order = pods[np.lexsort((np.array([state.task_name[t] for t in pods]), -req_g[pods]))]
            groups: dict[int, list[int]] = {}
            for t in order:
                groups.setdefault(int(pg[t]), []).append(int(t))
            moves = [
                GroupMoves(k, len(ts), float(req_g[ts].sum()), Counter(state.task_role[t] for t in ts))
                for k, ts in sorted(groups.items())
            ]
            candidates.append(Candidate(n, order, moves, float(load[n]), 0.0))
        for c in candidates:
            c.cost_alone = float(marginal(gang, c.groups) @ np.asarray(spec.weights.as_tuple()))
        pdb_of = self._pdbs_of(np.concatenate([c.pods for c in candidates])) if state.pdbs and candidates else {}
        for c in candidates:
            for t in c.pods:
                c.pdbs.update(pdb_of.get(int(t), []))

        sim = Simulation(state)
        runner = _Run(self, sim, candidates, pinned, gang, outcomes, deadline)
        runner.loop()
        after = fragmentation(state, spec.resource, task_node=sim.node_of)
        return PlanResult(
            spec.resource, before, after, runner.moves, runner.freed, outcomes, gang, pg_count, node_count
        )

    def _pod(self, t: int) -> str:
        return f"{self.state.namespaces[self.state.task_namespace[t]]}/{self.state.task_name[t]}"

    def _why_unmovable(self, t: int, volcano: npt.NDArray[np.bool_]) -> str:
        state = self.state
        prof = state.profiles[state.task_profile[t]]
        if not volcano[t]:
            scheduler = prof.scheduler_name or "default-scheduler"
            return f"pod {self._pod(t)} is not scheduled by Volcano (schedulerName {scheduler!r})"
        if state.task_pod_group[t] < 0:
            return f"pod {self._pod(t)} belongs to no PodGroup"
        group = state.pod_group_key(int(state.task_pod_group[t]))
        return f"pod {self._pod(t)}: PodGroup {group} is outside scope.podGroups"


class _Run:
    """One planning loop over a simulation."""

    def __init__(
        self,
        planner: Planner,
        sim: Simulation,
        candidates: list[Candidate],
        pinned: npt.NDArray[np.bool_],
        gang: GangState,
        outcomes: dict[int, Outcome],
        deadline: object | None,
    ) -> None:
        self.p = planner
        self.state = planner.state
        self.spec = planner.spec
        self.mirror = planner.mirror
        self.sim = sim
        self.pending = candidates
        self.pinned = pinned.copy()
        self.gang = gang
        self.outcomes = outcomes
        self.deadline = deadline
        self.moves: list[Move] = []
        self.freed: list[int] = []
        self.emptying = np.zeros(self.state.n_nodes, bool)  # freed, or being emptied now
        self.received = np.zeros(self.state.n_nodes, bool)
        self.pdb_used: Counter[int] = Counter()
        self.cost_alone = np.zeros(self.state.n_nodes)
        for c in candidates:
            self.cost_alone[c.node] = c.cost_alone
        self.weights = self.spec.weights.as_tuple()
        self.benefit = self.state.node_alloc[:, planner.goal]
        self.rank = np.empty(self.state.n_nodes, np.int64)
        self.rank[np.argsort(np.array(self.state.node_names, dtype=object), kind="stable")] = np.arange(
            self.state.n_nodes
        )

    # -- the loop ------------------------------------------------------------------------------

    def loop(self) -> None:
        deltas = {id(c): marginal(self.gang, c.groups) for c in self.pending}
        while self.pending:
            check = getattr(self.deadline, "check", None)
            if check is not None:
                check("planning")
            live = [c for c in self.pending if c.retry_at <= len(self.freed)]
            chosen = None
            while live and chosen is None:
                live = [c for c in live if self._within_budgets(c, deltas[id(c)])]
                if not live:
                    break
                scores = normalised_scores(np.array([deltas[id(c)] for c in live]), self.weights)
                order = np.lexsort((self.rank[[c.node for c in live]], -self.benefit[[c.node for c in live]], scores))
                best = live[int(order[0])]
                if self._try(best):
                    chosen = best
                else:
                    live.remove(best)
            if chosen is None:
                break
            self.pending.remove(chosen)
            touched = {m.group for m in chosen.groups}
            for c in self.pending:
                if any(m.group in touched for m in c.groups):
                    deltas[id(c)] = marginal(self.gang, c.groups)
        for c in self.pending:
            if c.node not in self.outcomes:
                self.outcomes[c.node] = Outcome(c.node, False, NO_RECEIVER, "no feasible placement for its pods")

    def _within_budgets(self, c: Candidate, delta: npt.NDArray[np.float64]) -> bool:
        spec = self.spec
        touched = int((self.gang.moves > 0).sum())
        if spec.max_pod_groups is not None and touched + delta[0] > spec.max_pod_groups:
            self._drop(
                c,
                BUDGET,
                f"would affect {touched + int(delta[0])} PodGroups, over maxPerRun.podGroups {spec.max_pod_groups}",
            )
            return False
        if spec.max_resource is not None:
            moved = float(self.gang.cards.sum()) + delta[3]
            if moved > spec.max_resource + TOLERANCE:
                unit = 1000.0
                self._drop(
                    c,
                    BUDGET,
                    f"would move {moved / unit:g} {spec.resource}, over maxPerRun.resources "
                    f"{spec.max_resource / unit:g}",
                )
                return False
        for p, n in c.pdbs.items():
            allowed = self.state.pdbs[p].disruptions_allowed
            if self.pdb_used[p] + n > allowed:
                pdb = self.state.pdbs[p]
                self._drop(
                    c,
                    PDB,
                    f"would evict {self.pdb_used[p] + n} pods covered by PodDisruptionBudget "
                    f"{pdb.namespace}/{pdb.name} (disruptionsAllowed {allowed})",
                )
                return False
        return True

    def _drop(self, c: Candidate, reason: str, message: str) -> None:
        if c in self.pending:
            self.pending.remove(c)
        self.outcomes[c.node] = Outcome(c.node, False, reason, message)

    # -- one candidate ---------------------------------------------------------------------------

    def _receivers_allowed(self) -> npt.NDArray[np.bool_]:
        g = self.p.goal
        sim = self.sim
        held = sim.used[:, g] - sim.releasing[:, g] + sim.pipelined[:, g]
        allowed: npt.NDArray[np.bool_] = ~self.emptying & (held > TOLERANCE)  # never re-light an idle node
        return allowed

    def _order(self, nodes: npt.NDArray[np.intp], req: float) -> npt.NDArray[np.intp]:
        """The guide's receiver rules 2-4 (rule 1 is _receivers_allowed): stay-occupied nodes
        first, then nodes costlier to empty later, then the least goal capacity left, then name."""
        sim, g = self.sim, self.p.goal
        stays = self.pinned[nodes] | self.received[nodes]
        left = (
            self.state.node_alloc[nodes, g] - sim.used[nodes, g] + sim.releasing[nodes, g] - sim.pipelined[nodes, g]
        ) - req
        keys = (self.rank[nodes], left, -np.where(stays, 0.0, self.cost_alone[nodes]), ~stays)
        result: npt.NDArray[np.intp] = nodes[np.lexsort(keys)]
        return result

    def _try(self, c: Candidate) -> bool:
        sim, state = self.sim, self.state
        mark = sim.checkpoint()
        self.emptying[c.node] = True
        for t in c.pods:
            sim.remove(int(t))
        allowed = self._receivers_allowed()
        targets: list[int] = []
        stuck: list[Subject] = []  # pods that found no receiver at all
        budget = [PLACEMENT_BUDGET]

        def place(i: int) -> bool:
            if i == len(c.pods):
                return True
            t = int(c.pods[i])
            subj = self.mirror.subject_for_task(t)
            ok = np.flatnonzero(self.mirror.predicates.filter(subj, sim, explain=False).feasible & allowed)
            if ok.size == 0:
                stuck.append(subj)
                return False
            for target in self._order(ok, float(state.task_req[t, self.p.goal])):
                if budget[0] <= 0:
                    return False
                budget[0] -= 1
                cp = sim.checkpoint()
                sim.place(t, int(target))
                targets.append(int(target))
                if place(i + 1):
                    return True
                sim.rollback(cp)
                targets.pop()
            return False

        if not place(0):
            sim.rollback(mark)
            self.emptying[c.node] = False
            if stuck and any(self._node_checks_pass(subj, allowed) for subj in stuck):
                c.retry_at = len(self.freed) + 1  # affinity/spread/ports may loosen as the plan grows
            else:
                self._drop(c, NO_RECEIVER, self._no_receiver_message(c))
            return False
        sim.commit()
        for target, t in zip(targets, c.pods, strict=True):
            self.moves.append(Move(int(t), c.node, target))
            self.received[target] = True
        for m in c.groups:
            self.gang.apply(m.group, m.pods, m.cards, m.roles)
        for p, n in c.pdbs.items():
            self.pdb_used[p] += n
        self.freed.append(c.node)
        self.pinned[targets] = True
        self.outcomes[c.node] = Outcome(
            c.node,
            True,
            EMPTIED,
            f"{len(c.pods)} pods move to " + ", ".join(sorted({state.node_names[x] for x in targets})),
        )
        for other in list(self.pending):  # a node that received pods stays occupied: no longer a candidate
            if self.received[other.node]:
                self._drop(other, RECEIVER, "receives pods in this plan, so it stays occupied")
        return True

    def _node_checks_pass(self, subj: Subject, allowed: npt.NDArray[np.bool_]) -> bool:
        """Would some allowed receiver take the pod if pod-level constraints were ignored?"""
        p = self.mirror.predicates
        from sidecar.mirror import kernels

        dims = p.fit_dims(subj.req)
        fits = kernels.first_insufficient(subj.req, self.sim.future_idle(), dims) < 0
        room = self.sim.pod_count < self.state.node_alloc[:, p.pods_dim]
        static_ok = p.static(subj.profile).code == S_OK
        has_pod_level = bool(
            subj.profile.pod_affinity
            or subj.profile.pod_anti_affinity
            or subj.profile.topology_spread_constraints
            or subj.profile.host_ports
            or p._anti_targets(subj)
        )
        return has_pod_level and bool((fits & room & static_ok & allowed).any())

    def _no_receiver_message(self, c: Candidate) -> str:
        state, g = self.state, self.p.goal
        t = int(c.pods[0])
        cards = state.task_req[t, g] / 1000.0
        return (
            f"no receiver takes all {len(c.pods)} pods (largest: {self.p._pod(t)}, {cards:g} "
            f"{self.spec.resource}): receivers lack capacity or fail its node constraints"
        )
