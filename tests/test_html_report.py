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

ROOT = Path(__file__).resolve().parents[1]
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


def grid(dom: str, which: str) -> str:
    match = re.search(rf'<div class="grid" id="{which}">(.*?)</div>\s*(?:<h2|<details)', dom, re.DOTALL)
    assert match, f"no {which} grid"
    return match.group(1)


def test_the_guide_report_is_self_contained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = write_guide_report(tmp_path, capsys).read_text()
    assert not re.search(r"""(src|href)\s*=|https?://|@import|url\(""", text), "no external assets"
    before, after = grid(text, "before"), grid(text, "after")
    # node-01 holds the two moving workers (orange) and is freed after; node-02 and -03 each receive one (blue)
    assert re.search(r'<div class="node" data-node="ascend-node-01"[^>]*>(<i class="out"></i>){2}', before)
    assert '<div class="node freed" data-node="ascend-node-01"' in after
    for node in ("ascend-node-02", "ascend-node-03"):
        tile = re.search(rf'<div class="node" data-node="{node}"[^>]*>(.*?)</div>', after)
        assert tile and tile.group(1).count('<i class="in">') == 1


def test_chromium_renders_the_guide_report(chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = write_guide_report(tmp_path, capsys)
    dom = dump_dom(chromium, page, tmp_path / "profile")
    # the inline script ran to its end (a JS error would leave the attribute unset)
    assert re.search(r'<html[^>]*data-tiles="6"', dom)
    assert len(re.findall(r'<div class="node[ "]', dom)) == 6
    assert '<div class="node freed" data-node="ascend-node-01"' in grid(dom, "after")
    assert "33.3% → 0%" in dom


def test_chromium_renders_1500_nodes(chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap, run = tmp_path / "s.pb", tmp_path / "run.yaml"
    save_snapshot(synth(SynthOptions(nodes=1500, cards_per_node=8, fill=0.55, seed=2026)), snap)
    run.write_text("mode: DryRun\ngoals:\n- resource: nvidia.com/gpu\n")
    page = tmp_path / "big.html"
    assert main(["plan", "--snapshot", str(snap), "--run", str(run), "--html", str(page), "-o", "json"]) == 0
    capsys.readouterr()
    assert page.stat().st_size < 2_000_000
    dom = dump_dom(chromium, page, tmp_path / "profile")
    assert re.search(r'<html[^>]*data-tiles="3000"', dom)
    assert dom.count('<div class="node freed"') > 100


def test_the_package_script_is_idempotent_and_refuses_bad_names() -> None:
    done = subprocess.run([str(ENSURE), "dpkg"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # installed: nothing to do, nothing said
    bad = subprocess.run([str(ENSURE), "--purge"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a Debian package name" in bad.stderr
    assert subprocess.run([str(ENSURE)], capture_output=True, timeout=60).returncode == 2
