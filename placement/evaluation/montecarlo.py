"""Monte Carlo simulation of the same model, with a seed: the evaluator's cross-check."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from placement.model.records import Assignment, GpuChoice, Instance, Stages
from placement.problem.arrays import arrays_of, job_groups
from placement.problem.congestion import congestion_of
from placement.problem.gpus import choose_gpus, job_factors
from placement.problem.hybrid import best_stages, matrix_pos
from placement.problem.rules import comm_ms, p2p_ms, stage_sync_ms, weight_factor
from placement.problem.shards import ps_coefs
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
    instance: Instance,
    assignment: Assignment,
    *,
    samples: int = 10_000,
    seed: int = 0,
    shards: Assignment | None = None,
    stages: Stages | None = None,
    gpus: GpuChoice | None = None,
) -> MonteCarloResult:
    """Simulate ``samples`` iterations of the whole cluster (one slowdown draw per server,
    or one scenario, per iteration) and average each job's slowest-worker time; a
    parameter-server job adds its push/pull phase, its shards' servers slowed by the same
    draws; a hybrid job's iteration is the literal per-group formula over its ``stages`` (the
    evaluator's mapping when not given): ``(m + pp - 1) max_g (a S + p_g) + max_s D_s``.
    On servers with per-GPU factors each worker is drawn on its own GPU, ``a f_g S`` (its GPUs
    ``gpus``, or the evaluator's rule's); a hybrid job's groups on a server all at its slowest.
    Each congested domain draws its ``L`` once per iteration; a job's traffic between servers
    takes the largest ``L`` of the domains it crosses times longer."""
    if samples < 2:
        raise ValueError(f"The 'samples' parameter of monte_carlo must be an int >= 2. Got {samples!r} instead.")
    rng = np.random.default_rng(seed)
    idx = arrays_of(instance)
    groups = job_groups(instance, assignment)
    pos = instance.server_pos
    z_of = {
        instance.job_pos[j]: {pos[s]: int(k) for s, k in a.items() if k > 0}
        for j, a in (shards or {}).items()
        if j in instance.job_pos and instance.job_by_id[j].is_ps
    }
    used = sorted({sp for _, sps in groups for sp in sps} | {sp for z in z_of.values() for sp in z})

    def draw(v: np.ndarray, p: np.ndarray) -> np.ndarray:
        return v[np.minimum(np.searchsorted(np.cumsum(p), rng.random(samples), side="right"), len(v) - 1)]

    if idx.scenario_probs is None:
        S = {sp: draw(*idx.dists[sp]) for sp in used}
        scen = None
    else:
        scen = draw(np.arange(len(idx.scenario_probs)), idx.scenario_probs).astype(int)
        S = {sp: idx.table[sp][scen] for sp in used}
    held = choose_gpus(instance, assignment, gpus)
    cong = congestion_of(instance)  # one draw per congested domain per iteration
    L = {d: draw(*law) for d, law in sorted(cong.laws.items())}
    total = np.zeros(samples)
    jobs: dict[str, tuple[float, float]] = {}
    for jp, sps in groups:
        job = instance.jobs[jp]
        z = z_of.get(jp, {})
        draws: dict[int, np.ndarray] = {}
        for sp in sorted(set(sps) | set(z)):  # one draw per server for both phases
            if (jp, sp) in idx.over_dist:
                draws[sp] = draw(*idx.over_dist[(jp, sp)])
            elif (jp, sp) in idx.over_row:
                draws[sp] = idx.over_row[(jp, sp)][scen]
            else:
                draws[sp] = S[sp]
        crossed = cong.crossed([instance.servers[sp].id for sp in sorted(set(sps) | set(z))])
        lmax = np.ones(samples)
        for d in crossed:
            lmax = np.maximum(lmax, L[d])
        t = np.zeros(samples)
        mine = held.get(job.id, {})
        for sp in sps:  # worker by worker, each on its GPU
            f = job_factors(instance, jp, sp)
            for g in mine.get(instance.servers[sp].id, (None,)):
                t = np.maximum(t, idx.base_a(jp, sp) * (1.0 if g is None else f[g]) * draws[sp])
        if job.is_hybrid:
            worst = {
                sp: max((job_factors(instance, jp, sp)[g] for g in mine.get(instance.servers[sp].id, ())), default=1.0)
                for sp in sps
            }
            t = _hybrid_draws(instance, jp, assignment, stages, draws, worst, lmax)
        elif z:
            x = {pos[s]: int(k) for s, k in assignment[job.id].items() if k > 0}
            shard_sps, local, _ = ps_coefs(instance, job, x, z, 0.0)  # the traffic within servers
            _, both, _ = ps_coefs(instance, job, x, z)
            push = np.zeros(samples)
            for sp, c0, c1 in zip(shard_sps, local, both):
                push = np.maximum(push, (c0 + (c1 - c0) * lmax) * draws[sp])
            t = t + push
        else:
            ids = [instance.servers[sp].id for sp in sps]
            t = t + lmax * comm_ms(job, cluster_of(instance).bandwidth(ids), len(ids), instance.terms_by_bandwidth)
        jobs[job.id] = (float(t.mean()), float(1.96 * t.std(ddof=1) / math.sqrt(samples)))
        total += weight_factor(instance, job) * t
    return MonteCarloResult(
        samples=samples,
        seed=seed,
        objective=float(total.mean()),
        objective_ci=float(1.96 * total.std(ddof=1) / math.sqrt(samples)),
        jobs=MappingProxyType(jobs),
    )


def _hybrid_draws(
    instance: Instance,
    jp: int,
    assignment: Assignment,
    stages: Stages | None,
    draws: Mapping[int, np.ndarray],
    worst: Mapping[int, float],
    lmax: np.ndarray,
) -> np.ndarray:
    """A hybrid job's sampled iteration times, group by group (DESIGN.md's formula as written),
    every transfer between two servers ``lmax`` times slower."""
    job = instance.jobs[jp]
    idx = arrays_of(instance)
    cluster = cluster_of(instance)
    given = (stages or {}).get(job.id)
    if given:
        m = matrix_pos(instance, given)
    else:
        x = {instance.server_pos[s]: int(k) for s, k in assignment[job.id].items() if k > 0}
        m, _ = best_stages(instance, jp, x)
    ids = [[instance.servers[sp].id for sp in row] for row in m]
    pp = len(m)
    slowest = np.zeros(len(next(iter(draws.values()))))
    for s in range(pp):
        for r, sp in enumerate(m[s]):
            p: float | np.ndarray = 0.0
            if s < pp - 1:
                pair = [ids[s][r], ids[s + 1][r]]
                p = p2p_ms(job, cluster.bandwidth(pair)) * (lmax if pair[0] != pair[1] else 1.0)
            slowest = np.maximum(slowest, idx.base_a(jp, sp) * worst.get(sp, 1.0) * draws[sp] + p)
    sync = np.zeros_like(lmax)
    for row in ids:
        sync = np.maximum(sync, stage_sync_ms(job, cluster.bandwidth(row)) * (lmax if len(set(row)) > 1 else 1.0))
    out: np.ndarray = (job.microbatches + pp - 1) * slowest + sync
    return out
