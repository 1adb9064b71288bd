"""Each rule once (issue 36 item 4): Volcano's LessEqual, FutureIdle, "the node holds the goal
resource", the receiver order and the per-domain rule of spread and anti-affinity are each written
in one Python place and, for the kernels, once in ext/volcano.pxd. This test reads sidecar/ and
ext/ for the expressions that used to be inlined, so a new copy fails here instead of drifting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: rule -> (pattern of an inlined copy, the files allowed to write it)
RULES = {
    "LessEqual": (
        re.compile(r"-[^<>=\n]*(<|>=)\s*(self\.)?(tol|tolerance|TOLERANCE)\b|>\s*-\s*TOLERANCE"),
        {"sidecar/snapshot/units.py", "ext/volcano.pxd"},
    ),
    "FutureIdle": (
        re.compile(r"releasing\b[^\n]*-\s*[^\n]*pipelined\b"),
        {"sidecar/snapshot/ledger.py", "ext/volcano.pxd"},
    ),
    "holding": (
        re.compile(r"used\b[^\n]*-[^\n]*releasing\b[^\n]*\+[^\n]*pipelined|!=\s*PIPELINED\)\s*&[^\n]*!=\s*RELEASING"),
        set(),
    ),
    "receiver order": (
        re.compile(r"0\.0 if (self\.)?(last_)?st(ays)?\b|where\(\w*stays"),
        {"sidecar/repack/receivers.py"},
    ),
    "domain rule": (
        re.compile(r"\+\s*[\w.\[\]]*self_match[\w.\[\]]*\s*-"),
        {"sidecar/mirror/domaincount.py", "ext/volcano.pxd"},
    ),
}
SOURCES = sorted(
    p
    for p in [*(ROOT / "sidecar").rglob("*.py"), *(ROOT / "ext").glob("*.pyx"), *(ROOT / "ext").glob("*.pxd")]
    if "v1alpha1" not in p.parts
)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_rule_is_written_once(rule: str) -> None:
    pattern, allowed = RULES[rule]
    found = [
        f"{path.relative_to(ROOT)}:{k}: {line.strip()}"
        for path in SOURCES
        if str(path.relative_to(ROOT)) not in allowed
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == [], f"{rule} inlined again; use its one definition"


def test_the_checker_sees_the_old_copies() -> None:
    """The patterns match the forms that were inlined before (else the test above passes vacuously)."""
    old = {
        "LessEqual": ["if req[d] - free[n, d] >= tol:", "(sim.future_idle()[:, g] - req > -TOLERANCE)"],
        "FutureIdle": ["future[node, d] = (idle[node, d] + releasing[node, d]) - pipelined[node, d]"],
        "holding": [
            "held = sim.used[:, goal] - sim.releasing[:, goal] + sim.pipelined[:, goal]",
            "& (st != PIPELINED) & (st != RELEASING)",
        ],
        "receiver order": ["c = 0.0 if stays[n] else cost[n]", "node_cap = np.where(node_stays, 0.0, capacity[nodes])"],
        "domain rule": ["if counts[r][code] + sp.self_match[r] - low > sp.max_skew[r]:"],
    }
    for rule, lines in old.items():
        for line in lines:
            assert RULES[rule][0].search(line), (rule, line)
