"""Issue 13 item 20: ``plan --html`` writes one self-contained file that a real browser renders.

Chromium comes from Debian through ``scripts/ensure-debian-packages.sh``; where it cannot be
installed (not root, no apt, no network) the browser tests skip and say why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sidecar.cli import main
from sidecar.scenarios.synth import SynthOptions, synth
from sidecar.snapshot.io import save_snapshot

ROOT = Path(__file__).resolve().parents[2]
ENSURE = ROOT / "scripts" / "ensure-debian-packages.sh"
GUIDE = str(ROOT / "sidecar" / "data" / "guide-ascend.json")
GUIDE_RUN = str(ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml")


@pytest.fixture(scope="session")
def chromium() -> str:
    """The chromium binary, installed on first use; skip (with the script's reason) when that cannot be done."""
    found = shutil.which("chromium")
    if found:
        return found
    proc = subprocess.run([str(ENSURE), "chromium"], capture_output=True, text=True, timeout=900)
    found = shutil.which("chromium")
    if proc.returncode != 0 or not found:
        pytest.skip(f"chromium is not installed and could not be: {proc.stderr.strip()[-300:]}")
    return found


def dump_dom(chromium: str, page: Path, profile: Path) -> str:
    """The DOM after load and scripts, as headless Chromium serialises it."""
    argv = [
        chromium,
        "--headless",
        "--no-sandbox",  # tests run as root in containers
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.as_uri(),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def write_guide_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    page = tmp_path / "report.html"
    assert main(["plan", "--snapshot", GUIDE, "--run", GUIDE_RUN, "--html", str(page)]) == 0
    assert f"wrote {page}: 3 nodes before and after the plan" in capsys.readouterr().err
    return page


def column(dom: str, node: str) -> str:
    match = re.search(rf'<div class="col[^"]*" data-node="{node}">(.*?)</div></div>', dom, re.DOTALL)
    assert match, f"no column for {node}"
    return match.group(0)


def row(col: str, which: str) -> str:
    match = re.search(rf'<div class="tile {which}"[^>]*>(.*?)</div>', col, re.DOTALL)
    assert match, f"no {which} row"
    return match.group(1)


def test_the_guide_report_is_self_contained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = write_guide_report(tmp_path, capsys).read_text()
    assert not re.search(r"""(src|href)\s*=|https?://|@import|url\(""", text), "no external assets"
    # node-01 holds the two moving workers (orange) and is freed after; node-02 and -03 each receive one (blue)
    freed = column(text, "ascend-node-01")
    assert freed.startswith('<div class="col freed"') and '<div class="name" title="ascend-node-01">' in freed
    assert row(freed, "before").count('<i class="out"></i>') == 2
    for node in ("ascend-node-02", "ascend-node-03"):
        assert row(column(text, node), "after").count('<i class="in"></i>') == 1
    # the moves are a table in the open, each with its pod, from and to
    moves = re.search(r'<table class="moves" id="moves">(.*?)</table>', text, re.DOTALL)
    assert moves and moves.group(1).count("<tr>") == 3
    assert "<td>ascend-node-01</td><td>→ ascend-node-02</td>" in moves.group(1)
    assert "Freed nodes</td><td>1: ascend-node-01" in text


def test_chromium_renders_the_guide_report(chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Read back what the page's own script measured in the real layout: every node's name shown
    on its column, before and after rows in line (issue 25 item 15)."""
    page = write_guide_report(tmp_path, capsys)
    dom = dump_dom(chromium, page, tmp_path / "profile")
    root = re.search(r"<html[^>]*>", dom)
    assert root, dom[:500]
    assert 'data-nodes="3"' in root.group(0) and 'data-named="3"' in root.group(0), root.group(0)
    assert 'data-aligned="true"' in root.group(0), root.group(0)
    assert '<div class="col freed" data-node="ascend-node-01">' in dom
    assert "33.3% -&gt; 0%" in dom


def test_chromium_renders_1500_nodes(chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap, run = tmp_path / "s.pb", tmp_path / "run.yaml"
    save_snapshot(synth(SynthOptions(nodes=1500, cards_per_node=8, fill=0.55, seed=2026)), snap)
    run.write_text("mode: DryRun\ngoals:\n- resource: nvidia.com/gpu\n")
    page = tmp_path / "big.html"
    assert main(["plan", "--snapshot", str(snap), "--run", str(run), "--html", str(page), "-o", "json"]) == 0
    capsys.readouterr()
    assert page.stat().st_size < 2_500_000
    dom = dump_dom(chromium, page, tmp_path / "profile")
    root = re.search(r"<html[^>]*>", dom)
    assert root and 'data-nodes="1500"' in root.group(0) and 'data-named="1500"' in root.group(0), root
    assert 'data-aligned="true"' in root.group(0)
    assert dom.count('<div class="col freed"') > 100


def test_the_package_script_is_idempotent_and_refuses_bad_names() -> None:
    done = subprocess.run([str(ENSURE), "dpkg"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # installed: nothing to do, nothing said
    bad = subprocess.run([str(ENSURE), "--purge"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a Debian package name" in bad.stderr
    assert subprocess.run([str(ENSURE)], capture_output=True, timeout=60).returncode == 2
