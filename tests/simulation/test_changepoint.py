"""Change-point detection on each server's looks: exact Bayes within one segment, a fail-slow
onset and its healing found within a few looks, an ordinary episode not taken for a change,
and the estimator forgetting what a server showed before its onset."""

from __future__ import annotations

import math

import numpy as np
import pytest

import placement.simulation.changepoint as cpmod
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.simulation.changepoint import P_GRID, ChangePoints
from placement.simulation.engine import simulate
from placement.simulation.workload import TraceJob, Workload

GAP = 600.0
EPISODE = 900.0


def feed(cp: ChangePoints, looks: list[int], start: float = GAP) -> list[float]:
    """Looks at server 0, ``GAP`` apart from ``start``; their times."""
    times = []
    for i, x in enumerate(looks):
        t = start + i * GAP
        cp.update(t, np.array([0]), np.array([bool(x)]), EPISODE)
        times.append(t)
    return times


def test_without_changes_the_posterior_is_bayes_over_the_slow_share(monkeypatch):
    # no hazard, looks so far apart that they are independent: one segment, Bernoulli(p) looks
    monkeypatch.setattr(cpmod, "CHANGE_EVERY_S", math.inf)
    cp = ChangePoints(1, 50)
    looks = [1, 0, 0, 1, 0, 0, 0, 1, 0, 0]
    for i, x in enumerate(looks):
        cp.update(1e9 * (i + 1), np.array([0]), np.array([bool(x)]), EPISODE)
    w = cp.w[0]
    assert w[len(looks) - 1].sum() == pytest.approx(1.0)
    s, m = sum(looks), len(looks)
    want = P_GRID**s * (1 - P_GRID) ** (m - s)
    np.testing.assert_allclose(w[len(looks) - 1], want / want.sum(), rtol=1e-9)
    assert cp.since()[0] == pytest.approx(1e9)  # the segment began at the first look


def test_an_onset_and_its_healing_are_found_within_a_few_looks():
    """Looks 10 minutes apart, the fleet's episodes 15 minutes long on average: an hour of slow
    looks is an onset; after a regime of hours, as many normal looks are its healing (after a
    run of two hours, one segment with long episodes would still explain them as well)."""
    cp = ChangePoints(1, 145)
    healthy = feed(cp, [0] * 60)
    assert cp.since()[0] == healthy[0]
    slow = feed(cp, [1] * 6, start=healthy[-1] + GAP)
    assert cp.since()[0] == slow[0]
    slow += feed(cp, [1] * 30, start=slow[-1] + GAP)  # a regime of 6 hours
    assert cp.since()[0] == slow[0]
    healed = feed(cp, [0] * 12, start=slow[-1] + GAP)
    assert cp.since()[0] == healed[0]
    assert cp.found == 2
    # the looks before the healing are forgotten, those since it kept
    times = healthy + slow + healed
    kept = dict(zip(times, cp.kept([np.array([0, 0])] * len(times))[::2]))  # two rows per look
    assert kept[healthy[0]] < 0.01 and kept[slow[-1]] < 0.1 and kept[healed[0]] > 0.95
    assert kept[healed[-1]] == pytest.approx(1.0)


def test_an_episode_of_the_fleets_length_is_not_a_change():
    cp = ChangePoints(1, 145)
    times = feed(cp, [0] * 40 + [1, 1] + [0] * 40)
    assert cp.since()[0] == times[0] and cp.found == 0
    # every look is still believed to be of the one segment
    assert (cp.kept([np.array([0])] * len(times)) > 0.9).all()


def test_servers_are_tracked_apart_and_unseen_ones_have_no_change():
    cp = ChangePoints(3, 20)
    for i in range(15):
        cp.update(GAP * (i + 1), np.array([0, 2]), np.array([i >= 5, False]), EPISODE)
    since = cp.since()
    assert since[0] == GAP * 6 and since[2] == GAP and since[1] == -np.inf
    assert cp.run_lengths()[1] == 0
    # a segment as long as the window is older than it: nothing to forget
    for i in range(15, 60):
        cp.update(GAP * (i + 1), np.array([2]), np.array([False]), EPISODE)
    assert cp.since()[2] == -np.inf


def test_the_estimator_forgets_what_a_server_showed_before_its_onset(tmp_path):
    """Four one-worker jobs on four servers; after 20 healthy hours s0 turns 3x slow until its
    job ends about 3 h later: weighing the whole day, s0 still looks mostly healthy;
    forgetting the looks before the change, it looks as slow as it is."""
    p = tmp_path / "replay.csv"
    p.write_text("time_s,server,slowdown\n72000,s0,3.0\n")
    law = Slowdown((1.0, 3.0), (0.9, 0.1))
    servers = tuple(Server(f"s{i}", 1, "A100", 2400.0, slowdown=law) for i in range(4))
    c = Instance("sim", servers, (), (Switch("tor"),), tuple(Link(s.id, "tor", 100.0) for s in servers))
    w = Workload(tuple(TraceJob(f"j{i}", 0.0, 1, 760_000, 100.0, 50.0) for i in range(4)), "four jobs", {})
    believed = {}
    for mode in ("off", "bocpd"):
        r = simulate(
            c, w, method="greedy", knowledge="estimated", dynamics="replay", replay_path=str(p), change_points=mode
        )
        on_s0 = next(j for j in r.jobs if j["placement"] == "s0:1")
        assert on_s0["jct_s"] == pytest.approx(72_000 + 40_000 * 0.3, rel=1e-9)
        believed[mode] = r.believed_mean["s0"]
        found = r.summary["change_points_found"]
        assert found is None if mode == "off" else found == 1
    assert believed["off"] < 1.6
    assert believed["bocpd"] > 2.5
