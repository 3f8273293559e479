"""The HTML pages in a real browser: Debian's chromium, headless and offline, loads the page
``placement show -o FILE.html`` writes; no console error, plotly's hover layer is built, and a
screenshot has the window's size and is not blank.  Skipped, saying so, where chromium is not
installed (``.ci/run`` installs it as root with apt)."""

from __future__ import annotations

import shutil
import subprocess

import matplotlib.image as mpimg
import pytest

import placement
from placement.visual import show

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,800",
    "--virtual-time-budget=10000",
    "--enable-logging=stderr",
    "--v=0",
)


def chromium(page, tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, page.resolve().as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    inst = placement.load_bundled("pod256")
    sol = placement.solve(inst, "greedy", seed=0)
    job = max(sol.jobs, key=lambda j: sol.jobs[j].expected_iteration_ms - sol.jobs[j].ideal_iteration_ms)
    return show(inst, sol, tmp_path_factory.mktemp("html") / "pod256.html", job=job)


def test_the_page_loads_offline_without_console_errors_and_builds_its_hover_layer(page, tmp_path):
    proc = chromium(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert 'class="main-svg"' in dom and "hoverlayer" in dom  # plotly drew the figure and its hover layer
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == []  # nothing logged: no error, no warning (a thrown error shows as "Uncaught ...")


def test_a_compare_report_loads_offline_and_shows_its_plots(tmp_path):
    from placement.compare import compare

    out = tmp_path / "c"
    compare(["tiny"], ["greedy", "consolidate"], time_limits=[1.0], out_dir=out, progress=False, say=lambda m: None)
    proc = chromium(out / "report.html", tmp_path, "--dump-dom")
    assert proc.returncode == 0 and [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln] == []
    assert proc.stdout.count("<img") == 3 and "Why the worst jobs wait" in proc.stdout
    shot = tmp_path / "report.png"
    assert chromium(out / "report.html", tmp_path, f"--screenshot={shot}").returncode == 0
    assert mpimg.imread(shot)[..., :3].std() > 0.05


def test_a_screenshot_has_the_window_s_size_and_is_not_blank(page, tmp_path):
    shot = tmp_path / "shot.png"
    proc = chromium(page, tmp_path, f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    img = mpimg.imread(shot)
    assert img.shape[:2] == (800, 1200)
    assert img[..., :3].std() > 0.05  # a figure, not a white page
