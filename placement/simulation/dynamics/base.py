"""What every model of the hidden truth shares: the change record, the episode length law,
the per-server random streams, and the scenario table.

A model is a :class:`Dynamics` subclass with a ``name``; :meth:`Dynamics.start` gives every
server's slowdown at time 0 and :meth:`Dynamics.changes` yields every later change in time
order, lazily (a run of weeks keeps one pending change per server).

Every random draw comes from one seed: each server gets its own stream spawned from it
(``streams[i]`` for server position ``i``), the scenario clock the next one
(``streams[n]``), and a model that needs more takes ``streams[n + 1]`` on; so the series do
not depend on the order events are processed in, and adding a model changes no other
model's series.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from placement.model.records import Instance
from placement.problem.congestion import congestion_of

__all__ = [
    "EPISODE_MEDIAN_S",
    "EPISODE_SIGMA",
    "EPISODE_MIN_S",
    "EPISODE_MAX_S",
    "PERSISTENT_SHARE",
    "Change",
    "Dynamics",
    "DynamicsOptions",
    "episode_mean_s",
    "stationary",
]

EPISODE_MEDIAN_S = 600.0
EPISODE_SIGMA = 1.0
"""Log-scale spread of episode lengths (a 68% interval of median x/÷ e)."""
EPISODE_MIN_S = 30.0
EPISODE_MAX_S = 36_000.0
PERSISTENT_SHARE = 0.5
"""``mixed``: the share of each server's slow time that comes from being persistently slow
(``onset``: from fail-slow regimes)."""


@dataclass(frozen=True)
class Change:
    time_s: float
    server: int
    """Server position in the cluster instance."""
    value: float


@dataclass(frozen=True)
class DynamicsOptions:
    """The knobs of the models (each model reads the ones it needs)."""

    episode_median_s: float = EPISODE_MEDIAN_S
    persistent_share: float = PERSISTENT_SHARE
    replay: dict[str, list[tuple[float, float]]] | None = None
    """``replay``: each server's ``(time_s, slowdown)`` rows (:func:`read_replay`)."""

    def problems(self) -> list[str]:
        out = []
        if not (math.isfinite(self.episode_median_s) and EPISODE_MIN_S <= self.episode_median_s <= EPISODE_MAX_S):
            out.append(
                f"episode_median_s must be a number in [{EPISODE_MIN_S:g}, {EPISODE_MAX_S:g}], "
                f"got {self.episode_median_s!r}"
            )
        if not (math.isfinite(self.persistent_share) and 0.0 <= self.persistent_share <= 1.0):
            out.append(f"persistent_share must be a number in [0, 1], got {self.persistent_share!r}")
        return out


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def episode_mean_s(
    median_s: float, sigma: float = EPISODE_SIGMA, lo: float = EPISODE_MIN_S, hi: float = EPISODE_MAX_S
) -> float:
    """Mean of the clipped lognormal episode length (exact, from the normal CDF)."""
    mu = math.log(median_s)
    za, zb = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    inner = math.exp(mu + sigma**2 / 2) * (_phi(zb - sigma) - _phi(za - sigma))
    return lo * _phi(za) + hi * (1.0 - _phi(zb)) + inner


def stationary(values: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Support points and probabilities with zero-probability points dropped and equal
    values merged, sorted by value: the states of the Markov process and their long-run
    shares."""
    keep = probs > 0
    u, inv = np.unique(np.asarray(values, dtype=float)[keep], return_inverse=True)
    q = np.bincount(inv, weights=np.asarray(probs, dtype=float)[keep], minlength=len(u))
    return u, q / q.sum()


def draw(rng: np.random.Generator, values: np.ndarray, probs: np.ndarray) -> float:
    """One value of a discrete law (one uniform draw)."""
    return float(values[min(int(np.searchsorted(np.cumsum(probs), rng.random(), side="right")), len(values) - 1)])


class Dynamics:
    """The hidden slowdowns of every server (subclass and set ``name``)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    episodes: ClassVar[bool] = False
    """Whether servers alternate through slow episodes of the episode law (``plan_by
    "duration"`` then tells long jobs from short ones by its cycle)."""
    extra_streams: ClassVar[int] = 0
    """Streams a model needs beyond one per server and the scenario clock."""

    def __init__(self, cluster: Instance, *, seed: int, options: DynamicsOptions | None = None) -> None:
        self.options = options or DynamicsOptions()
        bad = self.options.problems()
        if bad:
            raise ValueError("; ".join(bad))
        self.cluster = cluster
        self.n = len(cluster.servers)
        self.median = self.options.episode_median_s
        self.mean_episode = episode_mean_s(self.median)
        laws = congestion_of(cluster).laws
        self.domains: list[int] = sorted(laws)
        """The congested domains (cluster domain indices): state ``n + k`` is domain ``domains[k]``'s ``L``."""
        self.domain_states = [stationary(*laws[d]) for d in self.domains]
        root = np.random.SeedSequence(int(seed) % 2**63)
        streams = root.spawn(self.n + 1 + self.extra_streams + len(self.domains))
        self.rngs = [np.random.default_rng(s) for s in streams[: self.n]]
        self.clock_rng = np.random.default_rng(streams[self.n])
        cut = self.n + 1 + self.extra_streams
        self.extra_rngs = [np.random.default_rng(s) for s in streams[self.n + 1 : cut]]
        self.domain_rngs = [np.random.default_rng(s) for s in streams[cut:]]
        self.states: list[tuple[np.ndarray, np.ndarray]] = []
        sc = cluster.scenarios
        self.scen_probs = np.ones(1)
        self.table = np.ones((self.n, 1))
        if sc is not None:
            self.scen_probs = np.asarray(sc.probs, dtype=float) / sum(sc.probs)
            table = np.ones((self.n, sc.count))
            for sid, row in sc.slowdowns.items():
                table[cluster.server_pos[sid]] = row
            self.table = table
        else:
            self.states = [
                stationary(np.asarray(s.slowdown.values), np.asarray(s.slowdown.probs)) for s in cluster.servers
            ]

    @property
    def scenarios(self) -> bool:
        return self.cluster.scenarios is not None

    # ----------------------------------------------------------- helpers
    def episode(self, rng: np.random.Generator, median_s: float | None = None) -> float:
        """One episode length of the law (lognormal, clipped; median ``median_s``, default the
        model's)."""
        x = float(np.exp(rng.normal(math.log(self.median if median_s is None else median_s), EPISODE_SIGMA)))
        return min(max(x, EPISODE_MIN_S), EPISODE_MAX_S)

    def draw_law(self) -> np.ndarray:
        """Every server's value drawn from its long-run law (one scenario, with a table)."""
        if self.scenarios:
            return self.table[:, self.draw_scenario()].copy()
        return np.array([draw(rng, v, p) for rng, (v, p) in zip(self.rngs, self.states)])

    def draw_scenario(self) -> int:
        return int(draw(self.clock_rng, np.arange(len(self.scen_probs), dtype=float), self.scen_probs))

    def scenario_epochs(self) -> Iterator[tuple[float, list[Change]]]:
        """All servers together: the scenario is re-drawn at epochs of the episode law."""
        t = 0.0
        while True:
            t += self.episode(self.clock_rng)
            k = self.draw_scenario()
            yield t, [Change(t, sp, float(self.table[sp, k])) for sp in range(self.n)]

    # ----------------------------------------------------------- forecast
    def forecast(
        self, sp: int, now: float, horizon_s: float, at_s: float | None = None
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """What server ``sp``, at value ``now`` at time ``at_s`` (the clock, for a model whose
        hidden state is more than the value: ``None``, the latest), shows over the next
        ``horizon_s`` seconds:
        the time-averaged law of its slowdown, as ``(values, probs)``.  The base model's
        answer is the current value for ever (right for ``none``, ``static`` and a
        ``replay`` whose future is unknown); a model with episodes mixes the current value
        with its long-run law (:meth:`Markov.forecast`)."""
        return (float(now),), (1.0,)

    # ------------------------------------------------ congested domains
    congestion: ClassVar[str] = "episodes"
    """How the congested domains' ``L`` moves under this model: ``none`` (always 1), ``static``
    (drawn once from the domain's law) or ``episodes`` (the episode law, like ``markov``'s servers:
    normal periods at the lowest value, episodes at the higher ones, long-run shares the law's)."""

    def run_start(self) -> np.ndarray:
        """The state at time 0: every server's slowdown, then every congested domain's ``L``."""
        dom = [
            1.0 if self.congestion == "none" else draw(rng, v, p)
            for rng, (v, p) in zip(self.domain_rngs, self.domain_states)
        ]
        return np.concatenate([self.start(), np.asarray(dom, dtype=float)])

    def run_changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        """Every change after time 0, servers' and domains' (``Change.server`` ``n + k`` for the
        ``k``-th congested domain), in time order."""
        servers = self.changes(s0[: self.n])
        if self.congestion != "episodes" or not self.domains:
            return servers
        return heapq.merge(servers, self._domain_changes(s0[self.n :]), key=lambda tc: tc[0])

    def _domain_changes(self, l0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        pending = []
        for k, (v, p) in enumerate(self.domain_states):
            if len(v) > 1 and p[0] < 1.0:
                pending.append(self._domain_next(k, 0.0, float(l0[k])))
        heapq.heapify(pending)
        while pending:
            t, k, val = heapq.heappop(pending)
            heapq.heappush(pending, self._domain_next(k, t, val))
            yield t, [Change(t, self.n + k, val)]

    def _domain_next(self, k: int, t: float, now: float) -> tuple[float, int, float]:
        """The change that ends the period domain ``k`` is in at ``t`` (value ``now``)."""
        values, probs = self.domain_states[k]
        when, v = self.alternate(self.domain_rngs[k], values, probs, float(probs[0]), t, now)
        return when, k, v

    def alternate(
        self, rng: np.random.Generator, values: np.ndarray, probs: np.ndarray, p_low: float, t: float, now: float
    ) -> tuple[float, float]:
        """The change that ends a period of an alternating state at ``t`` (value ``now``): an
        episode ends after one of the episode law, back to the lowest value; a normal period
        (exponential, with the mean that makes ``p_low`` the long-run share at the lowest value)
        ends in an episode at a higher value drawn in proportion to its probability."""
        low = float(values[0])
        if now > low:
            return t + self.episode(rng), low
        mean_normal = self.mean_episode * p_low / (1.0 - p_low)
        v = draw(rng, values[1:], probs[1:] / probs[1:].sum())
        return t + float(rng.exponential(mean_normal)), v

    # ------------------------------------------------------------ series
    def start(self) -> np.ndarray:
        """Every server's slowdown at time 0."""
        raise NotImplementedError

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        """``(time, changes)`` after time 0, in time order, from the state ``s0`` that
        :meth:`start` returned."""
        raise NotImplementedError
