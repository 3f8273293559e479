"""Learning congested domains from what running jobs show (``estimated`` knowledge; issue 49).

A worker's logged time shows its compute; a job's iteration shows its pace, communication
included.  At every estimate tick each running all-reduce job on two or more servers gives a look
at the congestion of the domains it crosses: ``L_obs = (T_obs - max_i d_i) / C``, its observed
iteration time less its slowest worker's observed compute, over its all-reduce at no congestion
(both with the logs' measurement noise).  A look is kept only above the noise,
``L_obs > 1 + NOISE_SIGMAS * LOG_NOISE * T / C`` (else it reads 1), and only from jobs whose
all-reduce is at least :data:`MIN_COMM_SHARE` of their step.  A job's ``L`` is the largest of the
domains it crosses, so a domain's look is the *least* ``L_obs`` among the jobs crossing it: a slowdown
shared by the jobs crossing one domain is put on that domain, one that only some of them show is
not.  Each domain's looks go through the estimator of ``placement estimate --logs`` (bins, recency
weights, a prior towards the fleet of domains) with a half-life of :data:`HALF_LIFE_TICKS` ticks:
hot periods last hours, so a domain's law follows them.  Decisions see the law on the domain's first
switch (:meth:`CongestionLearner.laws`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from placement.estimate.logs import estimate_from_ratios
from placement.model.records import Instance, Slowdown
from placement.problem.congestion import crossed_domains
from placement.problem.topology import cluster_of
from placement.simulation.running import LOG_NOISE, Running, iteration_ms

__all__ = ["CongestionLearner", "MIN_COMM_SHARE", "NOISE_SIGMAS", "HALF_LIFE_TICKS"]

MIN_COMM_SHARE = 0.1
"""A job whose all-reduce is less of its step says too little about its links."""
NOISE_SIGMAS = 4.0
"""A look reads congestion only this many noise deviations above none."""
HALF_LIFE_TICKS = 12.0
"""Recency half-life of a domain's looks, in estimate ticks (2 h at the default 600 s)."""


class CongestionLearner:
    """The looks of every domain with a switch, and their laws (see the module's docstring)."""

    def __init__(self, cluster: Instance, seed: int, window_ticks: int) -> None:
        self.cluster = cluster
        self.cl = cluster_of(cluster)
        self.first: dict[int, str] = {}
        for w in cluster.switches:
            d = self.cl.switch_domain.get(w.id)
            if d is not None and d not in self.first:
                self.first[d] = w.id
        self.rng = np.random.default_rng([int(seed) % 2**32, 49])  # a stream of its own
        self.window = int(window_ticks)
        self.tick = 0
        self.rows: list[tuple[int, int, float]] = []
        """``(tick, domain, look)``."""

    def observe(self, running: Iterable[Running], S: np.ndarray, now: float) -> None:
        """One tick: the least ``L_obs`` of the jobs crossing each domain."""
        self.tick += 1
        best: dict[int, float] = {}
        for r in running:
            if r.paused_until > now or r.stages or len(r.ps_sps) or r.comm <= 0 or len(r.sps) < 2:
                continue
            t = iteration_ms(r, S) / r.penalty
            if r.comm < MIN_COMM_SHARE * t:
                continue
            noise = np.exp(LOG_NOISE * self.rng.standard_normal(len(r.sps) + 1))
            compute = float((r.a * S[r.sps] * noise[1:]).max())
            look = (t * noise[0] - compute) / r.comm
            if look <= 1.0 + NOISE_SIGMAS * LOG_NOISE * t / r.comm:
                look = 1.0
            ids = [self.cluster.servers[sp].id for sp in r.sps]
            for d in crossed_domains(self.cl, ids):
                if d in self.first:
                    best[d] = min(best.get(d, np.inf), look)
        self.rows += [(self.tick, d, v) for d, v in best.items()]
        self.rows = [row for row in self.rows if row[0] > self.tick - self.window]

    def laws(self) -> dict[str, Slowdown]:
        """Each looked-at domain's law, on its first switch (switch id -> law)."""
        if not self.rows:
            return {}
        a = np.asarray(self.rows, dtype=float)
        dom = a[:, 1].astype(np.int64)
        est, _ = estimate_from_ratios(dom, dom, a[:, 0], a[:, 2], half_life=HALF_LIFE_TICKS)
        return {self.first[int(d)]: e.slowdown for d, e in est.items()}

    def summary(self) -> dict[str, Any]:
        """How many domains were looked at and how many of them believed congested."""
        laws = self.laws()
        return {"domains_looked": len(laws), "domains_congested": sum(not s.is_trivial for s in laws.values())}
