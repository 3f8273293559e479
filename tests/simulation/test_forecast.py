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


def test_states_weigh_by_iterations_from_the_state_held_to_the_steady_rate():
    from placement.simulation.forecast import by_iterations

    v, p = (1.0, 12.0), (0.99, 0.01)
    assert by_iterations(v, p, 1.0) == Slowdown(v, p)  # a state held: every iteration sees it
    steady = by_iterations(v, p, 0.0)  # a state that changes through the horizon: the steady rate
    assert steady.mean() == pytest.approx(1.0 / (0.99 + 0.01 / 12.0))
    # a minutes-long 12x episode costs a long job about its length, not eleven times it
    assert steady.mean() - 1.0 < (0.01 * 11.0) / 10.0
    assert by_iterations(v, p, 0.5).mean() == pytest.approx(0.5 * (1.0 + 0.11) + 0.5 * steady.mean())


def _aged_looks(rng: np.random.Generator, n: int, ticks: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Looks every 600 s at ``n`` servers: short episodes (one look, gone by the next) on every
    server now and then, and a few servers slow for hours at a stretch."""
    state = np.ones(n)
    left = np.zeros(n)
    out = []
    for k in range(ticks):
        left -= 1
        state[left <= 0] = 1.0
        start = (left <= 0) & (rng.random(n) < 0.03)
        long = start & (rng.random(n) < 0.15)
        state[start] = 3.0
        left[start] = np.where(long[start], 24, 1)
        out.append((600.0 * k, np.arange(n), state.copy()))
    return out


def test_aged_forecasts_tell_onsets_from_lasting_episodes():
    from placement.simulation.decisions import forecaster_from_dict, forecaster_to_dict

    rng = np.random.default_rng(0)
    n = 80
    looks = _aged_looks(rng, n, 600)
    ids = [f"s{i}" for i in range(n)]
    law = Slowdown((1.0, 3.0), (0.93, 0.07))
    laws = dict.fromkeys(ids, law)
    now = looks[-1][0]
    f = fit_forecaster(looks, now, laws, ids, aged=True)
    assert f.onset_s is not None and f.lasting_s is not None
    # an onset is mostly a short episode; one slow at two looks running mostly a long one
    assert f.onset_s < 1200.0 < 5 * 600.0 < f.lasting_s
    slow = looks[-1][2] > 1.0
    before = looks[-2][2] > 1.0
    onset = next(ids[i] for i in range(n) if slow[i] and not before[i])
    lasting = next(ids[i] for i in range(n) if slow[i] and before[i])
    assert f.episode_age[onset] == 0.0 and f.episode_age[lasting] >= 600.0
    day = f.forecast(86_400.0)
    assert day[lasting].mean() > day[onset].mean()
    # the fleet's forecaster (the default) has no classes and weighs states by time, as before
    g = fit_forecaster(looks, now, laws, ids)
    assert (g.onset_s, g.lasting_s, g.aged) == (None, None, False)
    assert g.forecast(3600.0)[onset] == Slowdown(
        *mix(law.values, law.probs, 3.0, memory(rate(g.mean_episode_s, 0.93), 3600.0, 0.0))
    )
    # stored and read back (a record stored before the classes reads as the fleet's)
    h = forecaster_from_dict(forecaster_to_dict(f), laws)
    assert h is not None and h.forecast(86_400.0) == day
    old = forecaster_to_dict(g)
    assert old is not None
    for key in ("episode_age", "onset_s", "lasting_s", "aged"):
        old.pop(key)
    r = forecaster_from_dict(old, laws)
    assert r is not None and r.forecast(3600.0) == g.forecast(3600.0)
