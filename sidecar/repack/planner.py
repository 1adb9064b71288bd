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

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sidecar.mirror import kernels
from sidecar.mirror.core import Mirror
from sidecar.mirror.selectors import label_selector_matches
from sidecar.mirror.simulation import Simulation
from sidecar.mirror.types import S_OK, Subject
from sidecar.repack.cost import GangState, GroupMoves, initial_deltas, marginal, ranking_scores
from sidecar.repack.fragmentation import Fragmentation, fragmentation, holding_mask
from sidecar.repack.spec import RunSpec
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.taskstatus import PIPELINED
from sidecar.snapshot.units import TOLERANCE

#: receiver choices tried per candidate before it is given up (backtracking bound)
PLACEMENT_BUDGET = 256
#: failed tries (since the last one) that trigger the bulk capacity check
PREFLIGHT_AFTER_FAILURES = 8

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


@dataclass
class Prepared:
    before: Fragmentation
    candidates: list[Candidate] | None
    pinned: npt.NDArray[np.bool_]
    gang: GangState
    outcomes: dict[int, Outcome]
    pod_group_count: int
    node_count: int


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
        prep = self.prepare()
        state, spec = self.state, self.spec
        if prep.candidates is None:
            return PlanResult(
                spec.resource,
                prep.before,
                prep.before,
                [],
                [],
                prep.outcomes,
                prep.gang,
                prep.pod_group_count,
                prep.node_count,
            )
        sim = Simulation(state)
        runner = _Run(self, sim, prep.candidates, prep.pinned, prep.gang, prep.outcomes, deadline)
        runner.loop()
        after = fragmentation(state, spec.resource, task_node=sim.node_of)
        return PlanResult(
            spec.resource,
            prep.before,
            after,
            runner.moves,
            runner.freed,
            prep.outcomes,
            prep.gang,
            prep.pod_group_count,
            prep.node_count,
        )

    def prepare(self) -> Prepared:
        """Fragmentation before, candidate nodes with their pods and gang impact, pinned nodes and
        the explanation of every node that cannot be a candidate. ``candidates`` is None when
        there is nothing to plan (no fragmentation, or nothing provides the goal resource)."""
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
            return Prepared(before, None, np.zeros(state.n_nodes, bool), gang, outcomes, pg_count, node_count)
        g = self.goal
        req_g = state.task_req[:, g]
        goal_pods = holds & (req_g > TOLERANCE)
        providing = state.node_alloc[:, g] > TOLERANCE
        volcano = self._volcano_profiles()[state.task_profile]
        pg = state.task_pod_group
        movable = goal_pods & volcano & (pg >= 0)
        movable &= np.where(pg >= 0, self.pg_in_scope[np.maximum(pg, 0)] if self.pg_in_scope.size else False, False)
        pipelined_goal = (state.task_node >= 0) & (state.task_status == PIPELINED) & (req_g > TOLERANCE)

        pinned = np.zeros(state.n_nodes, bool)  # will stay occupied whatever the plan does
        load = np.bincount(state.task_node[goal_pods], weights=req_g[goal_pods], minlength=state.n_nodes)
        occupied = providing & (load > TOLERANCE)
        blocked_at = self._first_per_node(goal_pods & ~movable)
        pipelined_at = self._first_per_node(pipelined_goal)
        for n in map(int, np.flatnonzero(occupied)):
            if not self.node_in_scope[n]:
                outcomes[n] = Outcome(n, False, OUT_OF_SCOPE, "node is outside scope.nodes")
            elif n in blocked_at:
                outcomes[n] = Outcome(n, False, UNMOVABLE, self._why_unmovable(blocked_at[n], volcano))
            elif n in pipelined_at:
                outcomes[n] = Outcome(
                    n, False, PIPELINED_POD, f"pod {self._pod(pipelined_at[n])} is pipelined onto this node"
                )
            else:
                continue
            pinned[n] = True
        is_candidate = occupied & ~pinned
        # Every candidate's goal-resource pods, grouped by node; within a node largest first, then
        # snapshot order (the placement order).
        tasks = np.flatnonzero(goal_pods & is_candidate[np.maximum(state.task_node, 0)] & (state.task_node >= 0))
        tasks = tasks[np.lexsort((tasks, -req_g[tasks], state.task_node[tasks]))]
        t_node = state.task_node[tasks]
        cand_nodes, starts = np.unique(t_node, return_index=True)
        bounds = np.append(starts, tasks.size)
        # (candidate, PodGroup) pairs: how many pods and cards each node takes from each group.
        n_groups = max(len(state.pod_groups), 1)
        cand_of_task = np.repeat(np.arange(cand_nodes.size), np.diff(bounds))
        pair_key = cand_of_task.astype(np.int64) * n_groups + pg[tasks]
        pair_keys, pair_inverse, pair_pods = np.unique(pair_key, return_inverse=True, return_counts=True)
        pair_cards = np.bincount(pair_inverse.ravel(), weights=req_g[tasks], minlength=pair_keys.size)
        pair_cand, pair_group = np.divmod(pair_keys, n_groups)
        pair_bounds = np.searchsorted(pair_cand, np.arange(cand_nodes.size + 1))
        no_roles: Counter[str] = Counter()
        candidates: list[Candidate] = []
        for i, n in enumerate(cand_nodes.tolist()):
            pods = tasks[bounds[i] : bounds[i + 1]]
            groups = []
            for k in range(pair_bounds[i], pair_bounds[i + 1]):
                grp = int(pair_group[k])
                roles = no_roles
                if gang.role_min[grp]:
                    roles = Counter(state.task_role[t] for t in pods if pg[t] == grp)
                groups.append(GroupMoves(grp, int(pair_pods[k]), float(pair_cards[k]), roles))
            candidates.append(Candidate(n, pods, groups, float(load[n]), 0.0))
        if state.pdbs and candidates:
            pdb_of = self._pdbs_of(tasks)
            for c in candidates:
                for t in c.pods:
                    c.pdbs.update(pdb_of.get(int(t), []))

        return Prepared(before, candidates, pinned, gang, outcomes, pg_count, node_count)

    def _first_per_node(self, mask: npt.NDArray[np.bool_]) -> dict[int, int]:
        """node -> first task (in snapshot order) on it that ``mask`` selects."""
        tasks = np.flatnonzero(mask & (self.state.task_node >= 0))
        nodes, first = np.unique(self.state.task_node[tasks], return_index=True)
        return dict(zip(nodes.tolist(), tasks[first].tolist(), strict=True))

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
    """One planning loop over a simulation; candidates live in arrays indexed 0..C-1."""

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
        self.cands = candidates
        self.pinned = pinned.copy()
        self.gang = gang
        self.outcomes = outcomes
        self.deadline = deadline
        self.moves: list[Move] = []
        self.freed: list[int] = []
        n_nodes = self.state.n_nodes
        self.pdb_used: Counter[int] = Counter()
        self.weights = self.spec.weights.as_tuple()
        names_rank = np.empty(n_nodes, np.int64)
        names_rank[np.argsort(np.array(self.state.node_names, dtype=object), kind="stable")] = np.arange(n_nodes)
        self.rank = names_rank
        nodes = np.array([c.node for c in candidates], np.intp)
        self.node = nodes
        self.alive = np.ones(len(candidates), bool)
        self.retry_at = np.zeros(len(candidates), np.int64)
        # [5, C]: dimension-major, so per-dimension min/max over candidates are contiguous reductions
        self.delta = initial_deltas(gang, candidates)
        for c, cost in zip(candidates, np.asarray(self.weights) @ self.delta, strict=True):
            c.cost_alone = float(cost)
        self.c_benefit = self.state.node_alloc[nodes, planner.goal] if len(candidates) else np.zeros(0)
        self.c_rank = names_rank[nodes] if len(candidates) else np.zeros(0, np.int64)
        self.by_group: dict[int, list[int]] = {}
        for i, c in enumerate(candidates):
            for m in c.groups:
                self.by_group.setdefault(m.group, []).append(i)
        self.index_of = {c.node: i for i, c in enumerate(candidates)}
        # Static tie-break among equal costs: more capacity freed first, then node name.
        self.tie_rank = np.empty(len(candidates), np.int64)
        self.tie_rank[np.lexsort((self.c_rank, -self.c_benefit))] = np.arange(len(candidates))
        g = planner.goal
        held = sim.used[:, g] - sim.releasing[:, g] + sim.pipelined[:, g]
        self.allowed = held > TOLERANCE  # receivers: not emptied, goal resource not idle
        self.stays = self.pinned.copy()  # will stay occupied: unmovable, out of scope, or receiving
        self.pod_cap = np.ascontiguousarray(self.state.node_alloc[:, planner.mirror.predicates.pods_dim])
        self._static_rows: dict[int, npt.NDArray[np.uint8]] = {}
        self.cost_alone = np.zeros(n_nodes)
        for c in candidates:
            self.cost_alone[c.node] = c.cost_alone
        self._prepare_preflight()

    # -- the loop ------------------------------------------------------------------------------

    def loop(self) -> None:
        preflight_at = -1
        failures = 0
        while True:
            check = getattr(self.deadline, "check", None)
            if check is not None:
                check("planning")
            live = np.flatnonzero(self.alive & (self.retry_at <= len(self.freed)))
            live = self._within_budgets(live)
            if live.size == 0:
                break
            scores = ranking_scores(np.take(self.delta, live, axis=1), self.weights)
            chosen = -1
            while chosen < 0:
                best = self._best(live, scores)
                if best < 0:
                    break
                c = int(live[best])
                if self._try(c):
                    chosen = c
                    break
                scores[best] = np.inf
                failures += 1
                # Failures pile up as receivers fill: then prune, in bulk, what can no longer fit.
                if failures >= PREFLIGHT_AFTER_FAILURES and preflight_at != len(self.freed):
                    preflight_at = len(self.freed)
                    failures = 0
                    self._preflight()
                    scores[~self.alive[live]] = np.inf
            if chosen < 0:
                break
            for m in self.cands[chosen].groups:
                for other in self.by_group.get(m.group, ()):
                    if self.alive[other]:
                        self.delta[:, other] = marginal(self.gang, self.cands[other].groups)
        for i in np.flatnonzero(self.alive):
            node = self.cands[int(i)].node
            if node not in self.outcomes:
                self.outcomes[node] = Outcome(node, False, NO_RECEIVER, "no feasible placement for its pods")

    def _best(self, live: npt.NDArray[np.intp], scores: npt.NDArray[np.float64]) -> int:
        """Position in ``live`` of the lowest score; ties: more capacity freed, then node name."""
        low = scores.min() if scores.size else np.inf
        if not np.isfinite(low):
            return -1
        tied = np.flatnonzero(scores <= low + 1e-12)
        if tied.size == 1:
            return int(tied[0])
        return int(tied[np.argmin(self.tie_rank[live[tied]])])

    def _within_budgets(self, live: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        spec = self.spec
        if spec.max_pod_groups is None and spec.max_resource is None:
            return live
        keep = np.ones(live.size, bool)
        touched = int((self.gang.moves > 0).sum())
        if spec.max_pod_groups is not None:
            over = touched + self.delta[0, live] > spec.max_pod_groups
            for i in live[over]:
                self._drop(
                    int(i),
                    BUDGET,
                    f"would affect {touched + int(self.delta[0, i])} PodGroups, over "
                    f"maxPerRun.podGroups {spec.max_pod_groups}",
                )
            keep &= ~over
        if spec.max_resource is not None:
            moved = float(self.gang.cards.sum())
            over = moved + self.delta[3, live] > spec.max_resource + TOLERANCE
            for i in live[over & keep]:
                self._drop(
                    int(i),
                    BUDGET,
                    f"would move {(moved + self.delta[3, i]) / 1000:g} {spec.resource}, over "
                    f"maxPerRun.resources {spec.max_resource / 1000:g}",
                )
            keep &= ~over
        return live[keep]

    def _pdb_ok(self, i: int) -> bool:
        for p, n in self.cands[i].pdbs.items():
            allowed = self.state.pdbs[p].disruptions_allowed
            if self.pdb_used[p] + n > allowed:
                pdb = self.state.pdbs[p]
                self._drop(
                    i,
                    PDB,
                    f"would evict {self.pdb_used[p] + n} pods covered by PodDisruptionBudget "
                    f"{pdb.namespace}/{pdb.name} (disruptionsAllowed {allowed})",
                )
                return False
        return True

    def _drop(self, i: int, reason: str, message: str) -> None:
        self.alive[i] = False
        node = self.cands[i].node
        self.outcomes[node] = Outcome(node, False, reason, message)

    # -- bulk pruning ----------------------------------------------------------------------------

    def _prepare_preflight(self) -> None:
        """Flatten every candidate's pods with the row of their node-only checks."""
        state, p = self.state, self.mirror.predicates
        pods = [c.pods for c in self.cands]
        flat = np.concatenate(pods) if pods else np.zeros(0, np.intp)
        self.pf_cand = np.repeat(np.arange(len(pods)), [x.size for x in pods]).astype(np.intp)
        self.pf_req = state.task_req[flat, self.p.goal] if flat.size else np.zeros(0)
        profiles, inverse = np.unique(state.task_profile[flat], return_inverse=True)
        rows: dict[int, int] = {}
        masks: list[npt.NDArray[np.bool_]] = []
        row_of_profile = np.empty(profiles.size, np.intp)
        for k, prof_i in enumerate(profiles.tolist()):
            static = p.static(state.profiles[prof_i], profile_index=prof_i)
            r = rows.get(id(static), -1)
            if r < 0:
                r = rows[id(static)] = len(masks)
                masks.append(static.code == S_OK)
            row_of_profile[k] = r
        self.pf_row = row_of_profile[inverse.ravel()] if flat.size else np.zeros(0, np.intp)
        self.pf_masks = np.array(masks) if masks else np.zeros((0, state.n_nodes), bool)

    def _preflight(self) -> None:
        """Drop candidates that can no longer fit, by two necessary conditions on the goal
        resource: each pod needs a receiver with that much free, and a candidate's pods together
        need that much free on the receivers their node checks allow. Receivers only fill up and
        the set of receivers only shrinks, so a candidate failing here never succeeds later."""
        if self.pf_cand.size == 0:
            return
        allowed = self._receivers_allowed()
        free = np.maximum(self.sim.future_idle()[:, self.p.goal], 0.0)
        n_rows = self.pf_masks.shape[0]
        max_free = np.zeros(n_rows)
        sum_free = np.zeros(n_rows)
        for r in range(n_rows):
            f = free[self.pf_masks[r] & allowed]
            if f.size:
                max_free[r] = f.max()
                sum_free[r] = f.sum()
        pod_bad = self.pf_req > max_free[self.pf_row] + TOLERANCE
        n = len(self.cands)
        need = np.bincount(self.pf_cand * n_rows + self.pf_row, weights=self.pf_req, minlength=n * n_rows)
        over = (need.reshape(n, n_rows) > sum_free[None, :] + TOLERANCE).any(axis=1)
        bad: npt.NDArray[np.bool_] = np.array(over, dtype=bool)
        bad[self.pf_cand[pod_bad]] = True
        for i in np.flatnonzero(bad & self.alive):
            self._drop(int(i), NO_RECEIVER, self._no_receiver_message(self.cands[int(i)]))

    # -- one candidate ---------------------------------------------------------------------------

    def _receivers_allowed(self) -> npt.NDArray[np.bool_]:
        """Rule 1: never a node being emptied or freed, never a node whose goal resource is idle.
        (Kept as an array: a node leaves the set when it is emptied, and only then.)"""
        return self.allowed

    def _order(self, nodes: npt.NDArray[np.intp], req: float) -> Iterator[int]:
        """Receivers in the guide's rules 2-4 (rule 1 is _receivers_allowed): nodes that stay
        occupied anyway first, then nodes costlier to empty later, then the least goal capacity
        left after the move, then name. The first choice is found without sorting (it is
        usually taken); the full order is computed only when the search backtracks."""
        if nodes.size == 0:
            return
        sim, g = self.sim, self.p.goal
        stays = self.stays[nodes]
        cost = np.where(stays, 0.0, self.cost_alone[nodes])
        left = self.sim.future_idle()[nodes, g] - req
        pick = np.flatnonzero(stays) if stays.any() else np.arange(nodes.size)
        pick = pick[cost[pick] == cost[pick].max()]
        pick = pick[left[pick] == left[pick].min()]
        first = int(pick[np.argmin(self.rank[nodes[pick]])])
        yield int(nodes[first])
        del sim
        rest = np.lexsort((self.rank[nodes], left, -cost, ~stays))
        for k in rest:
            if k != first:
                yield int(nodes[k])

    def _try(self, i: int) -> bool:
        if not self._pdb_ok(i):
            return False
        c = self.cands[i]
        sim, state = self.sim, self.state
        mark = sim.checkpoint()
        was_allowed = bool(self.allowed[c.node])
        self.allowed[c.node] = False
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
            options = self._receivers_for(subj)
            first = next(options, None)
            if first is None:
                stuck.append(subj)
                return False
            for target in itertools.chain((first,), options):
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
            self.allowed[c.node] = was_allowed
            if stuck and any(self._node_checks_pass(subj, allowed) for subj in stuck):
                self.retry_at[i] = len(self.freed) + 1  # affinity/spread/ports may loosen as the plan grows
            else:
                self._drop(i, NO_RECEIVER, self._no_receiver_message(c))
            return False
        sim.commit()
        for target, t in zip(targets, c.pods, strict=True):
            self.moves.append(Move(int(t), c.node, target))
        for m in c.groups:
            self.gang.apply(m.group, m.pods, m.cards, m.roles)
        for p, n in c.pdbs.items():
            self.pdb_used[p] += n
        self.freed.append(c.node)
        self.pinned[targets] = True
        self.stays[targets] = True
        self.outcomes[c.node] = Outcome(
            c.node,
            True,
            EMPTIED,
            f"{len(c.pods)} pods move to " + ", ".join(sorted({state.node_names[x] for x in targets})),
        )
        self.alive[i] = False
        for target in set(targets):  # a node that received pods stays occupied: no longer a candidate
            j = self.index_of.get(target)
            if j is not None and self.alive[j]:
                self._drop(j, RECEIVER, "receives pods in this plan, so it stays occupied")
        return True

    def _receivers_for(self, subj: Subject) -> Iterator[int]:
        """Feasible receivers for one pod, best first (rule order in _order). A pod with node-level
        constraints only gets its first choice from the Cython kernel in one pass; the full
        order, and every pod with affinity, spread or ports, comes from the mirror's Filter."""
        sim, g, p = self.sim, self.p.goal, self.mirror.predicates
        req = float(self.state.task_req[subj.task, g]) if subj.task is not None else float(subj.req[g])
        fast = kernels.best_receiver_kernel_in_use() and not subj.unknown_resources and not p.pod_level(subj)
        first = -1
        if fast:
            static_ok = self._static_u8(subj)
            first = kernels.best_receiver(
                subj.req,
                p.fit_dims(subj.req),
                sim.future_idle(),
                sim.pod_count,
                self.pod_cap,
                static_ok,
                self.allowed.view(np.uint8),
                self.stays.view(np.uint8),
                self.cost_alone,
                self.rank,
                g,
            )
            if first < 0:
                return
            yield first
        # Only allowed receivers with room for the goal resource can pass; check just those.
        near = np.flatnonzero(self.allowed & (sim.future_idle()[:, g] - req > -TOLERANCE))
        for target in self._order(p.feasible_nodes(subj, sim, near), req):
            if target != first:
                yield target

    def _static_u8(self, subj: Subject) -> npt.NDArray[np.uint8]:
        key = subj.profile_index if subj.profile_index is not None else -1
        row = self._static_rows.get(key)
        if row is None:
            static = self.mirror.predicates.static(subj.profile, profile_index=subj.profile_index)
            row = (static.code == S_OK).astype(np.uint8)
            if key >= 0:
                self._static_rows[key] = row
        return row

    def _node_checks_pass(self, subj: Subject, allowed: npt.NDArray[np.bool_]) -> bool:
        """Would some allowed receiver take the pod if pod-level constraints were ignored?"""
        p = self.mirror.predicates

        dims = p.fit_dims(subj.req)
        fits = kernels.first_insufficient(subj.req, self.sim.future_idle(), dims) < 0
        room = self.sim.pod_count < self.state.node_alloc[:, p.pods_dim]
        static_ok = p.static(subj.profile, profile_index=subj.profile_index).code == S_OK
        return p.pod_level(subj) and bool((fits & room & static_ok & allowed).any())

    def _no_receiver_message(self, c: Candidate) -> str:
        state, g = self.state, self.p.goal
        t = int(c.pods[0])
        cards = state.task_req[t, g] / 1000.0
        return (
            f"no receiver takes all {len(c.pods)} pods (largest: {self.p._pod(t)}, {cards:g} "
            f"{self.spec.resource}): receivers lack capacity or fail its node constraints"
        )
