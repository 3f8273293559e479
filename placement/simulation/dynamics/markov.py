"""``markov``: each server alternates between its lowest value and slow *episodes* at its
higher values.

Episode lengths are lognormal with median ``episode_median_s`` and ``EPISODE_SIGMA``, clipped
to [``EPISODE_MIN_S``, ``EPISODE_MAX_S``] (the fail-slow durations measured in production); an
episode's value is drawn from the higher values in proportion to their probabilities; the
periods between episodes are exponential with the mean that makes the long-run share of time
at each value equal its probability: ``E[normal] = E[episode] * p_low / (1 - p_low)``.  The
state at time 0 is drawn from the long-run shares.  With a scenario table, the scenario
index is the state, re-drawn at epochs of the episode law (all servers together).

Forecast (:meth:`Markov.forecast`): the two-state chain with the same mean episode and mean
normal period.  Its state at ``t`` is the current one with probability ``exp(-k t)`` and the
long-run law otherwise, ``k = 1/E[episode] + 1/E[normal]``; averaged over a horizon ``h`` the
current value keeps the weight ``(1 - exp(-k h)) / (k h)``.  Exact for exponential periods,
an approximation for the lognormal episodes (measured in the tests); a short job sees the
current state, a long one the long-run law.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from placement.simulation.dynamics.base import Change, Dynamics
from placement.simulation.forecast import kept, mix, rate


class Markov(Dynamics):
    name = "markov"
    summary = "servers alternate between normal periods and slow episodes"
    episodes = True

    def start(self) -> np.ndarray:
        return self.draw_law()

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        if self.scenarios:
            yield from self.scenario_epochs()
            return
        pending = [self.next_change(sp, 0.0, float(s0[sp])) for sp in self.alternating()]
        heapq.heapify(pending)
        while pending:
            t, sp, v = heapq.heappop(pending)
            heapq.heappush(pending, self.next_change(sp, t, v))
            yield t, [Change(t, sp, v)]

    def alternating(self) -> list[int]:
        """The servers whose state changes (those with more than one value)."""
        return [sp for sp, (values, _) in enumerate(self.states) if len(values) > 1 and self.low_share(sp) < 1.0]

    def low_share(self, sp: int) -> float:
        """The long-run share of time server ``sp`` spends at its lowest value."""
        return float(self.states[sp][1][0])

    def law(self, sp: int) -> tuple[np.ndarray, np.ndarray]:
        """Server ``sp``'s long-run law (values, probabilities) as this model runs it."""
        values, probs = self.states[sp]
        p_low = self.low_share(sp)
        if len(values) < 2 or p_low >= 1.0:
            return values[:1], np.ones(1)
        slow = probs[1:] / probs[1:].sum() * (1.0 - p_low)
        return values, np.concatenate(([p_low], slow))

    def memory(self, sp: int, horizon_s: float) -> float:
        """The weight the current state keeps, averaged over ``horizon_s``."""
        return kept(rate(self.mean_episode, self.low_share(sp)) * horizon_s)

    def forecast(
        self, sp: int, now: float, horizon_s: float, at_s: float | None = None
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        if self.scenarios:
            col = self.table[sp]
            values, inv = np.unique(col, return_inverse=True)
            law = np.bincount(inv, weights=self.scen_probs, minlength=len(values))
            rho = kept(horizon_s / self.mean_episode)  # re-drawn at epochs of the episode law
        else:
            values, law = self.law(sp)
            rho = self.memory(sp, horizon_s)
        return mix(values, law, now, rho)

    def next_change(self, sp: int, t: float, now: float) -> tuple[float, int, float]:
        """The change that ends the period server ``sp`` is in at time ``t`` (value ``now``)."""
        values, probs = self.states[sp]
        when, v = self.alternate(self.rngs[sp], values, probs, self.low_share(sp), t, now)
        return when, sp, v
