"""The specification of the node-level search kernel (sidecar/repack/search.py place_pods,
ext/receivers.pyx NodeSearch): the whole depth-first search as a plain loop. Production never runs
it (without the kernel the planner searches with search.Search over the Filter), so it lives here,
beside its test (test_search.py compares it with the kernel on random inputs)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sidecar.mirror.domaincount import domain_min, too_skewed
from sidecar.repack.search import PodsInput
from sidecar.snapshot.ledger import future_idle, idle
from sidecar.snapshot.units import less_equal
from tests.repack.reference_receivers import Key, key

F64 = npt.NDArray[np.float64]


def place_pods(inp: PodsInput, stuck: set[int] | None = None) -> list[int] | None:
    """The search as a plain loop (the specification): each pod's receivers are the allowed nodes
    passing its node-only checks, pod count and resource fit on the rows as earlier placements
    left them, taken in key order; a placement adds the request to the node's Used and recomputes
    FutureIdle exactly as the Simulation does. The receivers, or None when the budget or the
    receivers run out. With ``rules``, a node must also give each of the pod's rules a domain
    (or lack the key where the rule allows it) with skew -- its count, plus the pod when it counts
    in its own domain, minus the rule's minimum over its domains -- within maxSkew; a placement
    counts for every rule counting the pod whose nodes count there. The inputs are left as they
    were; ``stuck`` collects the pods (positions) that found no receiver at all at some point."""
    overlay: dict[int, list[tuple[F64, F64, int]]] = {}  # node -> (used, future, count) per placement
    sp = inp.rules
    counts = [sp.counts[sp.count_off[r] : sp.count_off[r + 1]].copy() for r in range(sp.self_match.size)] if sp else []

    def rules_ok(k: int, n: int) -> bool:
        if sp is None:
            return True
        for r in sp.pod_rules[sp.pod_rule_off[k] : sp.pod_rule_off[k + 1]].tolist():
            code = int(sp.codes[sp.code_row[r], n])
            if code < 0:
                if sp.missing_ok[r]:
                    continue
                return False
            low = domain_min(counts[r], sp.domains[sp.domain_off[r] : sp.domain_off[r + 1]], bool(sp.zero_min[r]))
            if too_skewed(int(counts[r][code]), int(sp.self_match[r]), low, int(sp.max_skew[r])):
                return False
        return True

    def tally(k: int, n: int, by: int) -> None:
        if sp is None:
            return
        for r in range(len(counts)):
            code = int(sp.codes[int(sp.code_row[r]), n])
            if sp.member[k, r] and sp.eligible[int(sp.eligible_row[r]), n] and code >= 0:
                counts[r][code] += by

    def rows(n: int) -> tuple[F64, F64, int]:
        stack = overlay.get(n)
        return stack[-1] if stack else (inp.used[n], inp.future[n], int(inp.pod_count[n]))

    def node_key(k: int, n: int) -> Key:
        left = float(rows(n)[1][inp.goal] - inp.req[k, inp.goal])
        return key(bool(inp.stays[n]), float(inp.capacity[n]), float(inp.cost[n]), left, int(inp.rank[n]))

    def feasible(k: int, n: int) -> bool:
        _, future, count = rows(n)
        if not inp.allowed[n] or not inp.static_ok[inp.static_row[k], n] or count >= inp.pod_cap[n]:
            return False
        dims = np.flatnonzero(inp.fit[k])
        return all(less_equal(float(inp.req[k, d]), float(future[d])) for d in dims) and rules_ok(k, n)

    n_pods, budget = inp.req.shape[0], inp.budget
    targets: list[int] = []
    last: Key | None = None  # key of the receiver just undone at this level
    while len(targets) < n_pods:
        k = len(targets)
        keyed = [(node_key(k, n), n) for n in range(inp.future.shape[0]) if feasible(k, n)]
        later = [kn for kn in keyed if last is None or kn[0] > last]
        if not keyed and last is None and stuck is not None:
            stuck.add(k)
        if not later or budget <= 0:
            if k == 0:
                return None
            n = targets.pop()
            overlay[n].pop()
            tally(k - 1, n, -1)
            last = node_key(k - 1, n)
            continue
        budget -= 1
        _, n = min(later)
        used, _, count = rows(n)
        used = used + inp.req[k]
        future = future_idle(idle(inp.alloc[n], used), inp.releasing[n], inp.pipelined[n])
        overlay.setdefault(n, []).append((used, future, count + 1))
        tally(k, n, 1)
        targets.append(n)
        last = None
    return targets
