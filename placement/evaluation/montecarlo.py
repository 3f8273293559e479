"""Monte Carlo simulation of the same model, with a seed: the evaluator's cross-check."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from placement.model.records import Assignment, Instance
from placement.problem.arrays import arrays_of, job_groups
from placement.problem.rules import comm_ms, weight_factor
from placement.problem.topology import cluster_of

__all__ = ["MonteCarloResult", "monte_carlo"]


@dataclass(frozen=True)
class MonteCarloResult:
    """Sample means with 95% normal confidence half-widths."""

    samples: int
    seed: int
    objective: float
    objective_ci: float
    jobs: Mapping[str, tuple[float, float]]


def monte_carlo(
    instance: Instance, assignment: Assignment, *, samples: int = 10_000, seed: int = 0
) -> MonteCarloResult:
    """Simulate ``samples`` iterations of the whole cluster (one slowdown draw per server,
    or one scenario, per iteration) and average each job's slowest-worker time."""
    if samples < 2:
        raise ValueError(f"The 'samples' parameter of monte_carlo must be an int >= 2. Got {samples!r} instead.")
    rng = np.random.default_rng(seed)
    idx = arrays_of(instance)
    groups = job_groups(instance, assignment)
    used = sorted({sp for _, sps in groups for sp in sps})

    def draw(v: np.ndarray, p: np.ndarray) -> np.ndarray:
        return v[np.minimum(np.searchsorted(np.cumsum(p), rng.random(samples), side="right"), len(v) - 1)]

    if idx.scenario_probs is None:
        S = {sp: draw(*idx.dists[sp]) for sp in used}
        scen = None
    else:
        scen = draw(np.arange(len(idx.scenario_probs)), idx.scenario_probs).astype(int)
        S = {sp: idx.table[sp][scen] for sp in used}
    total = np.zeros(samples)
    jobs: dict[str, tuple[float, float]] = {}
    for jp, sps in groups:
        job = instance.jobs[jp]
        ids = [instance.servers[sp].id for sp in sps]
        c = comm_ms(job, cluster_of(instance).bandwidth(ids))
        t = np.zeros(samples)
        for sp in sps:
            if (jp, sp) in idx.over_dist:
                s = draw(*idx.over_dist[(jp, sp)])
            elif (jp, sp) in idx.over_row:
                s = idx.over_row[(jp, sp)][scen]
            else:
                s = S[sp]
            t = np.maximum(t, idx.a(jp, sp) * s)
        t = t + c
        jobs[job.id] = (float(t.mean()), float(1.96 * t.std(ddof=1) / math.sqrt(samples)))
        total += weight_factor(instance, job) * t
    return MonteCarloResult(
        samples=samples,
        seed=seed,
        objective=float(total.mean()),
        objective_ci=float(1.96 * total.std(ddof=1) / math.sqrt(samples)),
        jobs=MappingProxyType(jobs),
    )
