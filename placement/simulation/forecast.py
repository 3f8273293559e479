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

**Episodes by age.**  Where episodes of very different lengths mix (the ``measured`` law: a
computation fail-slow lasts minutes, a slow machine a day), one fleet length misjudges both: a
server seen slow for the first time is most likely in a short episode, one seen slow at two looks
running in a long one.  So a server slow at its last look is forecast with the episode length of
its age class, each fitted on the pairs of looks whose first is slow (:func:`fit_persistence`:
still slow ``d`` seconds later with probability ``p + (1 - p) exp(-k d)``): *onsets* (no slow look
just before it) and *lasting* episodes (slow at the look before too).  A class with fewer than
:data:`AGE_PAIRS_MIN` such pairs takes the fleet's length.  Under the hand-written ``markov`` law
the classes differ only as its lognormal lengths do.

**States by iterations.**  A forecast mixes states by the time a server spends in them, but a
job's time per iteration is its states' mean *per iteration*, and it does ``1 / v`` as many
iterations at a slowdown ``v`` (:func:`by_iterations`): a minutes-long 12x episode costs a day-long
job about the episode's length, not eleven times it.  Over a horizon much longer than the chain's
cycle this is the steady rate ``1 / E[1/S]`` (DESIGN.md: a long job sees the steady rate); over a
much shorter one, the state held.  Both are ``plan_by="aged"``; ``plan_by="forecast"`` (the
default) keeps one fleet length and states by time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from placement.estimate.logs import bin_index
from placement.model.records import Slowdown

__all__ = [
    "AGE_PAIRS_MIN",
    "LOOK_WEIGHT_FIRST",
    "Forecaster",
    "by_iterations",
    "fit_episode_mean",
    "fit_persistence",
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


def _meet(predicted: Callable[[float], float], target: float, lo_s: float, hi_s: float) -> float:
    """The mean episode length in ``[lo_s, hi_s]`` at which ``predicted``, decreasing in it, meets
    ``target`` (bisection on a log scale; an end where it never does)."""
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
    amp = 2.0 * slow_share * (1.0 - slow_share)

    def predicted(e: float) -> float:
        return float(np.mean(amp * -np.expm1(-gap_s / (e * np.maximum(1.0 - slow_share, 1e-9)))))

    return _meet(predicted, float(np.mean(differ)), lo_s, hi_s)


def fit_persistence(gap_s: np.ndarray, slow_share: np.ndarray, still: np.ndarray, lo_s: float, hi_s: float) -> float:
    """The mean episode length (seconds, within ``[lo_s, hi_s]``) under which a server slow at a
    look, of ``slow_share``, is still slow at its next look ``gap_s`` later as often as ``still``
    says: with probability ``s + (1 - s) exp(-k d)``, ``k = rate(E, 1 - s)``, increasing in ``E``.

    >>> d = np.full(4000, 600.0); s = np.full(4000, 0.01)
    >>> p = 0.01 + 0.99 * np.exp(-600.0 / (300.0 * 0.99))
    >>> x = np.random.default_rng(0).random(4000) < p
    >>> 250 < fit_persistence(d, s, x, 30.0, 36000.0) < 360
    True
    """
    if not len(gap_s):
        return hi_s
    low = np.maximum(1.0 - slow_share, 1e-9)

    def gone(e: float) -> float:  # the share no longer slow, decreasing in e
        return float(np.mean(low * -np.expm1(-gap_s / (e * low))))

    return _meet(gone, 1.0 - float(np.mean(still)), lo_s, hi_s)


@dataclass(frozen=True)
class Forecaster:
    """The scheduler's forecasts (``estimated`` knowledge): each server's long-run law (its
    estimate), the value it showed when last seen and how long ago, and the fleet's mean
    episode length (fitted by :func:`fit_episode_mean`)."""

    laws: dict[str, Slowdown]
    seen: dict[str, tuple[float, float]]
    """Server -> (value last seen, its age in seconds)."""
    mean_episode_s: float
    episode_age: dict[str, float] = field(default_factory=dict)
    """Server slow at its last look -> how long it had been slow then (seconds since the first
    slow look of its run; 0: an onset)."""
    onset_s: float | None = None
    """The mean length of episodes seen at their onset (``None``: the fleet's)."""
    lasting_s: float | None = None
    """The mean length of episodes seen slow at two looks running (``None``: the fleet's)."""
    aged: bool = False
    """``plan_by="aged"``: episodes by age class, states weighed by iterations (the module's
    docstring); else one fleet length, states weighed by time."""

    def episode_s(self, sid: str) -> float:
        """The mean episode length that forecasts server ``sid``: its age class's when it was
        slow at its last look (``aged``), else the fleet's."""
        age = self.episode_age.get(sid) if self.aged else None
        by_age = None if age is None else self.onset_s if age <= 0.0 else self.lasting_s
        return self.mean_episode_s if by_age is None else by_age

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
            if last is None and not self.aged:
                out[sid] = law
                continue
            k = rate(self.episode_s(sid), low_share(law))
            v, p = law.values, law.probs
            if last is not None:
                v, p = mix(v, p, last[0], memory(k, horizon_s, last[1]))
            out[sid] = by_iterations(v, p, kept(k * horizon_s)) if self.aged else Slowdown(v, p)
        return out


def by_iterations(values: Sequence[float], probs: Sequence[float], held: float) -> Slowdown:
    """A forecast's states weighed by the iterations a job does in them rather than by time: a
    job's expected time per iteration over a horizon is its states' mean *per iteration*, and a
    job does ``1 / v`` as many iterations in a state of slowdown ``v``.  Over a horizon through
    which the state changes, a share ``p`` of the time at ``v`` is a share ``(p / v) / sum(p / v)``
    of the iterations (the steady rate ``1 / E[1/S]`` of a long job); a state held over the whole
    horizon is the one every iteration sees.  ``held`` (``kept(k h)``: 1 for a horizon much shorter
    than the chain's cycle, ``1 / (k h)`` for a much longer one) is the share of the forecast that
    is one state held; the rest is weighed by iterations."""
    v, p = np.asarray(values, dtype=float), np.asarray(probs, dtype=float)
    q = held * p + (1.0 - held) * (p / v) / float((p / v).sum())
    keep = q > 1e-12
    return Slowdown(tuple(float(x) for x in v[keep]), tuple(float(x) for x in q[keep] / q[keep].sum()))


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
AGE_PAIRS_MIN = 20
"""Fewest pairs of looks (a slow look and the server's next) that fit an age class's episode
length (:func:`fit_persistence`); fewer: the class takes the fleet's."""


def fit_forecaster(
    looks: Sequence[tuple[float, np.ndarray, np.ndarray]],
    now: float,
    laws: dict[str, Slowdown],
    server_ids: Sequence[str],
    aged: bool = False,
) -> Forecaster:
    """The scheduler's forecaster from its looks at the servers: ``looks`` holds, per
    estimate tick, its time, the servers seen (positions) and the ratio each showed (a
    worker's time over its straggler-free time; a server seen through several workers shows
    their mean).  A look is slow when its ratio falls past the estimator's no-slowdown bin.
    Each server's last look (and its age) is its state; pairs of consecutive looks at one
    server fit the mean episode length (:func:`fit_episode_mean`); ``aged``: also each age class's
    (:func:`fit_persistence`), and the forecasts weigh states by iterations."""
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
        return Forecaster(dict(laws), {}, EPISODE_RANGE_S[1], aged=aged)
    s, t, v = np.concatenate(srv), np.concatenate(tim), np.concatenate(val)
    slow = bin_index(v) > 0
    order = np.lexsort((t, s))
    s, t, v, slow = s[order], t[order], v[order], slow[order]
    last = np.flatnonzero(np.append(s[1:] != s[:-1], True))
    pair = s[1:] == s[:-1]
    # each slow look's episode age: since the first slow look of its run (consecutive looks at the server)
    began = t.copy()
    for i in np.flatnonzero(np.append(False, pair & slow[1:] & slow[:-1])):
        began[i] = began[i - 1]
    age = t - began
    seen_at: dict[str, tuple[float, float]] = {}
    episode_age: dict[str, float] = {}
    for i in last:
        sid = server_ids[int(s[i])]
        law = laws.get(sid)
        if law is None:
            continue
        value = float(v[i]) if slow[i] else float(min(law.values))
        seen_at[sid] = (value, float(now - t[i]))
        if slow[i]:
            episode_age[sid] = float(age[i])
    share = np.array([1.0 - low_share(laws[sid]) if sid in laws else 0.0 for sid in server_ids])
    gap, sh = (t[1:] - t[:-1])[pair], share[s[1:][pair]]
    mean_episode = fit_episode_mean(gap, sh, (slow[1:] != slow[:-1])[pair], *EPISODE_RANGE_S)
    by_age: list[float | None] = [None, None]
    for cls, onset in enumerate((True, False) if aged else ()):
        of = slow[:-1][pair] & ((age[:-1][pair] <= 0.0) == onset)
        if of.sum() >= AGE_PAIRS_MIN:
            by_age[cls] = fit_persistence(gap[of], sh[of], slow[1:][pair][of], *EPISODE_RANGE_S)
    return Forecaster(dict(laws), seen_at, mean_episode, episode_age, by_age[0], by_age[1], aged)
