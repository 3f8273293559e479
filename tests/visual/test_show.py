"""``placement show`` and ``placement.visual.show``: valid PNG, SVG and self-contained HTML on
bundled instances and on a 4,000-server fleet; the job asked for stands out."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import matplotlib.image as mpimg
import pytest
from click.testing import CliRunner

import placement
from placement.cli.main import cli
from placement.instances.generate import generate
from placement.instances.scaling import SCALING
from placement.visual import show


@pytest.fixture(scope="module")
def pod256():
    inst = placement.load_bundled("pod256")
    return inst, placement.solve(inst, "greedy", seed=0)


def png_pixels(path):
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    assert img[..., :3].std() > 0.05  # not blank
    return img


def test_png_svg_and_html_of_a_bundled_instance(pod256, tmp_path):
    inst, sol = pod256
    png = show(inst, sol, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png_pixels(png)
    svg = show(inst, sol, tmp_path / "p.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = svg.read_text()
    worst = max(sol.jobs, key=lambda j: sol.jobs[j].expected_iteration_ms - sol.jobs[j].ideal_iteration_ms)
    assert f"{worst}: E[T] {sol.jobs[worst].expected_iteration_ms:.1f} ms" in text  # the legend leads with it
    html = show(inst, sol, tmp_path / "p.html").read_text()
    assert '<script src="http' not in html and "Plotly.newPlot" in html  # one self-contained page
    assert "server s0 (rack " in html and "P(slow)" in html  # hover details
    assert 1_000_000 < len(html) < 20_000_000


def test_a_job_stands_out_with_its_tail_shares(pod256, tmp_path):
    inst, sol = pod256
    job = max(sol.jobs, key=lambda j: sol.jobs[j].expected_iteration_ms - sol.jobs[j].ideal_iteration_ms)
    text = show(inst, sol, tmp_path / "j.svg", job=job).read_text()
    tails = placement.explain(inst, sol, job=job)[job]["servers"]
    assert f"{job} highlighted" in text
    assert all(f"{v['tail_share_ms']:.2f}" in text for v in tails.values())
    html = show(inst, sol, tmp_path / "j.html", job=job).read_text()
    assert f"tail share of {job}" in html


def test_a_4000_server_fleet_is_drawn_compactly(tmp_path):
    inst = generate(**SCALING["fleet-4000"])
    sol = placement.solve(inst, "greedy", time_limit_s=30)
    png = show(inst, sol, tmp_path / "f.png")
    img = png_pixels(png)
    assert img.shape[0] < 2500 and img.shape[1] < 3000  # one screen, not a strip 40 inches wide
    assert re.search(r"4000 servers in 200 racks", show(inst, sol, tmp_path / "f.svg").read_text())


def test_the_cli_writes_the_picture_and_refuses_what_it_cannot_draw(tmp_path):
    sol = tmp_path / "s.json"
    assert CliRunner().invoke(cli, ["solve", "tiny", "-m", "greedy", "-q", "-o", str(sol)]).exit_code == 0
    r = CliRunner().invoke(cli, ["show", str(sol), "--instance", "tiny", "-o", str(tmp_path / "t.png")])
    assert r.exit_code == 0 and (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG", r.output
    r = CliRunner().invoke(cli, ["show", str(sol), "--instance", "tiny", "-o", str(tmp_path / "t.gif")])
    assert r.exit_code == 2 and "one of .png, .svg, .html" in r.stderr and not (tmp_path / "t.gif").exists()
    r = CliRunner().invoke(cli, ["show", str(sol), "--instance", "tiny", "-o", str(tmp_path / "u.png"), "--job", "zz"])
    assert r.exit_code == 2 and "--job zz: not placed" in r.stderr


def test_the_picture_of_tiny_matches_the_stored_one(tmp_path):
    """Rendering compared with a stored image (matplotlib's own image comparison, RMS tolerance
    for font rasterisation); to renew it after a deliberate change, rerun ``show`` on greedy's
    placement of ``tiny`` into ``tests/data/visual/tiny-greedy.png``."""
    from matplotlib.testing.compare import compare_images
    from support.paths import DATA

    inst = placement.load_bundled("tiny")
    got = show(inst, placement.solve(inst, "greedy", seed=0), tmp_path / "tiny-greedy.png")
    assert compare_images(str(DATA / "visual" / "tiny-greedy.png"), str(got), tol=8) is None
