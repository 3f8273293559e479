"""The scheduler's horizon forecast (``estimated`` knowledge, ``plan_by="forecast"``) against
the markov law it has to learn from looks at the servers."""

from __future__ import annotations

import numpy as np
import pytest

from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.simulation.dynamics import hidden_truth
from placement.simulation.forecast import fit_episode_mean, fit_forecaster, kept, memory, mix, rate


def _cluster(d: Slowdown, n: int) -> Instance:
    servers = tuple(Server(f"s{i}", 1, "A100", 2400.0, slowdown=d) for i in range(n))
    return Instance("f", servers, (), (Switch("tor"),), tuple(Link(s.id, "tor", 100.0) for s in servers))


def _looks(series, n: int, every_s: float, until_s: float) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Every server's value at every tick of ``every_s`` seconds (a look through one worker)."""
    s = series.start()
    ticks = np.arange(0.0, until_s, every_s)
    out, k = [], 0
    for t, changes in series.changes(s.copy()):
        while k < len(ticks) and ticks[k] < t:
            out.append((float(ticks[k]), np.arange(n), s.copy()))
            k += 1
        if k == len(ticks):
            break
        for c in changes:
            s[c.server] = c.value
    return out


def test_mixing_keeps_a_law_and_moves_weight_to_the_state_seen():
    assert mix((1.0, 3.0), (0.8, 0.2), 3.0, 0.5) == ((1.0, 3.0), (0.4, 0.6))
    v, p = mix((1.0, 3.0), (0.8, 0.2), 2.0, 0.25)
    assert v == (1.0, 3.0, 2.0) and p == pytest.approx((0.6, 0.15, 0.25))
    # the weight decays with the look's age and with the horizon
    assert memory(0.01, 0.0) == 1.0 and memory(0.01, 0.0, 100.0) == pytest.approx(np.exp(-1.0))
    assert memory(0.01, 100.0) == pytest.approx(kept(1.0))
    assert rate(600.0, 1.0) == 0.0 and rate(600.0, 0.5) == pytest.approx(1.0 / 300.0)


def test_the_episode_length_is_recovered_from_pairs_of_looks():
    rng = np.random.default_rng(3)
    for mean_ep in (200.0, 900.0, 5000.0):
        d = rng.choice([300.0, 600.0, 1200.0], size=20_000)
        s = rng.choice([0.1, 0.3], size=20_000)
        p = 2 * s * (1 - s) * -np.expm1(-d / (mean_ep * (1 - s)))
        got = fit_episode_mean(d, s, rng.random(20_000) < p, 30.0, 36_000.0)
        assert got == pytest.approx(mean_ep, rel=0.15)
    # nothing changed: the longest; everything changed: the shortest
    assert fit_episode_mean(np.full(9, 600.0), np.full(9, 0.2), np.zeros(9, bool), 30.0, 36_000.0) == 36_000.0
    assert fit_episode_mean(np.full(9, 600.0), np.full(9, 0.2), np.ones(9, bool), 30.0, 36_000.0) == 30.0


@pytest.mark.parametrize("median", [300.0, 3000.0])
def test_the_fitted_forecast_follows_the_markov_law(median):
    """Looks every 600 s at 60 markov servers for four days: the fitted mean episode is the
    truth's within 35%, and a server seen slow just now is forecast within 0.08 of the
    truth's own forecast of its slow share at horizons from 5 minutes to a day."""
    d = Slowdown((1.0, 3.0), (0.8, 0.2))
    n = 60
    c = _cluster(d, n)
    truth = hidden_truth(c, "markov", seed=5, episode_median_s=median)
    looks = _looks(truth, n, 600.0, 4 * 86_400.0)
    now = looks[-1][0]
    laws = {s.id: d for s in c.servers}  # the law is the estimator's job; this is the forecast's
    f = fit_forecaster(looks, now, laws, [s.id for s in c.servers])
    assert f.mean_episode_s == pytest.approx(truth.mean_episode, rel=0.35)
    slow_now = [sp for sp in range(n) if looks[-1][2][sp] > 1.0]
    assert slow_now
    sid = c.servers[slow_now[0]].id
    for h in (300.0, 3600.0, 86_400.0):
        got = dict(zip(f.forecast(h)[sid].values, f.forecast(h)[sid].probs))[3.0]
        want = dict(zip(*truth.forecast(slow_now[0], 3.0, h)))[3.0]
        assert got == pytest.approx(want, abs=0.08), (h, got, want)
    # a server never looked at keeps its law
    g = fit_forecaster(looks[:1], now, {**laws, "unseen": d}, [s.id for s in c.servers] + ["unseen"])
    assert g.forecast(600.0)["unseen"] == d
