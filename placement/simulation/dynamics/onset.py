"""``onset``: servers slow down in short episodes and, now and then, fail slow for hours.

Every server with slow values alternates between normal periods and slow periods, as in
``markov``.  A slow period is a *regime* with probability ``f`` and an episode of the episode
law otherwise.  A regime is a fail-slow onset: one of the server's higher values held for
hours, its length lognormal with median :data:`REGIME_MEDIAN_S` and :data:`REGIME_SIGMA`,
clipped to [:data:`REGIME_MIN_S`, :data:`REGIME_MAX_S`]; then the server heals.  While it
lasts, the server's law is not its long-run one: what change-point detection is for.

``persistent_share`` ``ps`` is the share of each server's slow time spent in regimes:
``f = ps E[episode] / (ps E[episode] + (1 - ps) E[regime])``.  Normal periods are exponential
with mean ``E[slow] p_low / (1 - p_low)``, ``E[slow] = f E[regime] + (1 - f) E[episode]``, so
each server's long-run law is still the cluster's (what ``oracle`` knowledge plans by).  At
time 0 a slow server is in a regime with probability ``ps`` (its own stream, one draw per
server in position order).  With a scenario table the model is ``markov``'s.

Forecast (:meth:`Onset.forecast`, the ``clairvoyant`` reference): the hidden state includes
which kind of period a server is in.  The current value keeps the weight ``kept(k h)``, with
``k = 1/E[period] + 1/E[normal]`` for a slow period of that kind (``E[regime]`` or
``E[episode]``) and ``k = 1/E[slow] + 1/E[normal]`` in a normal period: a regime is expected
to last hours, an episode minutes.
"""

from __future__ import annotations

import math

import numpy as np

from placement.model.records import Instance
from placement.simulation.dynamics.base import DynamicsOptions, draw, episode_mean_s
from placement.simulation.dynamics.markov import Markov
from placement.simulation.forecast import kept, mix

__all__ = ["REGIME_MAX_S", "REGIME_MEDIAN_S", "REGIME_MIN_S", "REGIME_SIGMA", "Onset"]

REGIME_MEDIAN_S = 21_600.0
"""Median length of a fail-slow regime (6 h)."""
REGIME_SIGMA = 1.0
REGIME_MIN_S = 3_600.0
REGIME_MAX_S = 259_200.0
"""Regimes last from an hour to three days."""

NORMAL, EPISODE, REGIME = 0, 1, 2


class Onset(Markov):
    name = "onset"
    summary = "episodes, and now and then a fail-slow regime of hours (--persistent-share of slow time)"
    extra_streams = 1

    def __init__(self, cluster: Instance, *, seed: int, options: DynamicsOptions | None = None) -> None:
        super().__init__(cluster, seed=seed, options=options)
        ps = self.options.persistent_share
        e = self.mean_episode
        self.mean_regime = episode_mean_s(REGIME_MEDIAN_S, REGIME_SIGMA, REGIME_MIN_S, REGIME_MAX_S)
        r = self.mean_regime
        self.regime_odds = ps * e / (ps * e + (1.0 - ps) * r)
        """``f``: the probability that a slow period is a regime."""
        self.mean_slow = self.regime_odds * r + (1.0 - self.regime_odds) * e
        self.kinds: list[list[tuple[float, int]]] = [[(0.0, NORMAL)] for _ in range(self.n)]
        """Per server, the kinds of its last two periods and when each began (the series is
        drawn one change ahead of the clock: :meth:`kind_at` tells which is current)."""

    # ------------------------------------------------------------ series
    def start(self) -> np.ndarray:
        s0 = super().start()
        who = self.extra_rngs[0]
        ps = self.options.persistent_share
        for sp, (values, _) in enumerate(self.states):
            u = who.random()
            if not self.scenarios and s0[sp] > values[0]:
                self.kinds[sp] = [(0.0, REGIME if u < ps else EPISODE)]
        return s0

    def next_change(self, sp: int, t: float, now: float) -> tuple[float, int, float]:
        values, probs = self.states[sp]
        rng = self.rngs[sp]
        low = float(values[0])
        if now > low:  # a slow period ends: back to the lowest value
            kind = self.kind_at(sp, t)
            length = self.regime(rng) if kind == REGIME else self.episode(rng)
            self._begin(sp, t + length, NORMAL)
            return t + length, sp, low
        v = draw(rng, values[1:], probs[1:] / probs[1:].sum())
        kind = REGIME if rng.random() < self.regime_odds else EPISODE
        t_next = t + float(rng.exponential(self.mean_normal(sp)))
        self._begin(sp, t_next, kind)
        return t_next, sp, v

    def _begin(self, sp: int, t: float, kind: int) -> None:
        self.kinds[sp] = [*self.kinds[sp][-1:], (t, kind)]

    def kind_at(self, sp: int, time_s: float) -> int:
        """The kind of period server ``sp`` is in at ``time_s`` (``NORMAL``, ``EPISODE`` or
        ``REGIME``), for a time no earlier than its last change applied."""
        kinds = self.kinds[sp]
        return kinds[-1][1] if time_s >= kinds[-1][0] else kinds[0][1]

    def regime(self, rng: np.random.Generator) -> float:
        """One regime length (lognormal, clipped)."""
        x = float(np.exp(rng.normal(math.log(REGIME_MEDIAN_S), REGIME_SIGMA)))
        return min(max(x, REGIME_MIN_S), REGIME_MAX_S)

    def mean_normal(self, sp: int) -> float:
        p_low = self.low_share(sp)
        return self.mean_slow * p_low / (1.0 - p_low)

    # ----------------------------------------------------------- forecast
    def forecast(
        self, sp: int, now: float, horizon_s: float, at_s: float | None = None
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        if self.scenarios:
            return super().forecast(sp, now, horizon_s, at_s)
        values, law = self.law(sp)
        if len(values) < 2:
            return (float(now),), (1.0,)
        kind = self.kind_at(sp, at_s if at_s is not None else math.inf)
        if now <= values[0]:
            kind = NORMAL
        period = {NORMAL: self.mean_slow, EPISODE: self.mean_episode, REGIME: self.mean_regime}[kind]
        k = 1.0 / period + 1.0 / self.mean_normal(sp)
        return mix(values, law, now, kept(k * horizon_s))
