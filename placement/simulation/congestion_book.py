"""Learning congested domains from what running jobs show (``estimated`` knowledge; issue 49).

A worker's logged time shows its compute; a job's iteration shows its pace, communication
included.  At every estimate tick each running all-reduce job on two or more servers gives a look
at the congestion of the domains it crosses: ``L_obs = (T_obs - max_i d_i) / C``, its observed
iteration time less its slowest worker's observed compute, over its all-reduce at no congestion
(both with the logs' measurement noise).  A look is kept only above the noise,
``L_obs > 1 + NOISE_SIGMAS * LOG_NOISE * T / C`` (else it reads 1), and only from jobs whose
all-reduce is at least :data:`MIN_COMM_SHARE` of their step.  From there the rule is the offline
estimator's, in its one home (:mod:`placement.estimate.congestion`): a domain's look is the *least*
``L_obs`` among the jobs crossing it (a job's ``L`` is the largest of the domains it crosses, so a
slowdown shared by the jobs crossing one domain is put on that domain, one that only some of them
show is not), explained away when every job crossing it also crosses a narrower domain showing as
much (a job across racks waiting on a hot rack says nothing about the spine); each domain's looks
go through the estimator of ``placement estimate --logs`` (bins, recency weights, a prior towards
the fleet of domains) with a half-life of :data:`HALF_LIFE_TICKS` ticks counted from now: hot
periods last hours, so a domain's law follows them, and one no job has crossed for a while falls
back towards the fleet's.  A domain no job has crossed yet is given the fleet's law, its congested
share times ``looked / (looked + 1)`` (:func:`~placement.estimate.congestion.unseen_law`): believed
calm, a domain never crossed looked better than one crossed and seen calm (whose law the prior
pulls towards the fleet's).  Decisions see the law on the domain's first switch
(:meth:`CongestionLearner.laws`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from placement.estimate.congestion import (
    HALF_LIFE_TICKS,
    MIN_COMM_SHARE,
    NOISE_SIGMAS,
    domain_laws,
    domain_looks,
    job_look,
)
from placement.model.records import Instance, Slowdown
from placement.problem.congestion import crossed_domains, first_switches
from placement.problem.topology import cluster_of
from placement.simulation.running import LOG_NOISE, Running, iteration_ms

__all__ = ["CongestionLearner", "MIN_COMM_SHARE", "NOISE_SIGMAS", "HALF_LIFE_TICKS"]


class CongestionLearner:
    """The looks of every domain with a switch, and their laws (see the module's docstring)."""

    def __init__(
        self, cluster: Instance, seed: int, window_ticks: int, half_life_ticks: float | None = HALF_LIFE_TICKS
    ) -> None:
        self.cluster = cluster
        self.cl = cluster_of(cluster)
        self.first = first_switches(cluster, self.cl)
        self.rng = np.random.default_rng([int(seed) % 2**32, 49])  # a stream of its own
        self.window = int(window_ticks)
        self.half_life = math.inf if half_life_ticks is None else float(half_life_ticks)
        """The looks' recency half-life in ticks (``None`` given, ``math.inf``: every look of the window alike)."""
        self.tick = 0
        self.rows: list[tuple[int, int, float]] = []
        """``(tick, domain, look)``."""

    def observe(self, running: Iterable[Running], S: np.ndarray, now: float) -> None:
        """One tick: each domain's look (:func:`~placement.estimate.congestion.domain_looks`)."""
        self.tick += 1
        looks: list[tuple[float, tuple[int, ...]]] = []
        for r in running:
            if r.paused_until > now or r.stages or len(r.ps_sps) or r.comm <= 0 or len(r.sps) < 2:
                continue
            t = iteration_ms(r, S) / r.penalty
            if r.comm < MIN_COMM_SHARE * t:
                continue
            noise = np.exp(LOG_NOISE * self.rng.standard_normal(len(r.sps) + 1))
            compute = float((r.a * S[r.sps] * noise[1:]).max())
            look = job_look((t * noise[0] - compute) / r.comm, LOG_NOISE * t / r.comm)
            ids = [self.cluster.servers[sp].id for sp in r.sps]
            looks.append((look, tuple(d for d in crossed_domains(self.cl, ids) if d in self.first)))
        self.rows += [(self.tick, d, v) for d, v in domain_looks(looks, self.cl).items()]
        self.rows = [row for row in self.rows if row[0] > self.tick - self.window]

    def laws(self) -> dict[str, Slowdown]:
        """Each domain's law, on its first switch (switch id -> law): every domain with a switch
        once any job has looked (the unseen ones :func:`~placement.estimate.congestion.unseen_law`),
        none before."""
        laws = domain_laws(self.rows, domains=self.first, from_now=True, half_life=self.half_life)
        return {self.first[d]: law for d, law in laws.items()}
