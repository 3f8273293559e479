"""``measured``: a straggler law whose every parameter comes from published measurements.

Three processes, each on its own random streams (derivations: ``placement/simulation/README.md``,
"The measured law"; sources: Greyhound/Falcon, ATC'25, Table 1 and sections 3.2-3.4; ByteDance,
OSDI'25; PAL, SC'24):

- **computation fail-slows** on each server: onsets at ``compute_per_day`` per server-day, lengths
  lognormal (median ``compute_median_s``, ``EPISODE_SIGMA``, clipped to the episode bounds), the
  server's slowdown during one drawn from ``compute_values`` / ``compute_probs``;
- **the rare severe slow machine** (ByteDance's 3.04x): a server is in that state a share
  ``severe_share`` of the time, in periods of median ``severe_median_s`` (a machine is slow until
  it is repaired);
- **congested links** on each domain with a switch: *hot periods* start at ``hot_per_day`` times
  ``(servers / ref_servers) ** rate_exponent`` per day (a bigger domain has more links to congest) and last
  lognormal with median ``hot_median_s``; while hot, congestion episodes recur at ``burst_per_hour``,
  each lognormal with median ``burst_median_s`` times ``(servers / ref_servers) ** size_exponent``
  (episodes on larger domains last longer, as the 512-1,024-GPU jobs' did), at an ``L`` drawn from
  ``congestion_values`` / ``congestion_probs`` (Greyhound's throughput steps).

The cluster the model runs on (:func:`measured_cluster`) carries each server's and each domain's
long-run law in its ``slowdown`` and ``congestion`` fields (one switch per domain holds it), which
is what ``oracle`` knowledge plans by; per-GPU factors (``--variability``) compose as in every model.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from placement.model.records import Instance, Slowdown
from placement.problem.congestion import first_switches
from placement.problem.topology import cluster_of
from placement.simulation.dynamics.base import (
    EPISODE_MAX_S,
    EPISODE_MIN_S,
    EPISODE_SIGMA,
    Change,
    DynamicsOptions,
    draw,
    episode_mean_s,
)
from placement.simulation.dynamics.markov import Markov

__all__ = ["MEASURED", "MeasuredLaw", "Measured", "measured_cluster"]

DAY_S = 86_400.0


@dataclass(frozen=True)
class MeasuredLaw:
    """The parameters of ``measured`` (see the module's docstring; derivations in the README)."""

    compute_per_day: float
    compute_median_s: float
    compute_values: tuple[float, ...]
    compute_probs: tuple[float, ...]
    severe_share: float
    severe_value: float
    severe_median_s: float
    hot_per_day: float
    rate_exponent: float
    hot_median_s: float
    burst_per_hour: float
    burst_median_s: float
    ref_servers: int
    size_exponent: float
    congestion_values: tuple[float, ...]
    congestion_probs: tuple[float, ...]

    def burst_median(self, servers: int) -> float:
        """A congestion episode's median length on a domain of ``servers`` servers."""
        m = self.burst_median_s * (max(servers, 1) / self.ref_servers) ** self.size_exponent
        return min(max(m, EPISODE_MIN_S), EPISODE_MAX_S)

    def hot_rate_s(self, servers: int) -> float:
        """Hot-period onsets per second on a domain of ``servers`` servers (while calm)."""
        return self.hot_per_day * (max(servers, 1) / self.ref_servers) ** self.rate_exponent / DAY_S

    def onset_rates(self) -> tuple[float, float]:
        """Per second while normal: computation fail-slow onsets, and severe-machine onsets (the
        rate that makes ``severe_share`` the long-run share of time in a severe period)."""
        lc = self.compute_per_day / DAY_S
        ec, es = episode_mean_s(self.compute_median_s), _mean(self.severe_median_s)
        ls = self.severe_share * (1.0 + lc * ec) / (es * (1.0 - self.severe_share)) if self.severe_share else 0.0
        return lc, ls

    def server_law(self) -> Slowdown:
        """A server's long-run law: the shares of time in each state of its alternation."""
        lc, ls = self.onset_rates()
        ec, es = episode_mean_s(self.compute_median_s), _mean(self.severe_median_s)
        total = 1.0 + lc * ec + ls * es
        shares = {1.0: 1.0 / total}
        for v, p in zip(self.compute_values, self.compute_probs):
            shares[v] = shares.get(v, 0.0) + lc * ec * p / total
        shares[self.severe_value] = shares.get(self.severe_value, 0.0) + ls * es / total
        vals = sorted(v for v, p in shares.items() if p > 0)
        return Slowdown(tuple(vals), tuple(shares[v] for v in vals))

    def domain_law(self, servers: int) -> Slowdown:
        """A domain's long-run law of ``L``: its hot share times the share of a hot period spent
        in episodes."""
        eh = _mean(self.hot_median_s)
        hot = self.hot_rate_s(servers) * eh / (1.0 + self.hot_rate_s(servers) * eh)
        eb = episode_mean_s(self.burst_median(servers))
        busy = hot * (self.burst_per_hour / 3600.0 * eb) / (1.0 + self.burst_per_hour / 3600.0 * eb)
        vals = [1.0] + list(self.congestion_values)
        probs = [1.0 - busy] + [busy * p for p in self.congestion_probs]
        return Slowdown(tuple(vals), tuple(probs))


def _mean(median_s: float) -> float:
    """The mean of a long period's lognormal length (clipped to [1 h, 30 days])."""
    return episode_mean_s(median_s, EPISODE_SIGMA, 3600.0, 30 * DAY_S)


def _long(rng: np.random.Generator, median_s: float) -> float:
    x = float(np.exp(rng.normal(math.log(median_s), EPISODE_SIGMA)))
    return min(max(x, 3600.0), 30 * DAY_S)


MEASURED = MeasuredLaw(
    compute_per_day=0.25,
    compute_median_s=330.0,
    compute_values=(3.04, 12.0),
    compute_probs=(0.5, 0.5),
    severe_share=4.5e-4,
    severe_value=3.04,
    severe_median_s=86_400.0,
    hot_per_day=1.4,
    rate_exponent=1.0,
    hot_median_s=6 * 3600.0,
    burst_per_hour=2.0,
    burst_median_s=870.0,
    ref_servers=128,
    size_exponent=0.8,
    congestion_values=(2.2, 3.6),
    congestion_probs=(0.5, 0.5),
)
"""The law as calibrated against the probe jobs (``python -m placement.bench probes``)."""


def measured_cluster(cluster: Instance, law: MeasuredLaw | None = None) -> Instance:
    """``cluster`` with every server's ``slowdown`` and every domain's ``congestion`` (on the
    first switch the domain holds; the others calm) the measured law's (default
    :data:`MEASURED`) long-run ones."""
    law = law if law is not None else MEASURED
    servers = tuple(dataclasses.replace(s, slowdown=law.server_law()) for s in cluster.servers)
    cl = cluster_of(cluster)
    first = first_switches(cluster, cl)
    laws = {w: law.domain_law(len(cl.domains[d].servers)) for d, w in first.items()}
    switches = tuple(dataclasses.replace(w, congestion=laws.get(w.id, Slowdown())) for w in cluster.switches)
    return cluster.replace(servers=servers, switches=switches, scenarios=None)


class Measured(Markov):
    name = "measured"
    summary = "computation fail-slows, severe slow machines and congested links at measured rates"
    extra_streams = 0

    def __init__(self, cluster: Instance, *, seed: int, options: DynamicsOptions | None = None) -> None:
        self.measured = MEASURED
        super().__init__(measured_cluster(cluster, self.measured), seed=seed, options=options)
        cl = cluster_of(self.cluster)
        self.domain_servers = [len(cl.domains[d].servers) for d in self.domains]
        self.hot_until = [0.0] * len(self.domains)
        self.busy_until = [0.0] * len(self.domains)

    # ------------------------------------------------------------ servers
    def alternating(self) -> list[int]:
        return list(range(self.n))

    def next_change(self, sp: int, t: float, now: float) -> tuple[float, int, float]:
        """The next onset of server ``sp``, normal at ``t``: its time, and its kind as a negative
        marker (-1 severe, -2 computation; :meth:`changes` draws its value and length)."""
        rng = self.rngs[sp]
        lc, ls = self.measured.onset_rates()
        return t + float(rng.exponential(1.0 / (lc + ls))), sp, -1.0 if rng.random() < ls / (lc + ls) else -2.0

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        # every server: normal, then an onset (its kind), then its end; an onset's value and length
        # are drawn when it starts (one stream per server, so the series do not depend on order)
        pending: list[tuple[float, int, float]] = []
        for sp in range(self.n):
            if s0[sp] > 1.0:  # in a slow period at time 0: its rest (severe: the value only it takes)
                severe = s0[sp] == self.measured.severe_value and s0[sp] not in self.measured.compute_values
                pending.append((self._length(sp, severe), sp, 1.0))
            else:
                pending.append(self.next_change(sp, 0.0, 1.0))
        heapq.heapify(pending)
        while pending:
            t, sp, v = heapq.heappop(pending)
            if v < 0:  # an onset: -1 severe, -2 computation
                rng = self.rngs[sp]
                value = (
                    self.measured.severe_value
                    if v == -1.0
                    else draw(rng, np.asarray(self.measured.compute_values), np.asarray(self.measured.compute_probs))
                )
                heapq.heappush(pending, (t + self._length(sp, v == -1.0), sp, 1.0))
                yield t, [Change(t, sp, value)]
            else:
                heapq.heappush(pending, self.next_change(sp, t, 1.0))
                yield t, [Change(t, sp, 1.0)]

    def _length(self, sp: int, severe: bool) -> float:
        """A slow period's length: a severe machine's (until repaired), or a fail-slow episode's."""
        rng = self.rngs[sp]
        return (
            _long(rng, self.measured.severe_median_s) if severe else self.episode(rng, self.measured.compute_median_s)
        )

    # ------------------------------------------------------------ domains
    def _domain_changes(self, l0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        law = self.measured
        pending: list[tuple[float, int, str, float]] = []
        for k in range(len(self.domains)):
            rng = self.domain_rngs[k]
            pending.append((float(rng.exponential(1.0 / law.hot_rate_s(self.domain_servers[k]))), k, "hot", 0.0))
        heapq.heapify(pending)
        while pending:
            t, k, what, v = heapq.heappop(pending)
            rng, n = self.domain_rngs[k], self.domain_servers[k]
            if what == "hot":  # a hot period: bursts until it cools
                if t < self.busy_until[k]:  # the last burst of the previous one is still on
                    heapq.heappush(pending, (self.busy_until[k], k, "hot", 0.0))
                    continue
                self.hot_until[k] = t + _long(rng, law.hot_median_s)
                heapq.heappush(pending, (t + float(rng.exponential(3600.0 / law.burst_per_hour)), k, "burst", 0.0))
                heapq.heappush(
                    pending, (self.hot_until[k] + float(rng.exponential(1.0 / law.hot_rate_s(n))), k, "hot", 0.0)
                )
            elif what == "burst":
                if t >= self.hot_until[k]:
                    continue
                value = draw(rng, np.asarray(law.congestion_values), np.asarray(law.congestion_probs))
                end = t + self.episode(rng, law.burst_median(n))
                self.busy_until[k] = end
                heapq.heappush(pending, (end, k, "end", 1.0))
                heapq.heappush(pending, (end + float(rng.exponential(3600.0 / law.burst_per_hour)), k, "burst", 0.0))
                yield t, [Change(t, self.n + k, value)]
            else:
                yield t, [Change(t, self.n + k, 1.0)]

    def run_start(self) -> np.ndarray:
        s = super().run_start()
        s[self.n :] = 1.0  # domains start calm (their hot periods come as drawn)
        return s
