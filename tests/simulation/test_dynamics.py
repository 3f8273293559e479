"""The hidden truth's models: each follows its law (long-run shares, persistence), the table
holds them all, and a model's series depends on its seed only."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from placement.errors import InvalidInputError
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.simulation.config import SimConfig
from placement.simulation.dynamics import (
    DYNAMICS,
    Dynamics,
    DynamicsOptions,
    episode_mean_s,
    hidden_truth,
    read_replay,
)

Z = 3.29
"""Normal quantile of the 99.9% two-sided confidence intervals the statistical checks use."""


def cluster(slowdowns: list[Slowdown]) -> Instance:
    servers = tuple(Server(f"s{i}", 1, "A100", 2400.0, slowdown=d) for i, d in enumerate(slowdowns))
    return Instance("sim", servers, (), (Switch("tor"),), tuple(Link(s.id, "tor", 100.0) for s in servers))


def time_at_values(series: Dynamics, horizon: float) -> np.ndarray:
    """Seconds each server spends above its lowest value in [0, horizon]."""
    s = series.start()
    low = np.array([min(x.slowdown.values) for x in series.cluster.servers])
    slow = np.zeros(series.n)
    last = np.zeros(series.n)
    for t, changes in series.changes(s.copy()):
        if t >= horizon:
            break
        for c in changes:
            if s[c.server] > low[c.server]:
                slow[c.server] += t - last[c.server]
            last[c.server], s[c.server] = t, c.value
    slow += np.where(s > low, horizon - last, 0.0)
    return slow


def test_the_table_names_every_model_and_the_config_and_cli_read_it():
    assert set(DYNAMICS) == {"none", "static", "markov", "mixed", "onset", "replay", "measured"}
    assert all(issubclass(cls, Dynamics) and cls.name == name for name, cls in DYNAMICS.items())
    with pytest.raises(
        InvalidInputError, match="dynamics must be one of none, static, markov, mixed, onset, replay, measured"
    ):
        SimConfig(dynamics="bursty")
    with pytest.raises(InvalidInputError, match="persistent_share"):
        SimConfig(dynamics="mixed", persistent_share=1.5)
    with pytest.raises(ValueError, match="episode_median_s"):
        hidden_truth(cluster([Slowdown((1.0,), (1.0,))]), "markov", seed=0, episode_median_s=5.0)
    assert DynamicsOptions(persistent_share=-0.1).problems()


def test_markov_long_run_shares_match_the_distribution():
    d = Slowdown((1.0, 1.5, 4.0), (0.85, 0.1, 0.05))
    c = cluster([d])
    series = hidden_truth(c, "markov", seed=3, episode_median_s=120.0)
    s0 = series.start()
    t_prev, v_prev, horizon = 0.0, float(s0[0]), 3e7
    time_at: dict[float, float] = {}
    for t, changes in series.changes(s0):
        t = min(t, horizon)
        time_at[v_prev] = time_at.get(v_prev, 0.0) + t - t_prev
        if t >= horizon:
            break
        t_prev, v_prev = t, changes[0].value
    shares = {v: time_at.get(v, 0.0) / horizon for v in d.values}
    cycle = episode_mean_s(120.0) / 0.15
    n_cycles = horizon / cycle
    for v, p in zip(d.values, d.probs):
        assert abs(shares[v] - p) <= Z * 2 * math.sqrt(p * (1 - p) / n_cycles), (v, shares[v], p)


def test_none_and_static_never_change_and_static_draws_from_the_law():
    d = Slowdown((1.0, 2.0), (0.7, 0.3))
    c = cluster([d] * 400)
    assert (hidden_truth(c, "none", seed=1).start() == 1.0).all()
    st = hidden_truth(c, "static", seed=1)
    s = st.start()
    assert list(st.changes(s)) == []
    share = float((s > 1.0).mean())
    assert abs(share - 0.3) <= Z * math.sqrt(0.3 * 0.7 / 400)


@pytest.mark.parametrize("ps", [0.0, 0.5, 1.0])
def test_mixed_keeps_each_servers_long_run_law_and_hides_who_is_persistent(ps):
    d = Slowdown((1.0, 2.0, 3.0), (0.6, 0.3, 0.1))
    c = cluster([d] * 200)
    series = hidden_truth(c, "mixed", seed=7, episode_median_s=60.0, persistent_share=ps)
    s0 = series.start()
    persistent = series.persistent
    # persistence is drawn per server with probability ps x (1 - p_low)
    n, p = len(c.servers), ps * 0.4
    assert abs(persistent.mean() - p) <= Z * math.sqrt(max(p * (1 - p), 1e-9) / n) + 1e-12
    # a persistent server starts slow and never changes
    assert (s0[persistent] > 1.0).all()
    moved = {ch.server for _, batch in itertools.islice(series.changes(s0.copy()), 20_000) for ch in batch}
    assert not moved & set(np.flatnonzero(persistent).tolist())
    # the fleet's slow share is the law's (0.4), whatever the split
    horizon = 3e5
    slow = time_at_values(hidden_truth(c, "mixed", seed=7, episode_median_s=60.0, persistent_share=ps), horizon)
    fleet = slow.sum() / (n * horizon)
    assert abs(fleet - 0.4) <= Z * math.sqrt(0.4 * 0.6 / n) + 0.01, fleet
    # the episodes of the rest come less often the more of the slow time is persistent
    if 0 < ps < 1:
        transient = ~persistent
        expected = 0.4 * (1 - ps) / (1 - ps * 0.4)
        assert abs(slow[transient].mean() / horizon - expected) <= 0.03


def test_mixed_with_no_persistent_share_is_markov_in_law():
    d = Slowdown((1.0, 2.5), (0.8, 0.2))
    c = cluster([d] * 200)
    a = time_at_values(hidden_truth(c, "mixed", seed=2, episode_median_s=60.0, persistent_share=0.0), 3e5)
    b = time_at_values(hidden_truth(c, "markov", seed=2, episode_median_s=60.0), 3e5)
    assert abs(a.mean() - b.mean()) / 3e5 <= 0.01


@pytest.mark.parametrize("ps", [0.3, 0.7])
def test_onset_keeps_each_servers_long_run_law_with_a_share_of_slow_time_in_regimes_of_hours(ps):
    from placement.simulation.dynamics.onset import REGIME, REGIME_MEDIAN_S, REGIME_MIN_S

    d = Slowdown((1.0, 2.0, 3.0), (0.7, 0.2, 0.1))
    c = cluster([d] * 40)
    series = hidden_truth(c, "onset", seed=5, episode_median_s=300.0, persistent_share=ps)
    s = series.start()
    horizon = 3e7
    slow = np.zeros(series.n)
    regime = np.zeros(series.n)
    last = np.zeros(series.n)
    kind = [series.kind_at(sp, 0.0) for sp in range(series.n)]
    lengths = []
    for t, changes in series.changes(s.copy()):
        if t >= horizon:
            break
        for ch in changes:
            sp = ch.server
            if s[sp] > 1.0:
                slow[sp] += t - last[sp]
                if kind[sp] == REGIME:
                    regime[sp] += t - last[sp]
                    lengths.append(t - last[sp])
            kind[sp] = series.kind_at(sp, t)  # the period that begins now
            last[sp], s[sp] = t, ch.value
    # the fleet's slow share is the law's; the share of it in regimes is ps
    share = slow.sum() / (series.n * horizon)
    assert abs(share - 0.3) <= 0.02, share
    assert abs(regime.sum() / slow.sum() - ps) <= 0.05
    # regimes last hours: none under an hour, the median near the law's
    assert min(lengths) >= REGIME_MIN_S
    assert 0.8 * REGIME_MEDIAN_S <= float(np.median(lengths)) <= 1.25 * REGIME_MEDIAN_S


def test_the_onset_forecast_expects_a_regime_to_last_and_an_episode_to_end():
    from placement.simulation.dynamics.onset import EPISODE, REGIME

    c = cluster([Slowdown((1.0, 3.0), (0.8, 0.2))])
    o = hidden_truth(c, "onset", seed=0)
    o.kinds[0] = [(0.0, REGIME)]
    in_regime = dict(zip(*o.forecast(0, 3.0, 3600.0, at_s=10.0)))[3.0]
    o.kinds[0] = [(0.0, EPISODE)]
    in_episode = dict(zip(*o.forecast(0, 3.0, 3600.0, at_s=10.0)))[3.0]
    assert in_regime > 0.75 > 0.5 > in_episode
    far = dict(zip(*o.forecast(0, 1.0, 1e9, at_s=10.0)))
    assert far[3.0] == pytest.approx(0.2, abs=1e-3)
    # the kind is the one the clock is in: a period drawn ahead has not begun
    o.kinds[0] = [(0.0, REGIME), (100.0, EPISODE)]
    assert o.kind_at(0, 50.0) == REGIME and o.kind_at(0, 100.0) == EPISODE


def test_a_models_series_depends_on_its_seed_only():
    c = cluster([Slowdown((1.0, 2.0), (0.8, 0.2))] * 20)
    for kind in ("static", "markov", "mixed", "onset"):
        a, b = hidden_truth(c, kind, seed=4), hidden_truth(c, kind, seed=4)
        sa, sb = a.start(), b.start()
        assert (sa == sb).all()
        ca = [(t, [(x.server, x.value) for x in ch]) for t, ch in itertools.islice(a.changes(sa), 200)]
        cb = [(t, [(x.server, x.value) for x in ch]) for t, ch in itertools.islice(b.changes(sb), 200)]
        assert ca == cb
    # mixed draws persistence from a stream of its own: its transient servers' first
    # state is markov's where both use the same law (persistent_share 0)
    m0 = hidden_truth(c, "mixed", seed=4, persistent_share=0.0).start()
    mk = hidden_truth(c, "markov", seed=4).start()
    assert (m0 == mk).all()


def test_replay_reads_every_bad_row_at_once(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("time_s,server,slowdown\n0,s0,2\nx,s1,1\n5,,0.5\n")
    with pytest.raises(InvalidInputError) as e:
        read_replay(p)
    text = str(e.value)
    assert "row 3" in text and "row 4" in text and "empty server" in text
    p.write_text("time_s,server,slowdown\n0,s0,2\n10,s0,1\n10,s1,3\n")
    series = hidden_truth(cluster([Slowdown((1.0,), (1.0,))] * 2), "replay", seed=0, replay_path=p)
    s0 = series.start()
    assert s0.tolist() == [2.0, 1.0]
    assert [(t, [(x.server, x.value) for x in ch]) for t, ch in series.changes(s0)] == [(10.0, [(0, 1.0), (1, 3.0)])]


def _slow_share_over(series: Dynamics, sp: int, horizon: float, starts: int, seed_rng: np.random.Generator) -> float:
    """Empirical time-averaged share of [0, horizon] that server ``sp`` spends at a value
    above its lowest, over ``starts`` independent series that all start in an episode."""
    total = 0.0
    low = min(series.cluster.servers[sp].slowdown.values)
    for _ in range(starts):
        s = hidden_truth(
            series.cluster, series.name, seed=int(seed_rng.integers(2**31)), episode_median_s=series.median
        )
        s0 = s.start()
        s0[sp] = max(series.cluster.servers[sp].slowdown.values)
        t_prev, slow = 0.0, True
        for t, changes in s.changes(s0.copy()):
            if t >= horizon:
                break
            for c in changes:
                if c.server == sp:
                    total += (t - t_prev) if slow else 0.0
                    t_prev, slow = t, c.value > low
        total += (horizon - t_prev) if slow else 0.0
    return total / (starts * horizon)


def test_the_markov_forecast_goes_from_the_state_now_to_the_long_run_law():
    d = Slowdown((1.0, 3.0), (0.8, 0.2))
    c = cluster([d])
    m = hidden_truth(c, "markov", seed=0, episode_median_s=300.0)
    values, probs = m.forecast(0, 3.0, 0.0)
    assert values == (3.0,) and probs == (1.0,)
    far = dict(zip(*m.forecast(0, 3.0, 1e9)))
    assert far[3.0] == pytest.approx(0.2, abs=1e-4) and far[1.0] == pytest.approx(0.8, abs=1e-4)
    near = dict(zip(*m.forecast(0, 1.0, 1e9)))
    assert near[1.0] == pytest.approx(0.8, abs=1e-4)
    # monotone in the horizon, and a valid law every time
    shares = [dict(zip(*m.forecast(0, 3.0, h)))[3.0] for h in (10, 100, 1000, 10_000, 100_000)]
    assert shares == sorted(shares, reverse=True)
    # against the lognormal episodes the chain is an approximation: within 0.08 of the
    # time-averaged share measured on 400 series that start in an episode
    rng = np.random.default_rng(1)
    for h in (300.0, 3000.0):
        got = _slow_share_over(m, 0, h, 400, rng)
        want = dict(zip(*m.forecast(0, 3.0, h)))[3.0]
        assert abs(got - want) <= 0.08, (h, got, want)


def test_a_persistent_stragglers_forecast_is_its_value_and_static_keeps_the_state():
    d = Slowdown((1.0, 2.0), (0.5, 0.5))
    c = cluster([d] * 60)
    mixed = hidden_truth(c, "mixed", seed=3, persistent_share=1.0)
    s = mixed.start()
    sp = int(np.flatnonzero(mixed.persistent)[0])
    assert mixed.forecast(sp, float(s[sp]), 1e7) == ((float(s[sp]),), (1.0,))
    other = int(np.flatnonzero(~mixed.persistent)[0])
    assert len(mixed.forecast(other, float(s[other]), 1e7)[0]) >= 1
    st = hidden_truth(c, "static", seed=3)
    assert st.forecast(0, 2.0, 1e7) == ((2.0,), (1.0,))


def test_hindsight_reads_each_servers_path_ahead_without_changing_what_happens():
    """``hindsight`` knowledge: a server's values over the coming horizon weighted by the time
    it spends at each, read ahead from the dynamics' changes; the changes then come out in
    the same order, read ahead or not."""
    import numpy as np

    from placement.simulation.dynamics.base import Change
    from placement.simulation.hindsight import Lookahead

    items = [
        (10.0, [Change(10.0, 0, 2.0)]),
        (30.0, [Change(30.0, 0, 1.0), Change(30.0, 1, 3.0)]),
        (100.0, [Change(100.0, 1, 1.0)]),
    ]
    ahead = Lookahead(iter(items))
    assert ahead.next() == items[0]  # pushed to the event heap, applies at t = 10
    S = np.array([1.0, 1.0])
    path = ahead.path(S, 0.0, 40.0, ["a", "b"])
    assert path["a"].values == (1.0, 2.0) and np.allclose(path["a"].probs, (20 / 40, 20 / 40))
    assert path["b"].values == (1.0, 3.0) and np.allclose(path["b"].probs, (30 / 40, 10 / 40))
    S = np.array([2.0, 1.0])  # at t = 10 the first change applied
    assert ahead.path(S, 10.0, 0.0, ["a", "b"])["a"].values == (2.0,)  # no horizon: the value now
    assert [ahead.next(), ahead.next(), ahead.next()] == [items[1], items[2], None]
    plain = Lookahead(iter(items))
    assert [plain.next() for _ in range(4)] == [*items, None]


def test_hindsight_knowledge_runs_and_knows_no_less_than_the_state_now():
    """A simulation with ``hindsight`` knowledge finishes every job and, on a cluster where
    servers alternate, its mean JCT is no worse than the laws' (``oracle``) beyond noise."""
    from placement.instances import load_bundled
    from placement.simulation.engine import simulate
    from placement.simulation.workload import TraceJob, Workload

    jobs = tuple(TraceJob(f"j{i}", 600.0 * i, 8, 3000, 300.0, 50.0) for i in range(12))
    w = Workload(jobs, "twelve", {})
    runs = {
        k: simulate(load_bundled("demo"), w, method="greedy", knowledge=k, dynamics="markov", seed=3).summary
        for k in ("oracle", "hindsight")
    }
    assert runs["hindsight"]["jobs_finished"] == 12
    assert runs["hindsight"]["avg_jct_s"] <= runs["oracle"]["avg_jct_s"] * 1.02, runs
