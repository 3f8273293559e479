"""Forecasts for a horizon: what a server shows, averaged over the next ``h`` seconds, given
its state when last seen and its long-run law (DESIGN.md, "Forecast for a horizon").

One model serves the hidden truth's own forecast (:meth:`.dynamics.markov.Markov.forecast`,
the ``clairvoyant`` reference) and the scheduler's (:func:`fit_forecaster`, ``estimated``
knowledge): a two-state chain (normal, slow) with rate ``k = 1/E[episode] + 1/E[normal]`` keeps
its state ``t`` seconds later with probability ``exp(-k t)`` and is at its long-run law
otherwise; averaged over ``[age, age + h]`` the state seen ``age`` seconds ago keeps the weight
``exp(-k age) (1 - exp(-k h)) / (k h)``.  A short job sees the state now, a long one the law.

The scheduler learns ``k`` from its own logs: with a slow share ``p``, two looks at one server
``d`` seconds apart differ in state with probability ``2 p (1 - p) (1 - exp(-k d))``
(:func:`fit_episode_mean`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placement.estimate.logs import bin_index
from placement.model.records import Slowdown

__all__ = [
    "LOOK_WEIGHT_FIRST",
    "Forecaster",
    "fit_episode_mean",
    "low_share",
    "kept",
    "memory",
    "mix",
    "rate",
    "server_looks",
]


def kept(x: float) -> float:
    """``(1 - exp(-x)) / x``: the average over [0, x] of ``exp(-t)`` (1 at x = 0).

    >>> kept(0.0), round(kept(1.0), 4)
    (1.0, 0.6321)
    """
    x = max(x, 0.0)
    return 1.0 if x < 1e-9 else -math.expm1(-x) / x


def memory(rate: float, horizon_s: float, age_s: float = 0.0) -> float:
    """The weight a state seen ``age_s`` seconds ago keeps over the next ``horizon_s``
    seconds, for a chain of ``rate`` (changes per second, both ways)."""
    return math.exp(-rate * max(age_s, 0.0)) * kept(rate * horizon_s)


def mix(
    values: Sequence[float] | np.ndarray, law: Sequence[float] | np.ndarray, now: float, rho: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The forecast ``(1 - rho) law + rho * [now]`` as ``(values, probs)`` (``now`` joins the
    values if it is not one of them)."""
    values = np.asarray(values, dtype=float)
    probs = (1.0 - rho) * np.asarray(law, dtype=float)
    hit = np.flatnonzero(np.isclose(values, now))
    if len(hit):
        probs[hit[0]] += rho
    else:
        values, probs = np.append(values, now), np.append(probs, rho)
    keep = probs > 1e-12
    return tuple(float(v) for v in values[keep]), tuple(float(p) for p in probs[keep] / probs[keep].sum())


def rate(mean_episode_s: float, low_share: float) -> float:
    """The two-state chain's rate ``k = 1/E[episode] + 1/E[normal]`` of a server that spends
    ``low_share`` of its time out of episodes (``E[normal] = E[episode] p / (1 - p)``), so
    ``k = 1 / (E[episode] p)``; 0 for a server that never slows down."""
    if low_share >= 1.0 or mean_episode_s <= 0.0:
        return 0.0
    return 1.0 / (mean_episode_s * max(low_share, 1e-9))


def fit_episode_mean(gap_s: np.ndarray, slow_share: np.ndarray, differ: np.ndarray, lo_s: float, hi_s: float) -> float:
    """The mean episode length (seconds, within ``[lo_s, hi_s]``) under which pairs of looks
    at one server ``gap_s`` apart, at a server of ``slow_share``, differ in state as often as
    ``differ`` says they did: a look at ``d`` seconds differs with probability
    ``2 s (1 - s) (1 - exp(-k d))``, ``k = rate(E, 1 - s)``, decreasing in ``E``
    (bisection on a log scale).

    >>> d = np.full(4000, 600.0); s = np.full(4000, 0.2)
    >>> p = 2 * 0.2 * 0.8 * (1 - np.exp(-600.0 / (900.0 * 0.8)))
    >>> x = np.random.default_rng(0).random(4000) < p
    >>> 700 < fit_episode_mean(d, s, x, 30.0, 36000.0) < 1200
    True
    """
    if not len(gap_s):
        return hi_s
    target = float(np.mean(differ))
    amp = 2.0 * slow_share * (1.0 - slow_share)

    def predicted(e: float) -> float:
        return float(np.mean(amp * -np.expm1(-gap_s / (e * np.maximum(1.0 - slow_share, 1e-9)))))

    if target >= predicted(lo_s):
        return lo_s
    if target <= predicted(hi_s):
        return hi_s
    a, b = math.log(lo_s), math.log(hi_s)
    for _ in range(40):
        m = 0.5 * (a + b)
        if predicted(math.exp(m)) > target:
            a = m
        else:
            b = m
    return math.exp(0.5 * (a + b))


@dataclass(frozen=True)
class Forecaster:
    """The scheduler's forecasts (``estimated`` knowledge): each server's long-run law (its
    estimate), the value it showed when last seen and how long ago, and the fleet's mean
    episode length (fitted by :func:`fit_episode_mean`)."""

    laws: dict[str, Slowdown]
    seen: dict[str, tuple[float, float]]
    """Server -> (value last seen, its age in seconds)."""
    mean_episode_s: float

    def look_weight(self, gap_s: float) -> float:
        """How much of an independent observation one look is when looks come ``gap_s``
        apart: ``(1 - r) / (1 + r)``, ``r = exp(-k gap_s)`` the chain's correlation between
        two looks (the effective sample size of an AR(1) series), ``k`` at the fleet's mean
        share of time out of episodes."""
        lows = [low_share(d) for d in self.laws.values()]
        r = math.exp(-rate(self.mean_episode_s, float(np.mean(lows)) if lows else 1.0) * gap_s)
        return (1.0 - r) / (1.0 + r)

    def forecast(self, horizon_s: float) -> dict[str, Slowdown]:
        """Every server's forecast over the next ``horizon_s`` seconds."""
        out: dict[str, Slowdown] = {}
        for sid, law in self.laws.items():
            last = self.seen.get(sid)
            if last is None:
                out[sid] = law
                continue
            k = rate(self.mean_episode_s, low_share(law))
            v, p = mix(law.values, law.probs, last[0], memory(k, horizon_s, last[1]))
            out[sid] = Slowdown(v, p)
        return out


def low_share(d: Slowdown) -> float:
    """Probability of a distribution's lowest value (the share of time out of episodes)."""
    v, p = np.asarray(d.values), np.asarray(d.probs)
    return float(p[v == v[p > 0].min()].sum())


def server_looks(servers: np.ndarray, ratios: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One estimate tick's look at each server it saw: the servers (positions, sorted) and the
    mean ratio their workers showed (a server seen through several workers shows their mean)."""
    cnt = np.bincount(servers, minlength=n)
    seen = np.flatnonzero(cnt)
    return seen, np.bincount(servers, weights=ratios, minlength=n)[seen] / cnt[seen]


LOOK_WEIGHT_FIRST = 0.5
"""A look's weight at the first refit, before any episode length was fitted."""
EPISODE_RANGE_S = (30.0, 36_000.0)
"""The mean episode lengths :func:`fit_forecaster` considers (the fail-slow durations
measured in production run from tens of seconds to hours)."""


def fit_forecaster(
    looks: Sequence[tuple[float, np.ndarray, np.ndarray]],
    now: float,
    laws: dict[str, Slowdown],
    server_ids: Sequence[str],
) -> Forecaster:
    """The scheduler's forecaster from its looks at the servers: ``looks`` holds, per
    estimate tick, its time, the servers seen (positions) and the ratio each showed (a
    worker's time over its straggler-free time; a server seen through several workers shows
    their mean).  A look is slow when its ratio falls past the estimator's no-slowdown bin.
    Each server's last look (and its age) is its state; pairs of consecutive looks at one
    server fit the mean episode length (:func:`fit_episode_mean`)."""
    n = len(server_ids)
    srv: list[np.ndarray] = []
    tim: list[np.ndarray] = []
    val: list[np.ndarray] = []
    for when, sp, r in looks:
        if not len(sp):
            continue
        seen, mean = server_looks(sp, r, n)
        srv.append(seen)
        tim.append(np.full(len(seen), when))
        val.append(mean)
    if not srv:
        return Forecaster(dict(laws), {}, EPISODE_RANGE_S[1])
    s, t, v = np.concatenate(srv), np.concatenate(tim), np.concatenate(val)
    slow = bin_index(v) > 0
    order = np.lexsort((t, s))
    s, t, v, slow = s[order], t[order], v[order], slow[order]
    last = np.flatnonzero(np.append(s[1:] != s[:-1], True))
    seen_at: dict[str, tuple[float, float]] = {}
    for i in last:
        sid = server_ids[int(s[i])]
        law = laws.get(sid)
        if law is None:
            continue
        value = float(v[i]) if slow[i] else float(min(law.values))
        seen_at[sid] = (value, float(now - t[i]))
    pair = s[1:] == s[:-1]
    share = np.array([1.0 - low_share(laws[sid]) if sid in laws else 0.0 for sid in server_ids])
    mean_episode = fit_episode_mean(
        (t[1:] - t[:-1])[pair], share[s[1:][pair]], (slow[1:] != slow[:-1])[pair], *EPISODE_RANGE_S
    )
    return Forecaster(dict(laws), seen_at, mean_episode)
