"""Hard limits on a plan, and the bulk bound that prunes candidates which can no longer fit.

``maxPerRun.podGroups`` and ``maxPerRun.resources[goal]`` hold over the whole plan, and so does
each PodDisruptionBudget's ``disruptionsAllowed`` (a PDB covers the pods of its namespace that
its selector matches). The plan only grows, so a candidate over a limit is dropped for good; one
that a PodDisruptionBudget forbids on its own is no candidate at all (:func:`pin_pdb_protected`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from sidecar.api.v1alpha1 import snapshot_pb2 as pb
from sidecar.repack.candidates import BUDGET, PDB, Candidate, CandidatePods, Outcome, Prepared
from sidecar.repack.cost import GangState
from sidecar.repack.spec import RunSpec
from sidecar.repack.table import CandidateTable
from sidecar.snapshot.state import ClusterState
from sidecar.snapshot.units import TOLERANCE, less_equal
from sidecar.wording import count

#: the mirror's ``matching_profiles(selector)``: the profile rows a label selector matches
ProfileMatcher = Callable[[pb.LabelSelector], npt.NDArray[np.intp]]


def count_pdbs(state: ClusterState, candidates: list[Candidate], matching_profiles: ProfileMatcher) -> None:
    """Fill every candidate's ``pdbs``: how many of its pods each PodDisruptionBudget covers.

    policy/v1: a null selector matches no pods; an empty (``{}``) one every pod of the namespace.
    Each selector is matched once, on profiles, through the mirror's pod index (inverted on labels,
    cached per selector, the same matcher affinity terms use); the candidates' pods are then joined
    to every (PDB, profile) pair at once, in the PDB's namespace -- never pod by pod, never
    through the PDB's pods outside the candidates."""
    if not state.pdbs or not candidates:
        return
    sizes = [c.pods.size for c in candidates]
    pods = np.concatenate([c.pods for c in candidates]).astype(np.intp)
    cand = np.repeat(np.arange(len(candidates)), sizes)
    order = np.argsort(state.task_profile[pods], kind="stable")
    by_profile = state.task_profile[pods][order]
    ns_id = {name: i for i, name in enumerate(state.namespaces)}
    pair_pdb: list[npt.NDArray[np.intp]] = []
    pair_profile: list[npt.NDArray[np.intp]] = []
    pdb_ns = np.full(len(state.pdbs), -1, np.intp)
    for p, pdb in enumerate(state.pdbs):
        if not pdb.HasField("selector") or pdb.namespace not in ns_id:
            continue
        pdb_ns[p] = ns_id[pdb.namespace]
        profiles = matching_profiles(pdb.selector)
        pair_pdb.append(np.full(profiles.size, p, np.intp))
        pair_profile.append(profiles)
    if not pair_pdb:
        return
    wanted = np.concatenate(pair_profile)
    lo = np.searchsorted(by_profile, wanted, "left")
    n = np.searchsorted(by_profile, wanted, "right") - lo
    rows = np.repeat(np.concatenate(pair_pdb), n)  # one row per (PDB, candidate pod of a matched profile)
    at = order[np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)]
    keep = state.task_namespace[pods[at]] == pdb_ns[rows]
    keys, counts = np.unique(rows[keep] * len(candidates) + cand[at[keep]], return_counts=True)
    for key, k in zip(keys.tolist(), counts.tolist(), strict=True):
        p, i = divmod(key, len(candidates))
        pdbs = candidates[i].pdbs
        pdbs[p] = pdbs.get(p, 0) + k


def pin_pdb_protected(state: ClusterState, prep: Prepared) -> None:
    """Take out of ``prep.candidates`` every node whose emptying a PodDisruptionBudget forbids
    outright (the node's own covered pods exceed ``disruptionsAllowed``, e.g. it is 0): it can never
    be emptied, so it stays occupied (receiver rule 2) and is explained as PodDisruptionBudget."""
    assert prep.candidates is not None
    kept: list[Candidate] = []
    for c in prep.candidates:
        over = next(((p, n) for p, n in sorted(c.pdbs.items()) if n > state.pdbs[p].disruptions_allowed), None)
        if over is None:
            kept.append(c)
            continue
        p, n = over
        prep.outcomes[c.node] = Outcome(c.node, False, PDB, _pdb_message(state, p, n))
        prep.pinned[c.node] = True
    prep.candidates = kept


def _pdb_message(state: ClusterState, p: int, n: int) -> str:
    pdb = state.pdbs[p]
    return (
        f"would evict {n} pods covered by PodDisruptionBudget {pdb.namespace}/{pdb.name} "
        f"(disruptionsAllowed {pdb.disruptions_allowed})"
    )


class Budgets:
    """maxPerRun and PodDisruptionBudgets against the plan so far."""

    def __init__(self, state: ClusterState, spec: RunSpec, gang: GangState, table: CandidateTable) -> None:
        self.state, self.spec, self.gang, self.table = state, spec, gang, table
        self.pdb_used: Counter[int] = Counter()  # PodDisruptionBudget -> pods the plan evicts

    @property
    def limited(self) -> bool:
        """Is any maxPerRun budget set (else :meth:`within` keeps every candidate)?"""
        return self.spec.max_pod_groups is not None or self.spec.max_resource is not None

    def within(self, live: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """``live`` without the candidates that would take the plan over maxPerRun (dropped)."""
        spec, delta = self.spec, self.table.delta
        if spec.max_pod_groups is None and spec.max_resource is None:
            return live
        keep = np.ones(live.size, bool)
        touched = int((self.gang.moves > 0).sum())
        if spec.max_pod_groups is not None:
            over = touched + delta[0, live] > spec.max_pod_groups
            for i in live[over]:
                self.table.drop(
                    int(i),
                    BUDGET,
                    f"would affect {count(touched + int(delta[0, i]), 'PodGroup')}, over "
                    f"maxPerRun.podGroups {spec.max_pod_groups}",
                )
            keep &= ~over
        if spec.max_resource is not None:
            moved = float(self.gang.cards.sum())
            over = moved + delta[3, live] > spec.max_resource + TOLERANCE
            for i in live[over & keep]:
                self.table.drop(
                    int(i),
                    BUDGET,
                    f"would move {(moved + delta[3, i]) / 1000:g} {spec.resource}, over "
                    f"maxPerRun.resources {spec.max_resource / 1000:g}",
                )
            keep &= ~over
        return live[keep]

    def value_order(self, live: npt.NDArray[np.intp], scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Under ``maxPerRun.podGroups``, rank ``live`` by what each candidate buys with the budget:
        first those that touch no new PodGroup (free), then by nodes unlocked per new PodGroup —
        ``(1 + live candidates whose every untouched PodGroup it would touch) / its new PodGroups`` —
        and the guide's cost order (``scores``) among equals. Returns rank positions (lower first).
        Counted on the (candidate, new PodGroup) pairs at once: a round costs array passes, not a
        Python loop over the candidates and their groups."""
        table = self.table
        n = live.size
        pc, pg = _new_pairs(table.pairs.start, table.pairs.group, live, self.gang.moves > 0)
        spent = np.bincount(pc, minlength=n)
        n_groups = int(pg.max(initial=-1)) + 1
        # A live candidate j sharing an untouched group g with k has g among its new groups, so
        # j's new groups fit in k's exactly when j's are {g} (counted per group) or, for j with
        # several, when k holds every one of them (checked on the candidates of one of j's groups).
        one = spent[pc] == 1
        singles = np.bincount(pg[one], minlength=n_groups)
        unlock = np.zeros(n)
        unlock[pc[one]] = singles[pg[one]] - 1  # the others with exactly this group
        several = ~one
        unlock += np.bincount(pc[several], weights=singles[pg[several]], minlength=n)
        unlock += _supersets(pc[several], pg[several], spent, n, n_groups)
        per_unit = (1.0 + unlock) / np.maximum(spent, 1).astype(np.float64)
        order = np.lexsort((table.tie_rank[live], scores, -per_unit, spent > 0))
        ranks = np.empty(n)
        ranks[order] = np.arange(n)
        return ranks

    def pdb_ok(self, i: int) -> bool:
        """Would emptying candidate ``i`` keep every PodDisruptionBudget? (If not, it is dropped.)"""
        for p, n in self.table.cands[i].pdbs.items():
            if self.pdb_used[p] + n > self.state.pdbs[p].disruptions_allowed:
                self.table.drop(i, PDB, _pdb_message(self.state, p, self.pdb_used[p] + n))
                return False
        return True

    def spend(self, c: Candidate) -> None:
        for p, n in c.pdbs.items():
            self.pdb_used[p] += n


class Preflight:
    """Bulk pruning by two necessary conditions on the goal resource: each pod needs a receiver
    with that much free, and a candidate's pods together need that much free on the receivers
    their node checks allow. Receivers only fill up and the set of receivers only shrinks, so a
    candidate failing here never succeeds later."""

    def __init__(self, state: ClusterState, goal: int, table: CandidateTable, pods: CandidatePods) -> None:
        self.table = table
        # one entry per pod of every candidate: its candidate, goal request and row of node checks
        self.cand = pods.cand
        self.req = state.task_req[pods.pods, goal]
        self.row = pods.static_row
        self.masks = pods.static_ok.view(np.bool_)

    def prune(self, allowed: npt.NDArray[np.bool_], free_goal: npt.NDArray[np.float64]) -> None:
        """Drop the live candidates that fail either condition (``free_goal``: FutureIdle)."""
        if self.cand.size == 0:
            return
        free = np.maximum(free_goal, 0.0)
        n_rows = self.masks.shape[0]
        max_free = np.zeros(n_rows)
        sum_free = np.zeros(n_rows)
        for r in range(n_rows):
            f = free[self.masks[r] & allowed]
            if f.size:
                max_free[r] = f.max()
                sum_free[r] = f.sum()
        pod_bad = ~less_equal(self.req, max_free[self.row])  # LessEqual fails on the roomiest receiver
        n = len(self.table.cands)
        need = np.bincount(self.cand * n_rows + self.row, weights=self.req, minlength=n * n_rows)
        over = (need.reshape(n, n_rows) > sum_free[None, :] + TOLERANCE).any(axis=1)
        bad: npt.NDArray[np.bool_] = np.array(over, dtype=bool)
        bad[self.cand[pod_bad]] = True
        for i in np.flatnonzero(bad & self.table.alive):
            self.table.drop_no_receiver(int(i))


def _new_pairs(
    start: npt.NDArray[np.intp], group: npt.NDArray[np.intp], live: npt.NDArray[np.intp], touched: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The live candidates' (position in ``live``, untouched PodGroup) pairs."""
    lens = start[live + 1] - start[live]
    pos = np.repeat(np.arange(live.size), lens)
    at = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(start[live], lens)
    groups = group[at]
    keep = ~touched[groups]
    return pos[keep], groups[keep]


def _supersets(
    pc: npt.NDArray[np.intp], pg: npt.NDArray[np.intp], spent: npt.NDArray[np.int64], n: int, n_groups: int
) -> npt.NDArray[np.float64]:
    """For each position k: how many j != k with several new groups have them all among k's, given
    the (position, group) pairs of the candidates with several (k must be one of them too),
    ordered by position as :func:`_new_pairs` gives them."""
    out = np.zeros(n)
    if pc.size == 0:
        return out
    # the candidates with several groups, per group (CSR), and each one's rarest group
    by_group = np.argsort(pg, kind="stable")
    members = pc[by_group]
    bounds = np.searchsorted(pg[by_group], np.arange(n_groups + 1))
    size = np.diff(bounds)[pg]
    starts = np.flatnonzero(np.r_[True, pc[1:] != pc[:-1]])
    rarest_size = np.repeat(np.minimum.reduceat(size, starts), np.diff(np.r_[starts, pc.size]))
    at = np.flatnonzero(size == rarest_size)
    firsts = at[np.r_[True, pc[at][1:] != pc[at][:-1]]]
    j, rarest = pc[firsts], pg[firsts]
    # every (j, k) with k holding j's rarest group, then whether k holds each of j's groups
    lens = bounds[rarest + 1] - bounds[rarest]
    jj = np.repeat(j, lens)
    kk = members[np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(bounds[rarest], lens)]
    # k must differ, hold at least as many groups, and pass a 64-bit signature of j's groups
    # (a group's bit is g mod 64) before the exact test below
    sig = np.zeros(n, np.uint64)
    np.bitwise_or.at(sig, pc, np.left_shift(np.uint64(1), (pg % 64).astype(np.uint64)))
    maybe = (jj != kk) & (spent[kk] >= spent[jj]) & ((sig[jj] & ~sig[kk]) == 0)
    jj, kk = jj[maybe], kk[maybe]
    held = np.sort(pc.astype(np.int64) * n_groups + pg)
    j_start = np.zeros(n + 1, np.intp)
    np.cumsum(np.bincount(pc, minlength=n), out=j_start[1:])
    k_lens = spent[jj]
    pair = np.repeat(np.arange(jj.size), k_lens)
    g = pg[  # j's groups (pg is by position)
        np.arange(int(k_lens.sum())) - np.repeat(np.cumsum(k_lens) - k_lens, k_lens) + np.repeat(j_start[jj], k_lens)
    ]
    keys = np.repeat(kk.astype(np.int64), k_lens) * n_groups + g
    found = held[np.minimum(np.searchsorted(held, keys), held.size - 1)] == keys
    hits = np.bincount(pair, weights=found, minlength=jj.size)
    subset = hits == k_lens
    out += np.bincount(kk[subset], minlength=n)
    return out
