"""``markov``: each server alternates between its lowest value and slow *episodes* at its
higher values.

Episode lengths are lognormal with median ``episode_median_s`` and ``EPISODE_SIGMA``, clipped
to [``EPISODE_MIN_S``, ``EPISODE_MAX_S``] (the fail-slow durations measured in production); an
episode's value is drawn from the higher values in proportion to their probabilities; the
periods between episodes are exponential with the mean that makes the long-run share of time
at each value equal its probability: ``E[normal] = E[episode] * p_low / (1 - p_low)``.  The
state at time 0 is drawn from the long-run shares.  With a scenario table, the scenario
index is the state, re-drawn at epochs of the episode law (all servers together).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from placement.simulation.dynamics.base import Change, Dynamics, draw


class Markov(Dynamics):
    name = "markov"
    summary = "servers alternate between normal periods and slow episodes"
    episodes = True

    def start(self) -> np.ndarray:
        if self.scenarios:
            return self.table[:, self.draw_scenario()].copy()
        return np.array([draw(rng, v, p) for rng, (v, p) in zip(self.rngs, self.states)])

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

    def next_change(self, sp: int, t: float, now: float) -> tuple[float, int, float]:
        """The change that ends the period server ``sp`` is in at time ``t`` (value ``now``)."""
        values, probs = self.states[sp]
        rng = self.rngs[sp]
        low = float(values[0])
        if now > low:  # an episode ends: back to the lowest value
            return t + self.episode(rng), sp, low
        p_low = self.low_share(sp)
        mean_normal = self.mean_episode * p_low / (1.0 - p_low)
        v = draw(rng, values[1:], probs[1:] / probs[1:].sum())
        return t + float(rng.exponential(mean_normal)), sp, v
