"""The ``measured`` dynamics: its cluster carries the long-run laws (one switch per domain), its
series keeps them, and every draw follows the seed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from placement.bench.probes import probe_cluster
from placement.problem.congestion import congestion_of
from placement.simulation.dynamics import MEASURED, hidden_truth, measured_cluster


def test_the_cluster_carries_the_long_run_laws_one_switch_per_domain():
    c = measured_cluster(probe_cluster(pods=2, racks=2, servers=4))
    assert all(s.slowdown == MEASURED.server_law() for s in c.servers)
    laws = congestion_of(c).laws
    assert len(laws) == 2 * 2 + 2 + 1  # racks, pods, core
    held = [w for w in c.switches if not w.congestion.is_trivial]
    assert len(held) == len(laws)
    core = next(w for w in c.switches if w.id == "core")
    assert core.congestion == MEASURED.domain_law(16)
    assert MEASURED.domain_law(16).probs[0] < MEASURED.domain_law(4).probs[0]  # larger domains congest more


def _shares(kind_seed: int, horizon_s: float) -> tuple[np.ndarray, np.ndarray, object]:
    c = probe_cluster(pods=1, racks=2, servers=8)
    t = hidden_truth(c, "measured", seed=kind_seed)
    s = t.run_start()
    now, state = 0.0, s.copy()
    spent = np.zeros(len(s))  # time above 1, per state
    for when, changes in itertools.takewhile(lambda tc: tc[0] < horizon_s, t.run_changes(s.copy())):
        spent += (state > 1.0) * (when - now)
        now = when
        for ch in changes:
            state[ch.server] = ch.value
    spent += (state > 1.0) * (horizon_s - now)
    return spent / horizon_s, s, t


def test_the_series_keeps_the_long_run_shares():
    shares, _, t = _shares(3, 400 * 86_400.0)
    n = t.n
    server_slow = 1.0 - MEASURED.server_law().probs[0]
    assert shares[:n].mean() == pytest.approx(server_slow, rel=0.25)
    pod = MEASURED.domain_law(16)
    assert shares[n:].max() == pytest.approx(1.0 - pod.probs[0], rel=0.35)  # the pod's


def test_the_series_follows_the_seed():
    c = probe_cluster(pods=1, racks=2, servers=4)
    a = list(itertools.islice(hidden_truth(c, "measured", seed=5).run_changes(np.ones(8 + 3)), 200))
    b = list(itertools.islice(hidden_truth(c, "measured", seed=5).run_changes(np.ones(8 + 3)), 200))
    assert a == b
