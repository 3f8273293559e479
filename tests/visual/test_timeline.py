"""The servers-over-time picture of a simulation: its slow shares are the hidden truth's, bin by
bin, and ``placement simulate`` writes it beside its other plots."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest
from click.testing import CliRunner

from placement.cli.main import cli
from placement.visual.timeline import _slow_share, servers_over_time


def test_the_slow_share_of_each_bin_integrates_the_series():
    # s0: 1.0 until 30, 2.0 until 50, 1.0 after; s1: 3.0 from the start, 1.0 from 10
    changes = {"time_s": [10.0, 30.0, 50.0], "server": ["s1", "s0", "s0"], "value": [1.0, 2.0, 1.0]}
    share, mean = _slow_share(["s0", "s1"], {"s0": 1.0, "s1": 3.0}, changes, np.array([0.0, 20.0, 40.0, 60.0]))
    assert share[0] == pytest.approx([0.0, 0.5, 0.5])
    assert share[1] == pytest.approx([0.5, 0.0, 0.0])
    assert mean[0] == pytest.approx([1.0, 1.5, 1.5]) and mean[1] == pytest.approx([2.0, 1.0, 1.0])


def test_a_picture_of_jobs_and_episodes(tmp_path):
    jobs = [
        {"job": "a", "start_s": 0, "end_s": 40, "placement": "s0:2"},
        {"job": "b", "start_s": 5, "end_s": 60, "placement": "s1:1"},
    ]
    out = servers_over_time(
        ["s0", "s1"],
        {"s0": 1.0, "s1": 3.0},
        {"time_s": [10.0], "server": ["s1"], "value": [1.0]},
        jobs,
        tmp_path / "s.png",
    )
    img = mpimg.imread(out)
    assert img.shape[0] > 300 and img[..., :3].std() > 0.05


def test_simulate_writes_servers_png(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(
        "submit_s,workers,iterations,model\n" + "".join(f"{60 * i},{1 + i % 3},400,resnet50\n" for i in range(12))
    )
    out = tmp_path / "sim"
    r = CliRunner().invoke(
        cli, ["simulate", "tiny", "--trace", str(trace), "-m", "greedy", "--no-reference", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert (out / "servers.png").read_bytes()[:4] == b"\x89PNG" and (
        out / "servers" / "greedy-oracle-markov-seed0.png"
    ).exists()
    assert "![servers](servers.png)" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "The jobs stragglers cost most" in page
