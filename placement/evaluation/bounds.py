"""Lower bounds valid for the true objective, computed without a solver, and the rule
that decides whether a backend's bound may be reported."""

from __future__ import annotations

import math

import numpy as np

from placement.model.records import Instance
from placement.model.tolerances import BOUND_RTOL, TIE_RTOL
from placement.problem.arrays import EvalIndex, arrays_of
from placement.problem.hybrid import pipeline_slots
from placement.problem.rules import (
    comm_floor_ms,
    comm_ms,
    comm_ms_each,
    fastest_gbps,
    p2p_ms,
    ps_floor_ms,
    stage_sync_ms,
    weight_factor,
)
from placement.problem.topology import cluster_of

__all__ = [
    "job_lower_bound",
    "comm_lower_bound",
    "ps_floor_of",
    "spread_lower_bound",
    "class_envelopes",
    "iid_max_means",
    "lower_bound",
    "reportable_bound",
]


def job_lower_bound(instance: Instance, jp: int) -> float:
    """A valid lower bound on ``E[T_j]`` over every feasible placement of job ``jp``, the
    lesser of two cases (a parameter-server job adds its push/pull floor,
    :func:`rules.ps_floor_ms`):

    - one server: ``min_n E[a_n S_n] + C(intra_n)`` over servers with room for the gang;
    - ``k >= 2`` servers, ``k`` at least ``ceil(W / most free GPUs of a server)``: the
      expected maximum over any ``k`` servers is at least :func:`spread_lower_bound`'s, plus
      the least all-reduce time on ``k`` servers at a domain with room for the gang (the
      widest, without fitted terms).

    A hybrid job's is :func:`hybrid_lower_bound`'s.
    """
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    if job.is_hybrid:
        return hybrid_lower_bound(instance, jp)
    cl = cluster_of(instance)
    free = np.where(np.isfinite(idx.job_a(jp)), cl.free_gpus, 0)
    if not free.any():
        return math.inf
    score = idx.job_score(jp)
    floor = ps_floor_of(instance, jp)
    terms = instance.terms_by_bandwidth
    if job.workers == 1:
        return float(score[free > 0].min()) + floor
    whole = np.flatnonzero(free >= job.workers)
    single = math.inf
    if len(whole):
        single = float((score[whole] + comm_ms_each(job, cl.intra_bandwidth[whole], terms)).min())
    multi = math.inf
    k = max(2, -(-job.workers // int(free.max())))
    if cl.domains and int((free > 0).sum()) >= k:
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        wide = [d.bandwidth_gbps for d, r in zip(cl.domains, room) if r >= job.workers and len(d.servers) >= k]
        if wide:  # the maximum is also at least each used server's expectation
            spread = max(spread_lower_bound(instance, jp, k), float(score[free > 0].min()))
            # every placement over two or more servers uses at least k of them
            multi = spread + min(comm_floor_ms(job, b, terms, k) for b in wide)
    return min(single, multi) + floor


def hybrid_lower_bound(instance: Instance, jp: int) -> float:
    """A valid lower bound on a hybrid job's ``E[T]`` over every feasible placement, with
    ``K = m + pp - 1`` its pipeline slots, the lesser of:

    - one server ``n`` with room for the gang: ``K (E[a_n S_n] + p2p(intra_n)) + D(intra_n)``
      (``p2p`` only with two or more stages);
    - ``k >= 2`` servers, ``B*`` the widest bandwidth between two servers and ``B_s`` the
      widest of a domain with room for one stage (``dp x tp`` workers): either a stage
      boundary crosses servers (then some group's slot is at least ``a E[S] + p2p(B*)``:
      ``K max(C, min_n E[a_n S_n] + p2p(B*))``, with ``C`` :func:`spread_lower_bound`'s (where
      no server has room for two groups, ``C`` over the ``(pp - 1) dp`` servers of the groups
      before the last stage instead of ``min_n``, each sending across servers), plus
      every stage's all-reduce at the widest bandwidth a stage may have, ``D(B_1)``: the
      widest intra-server bandwidth of a server with room for a stage, else ``B_s``), or none
      does, so every replica's stages share a server and every stage's replicas span two or
      more (``K C + D(B_s)``); the first needs ``pp >= 2``, the second ``dp >= 2`` and a
      server with room for a replica's ``pp x tp`` workers.
    """
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    cl = cluster_of(instance)
    tp, pp, dp = job.unit, int(job.pp or 1), int(job.dp or 1)
    free = np.where(np.isfinite(idx.job_a(jp)), cl.free_gpus // tp * tp, 0)
    if not free.any():
        return math.inf
    slots = pipeline_slots(job)
    score = idx.job_score(jp)
    single = math.inf
    for sp in np.flatnonzero(free >= job.workers):
        intra = float(cl.intra_bandwidth[sp])
        q = p2p_ms(job, intra) if pp > 1 else 0.0
        single = min(single, slots * (float(score[sp]) + q) + stage_sync_ms(job, intra))
    multi = math.inf
    k = max(2, -(-job.workers // int(free.max())))
    if cl.domains and int((free > 0).sum()) >= k:
        widest = max(d.bandwidth_gbps for d in cl.domains)
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        stage_bw = max((d.bandwidth_gbps for d, r in zip(cl.domains, room) if r >= dp * tp), default=0.0)
        sync = stage_sync_ms(job, stage_bw)
        # every stage's all-reduce at least at the widest bandwidth any stage may have: one
        # server's with room for it, else the widest domain's with room (every stage spans two)
        one = cl.intra_bandwidth[free >= dp * tp]
        least_sync = stage_sync_ms(job, max(float(one.max()) if len(one) else 0.0, stage_bw))
        least = float(score[free > 0].min())
        compute = max(spread_lower_bound(instance, jp, k), least)
        boundary = least
        if int(free.max()) < 2 * tp:
            # no server holds two of its groups: the (pp - 1) dp groups before the last stage
            # each sit on a server of their own, every one sending across servers
            boundary = max(least, spread_lower_bound(instance, jp, (pp - 1) * dp))
        crossing = slots * max(compute, boundary + p2p_ms(job, widest)) + least_sync if pp > 1 else math.inf
        # apart: a replica's pp stages on one server, which then has room for pp x tp
        apart = slots * compute + sync if dp > 1 and int(free.max()) >= pp * tp else math.inf
        multi = min(crossing, apart)
    return min(single, multi)


SPREAD_MAX_GROUPS = 64
""":func:`spread_lower_bound` gives up (no bound) past this many kinds of servers (same
``a`` and distribution) for a job: its cost is support points x kinds."""


def _dist_codes(idx: EvalIndex) -> np.ndarray:
    """Per server, a code shared by servers with the same slowdown distribution (memoised)."""
    codes = getattr(idx, "_spread_codes", None)
    if codes is None:
        seen: dict[tuple[bytes, bytes], int] = {}
        codes = np.array([seen.setdefault((v.tobytes(), p.tobytes()), len(seen)) for v, p in idx.dists], dtype=np.int64)
        idx._spread_codes = codes  # type: ignore[attr-defined]
    return codes


def class_envelopes(instance: Instance, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per group of servers (independent slowdowns; ``None`` for a scenario table), the
    pointwise largest CDF ``F_g(t) = max_n P(S_n <= t)`` over its servers, padded into arrays
    (``t0`` per group, interval lengths ``dt`` and ``F`` at each interval's start, zero
    past the last): every ``S_n`` of the group is stochastically at least ``F_g``, so ``k``
    servers of the group have ``E[max S] >=`` :func:`iid_max_means` at ``k``.  Ties are
    counted in (a larger ``F`` keeps that valid)."""
    idx = arrays_of(instance)
    if idx.scenario_probs is not None:
        return None
    codes = _dist_codes(idx)
    grids: list[tuple[np.ndarray, np.ndarray]] = []
    for members in groups:
        dists = [idx.dists[int(q)] for q in members[np.unique(codes[members], return_index=True)[1]]]
        t = np.unique(np.concatenate([v for v, _ in dists])) if dists else np.zeros(1)
        F = np.zeros(len(t))
        for v, p in dists:
            cdf = np.concatenate(([0.0], np.cumsum(p)))
            F = np.maximum(F, cdf[np.searchsorted(v, t * (1 + TIE_RTOL), side="right")])
        grids.append((t, np.minimum(F, 1.0)))
    L = max(len(t) for t, _ in grids)
    t0 = np.array([t[0] for t, _ in grids])
    dt = np.zeros((len(grids), L))
    Fs = np.ones((len(grids), L))
    for g, (t, F) in enumerate(grids):
        dt[g, : len(t) - 1] = np.diff(t)
        Fs[g, : len(t)] = F
    return t0, dt, Fs


def iid_max_means(envelopes: tuple[np.ndarray, np.ndarray, np.ndarray], k: np.ndarray) -> np.ndarray:
    """Per group, ``E[max]`` of ``k`` (real, > 0) independent copies of its envelope
    (:func:`class_envelopes`): ``t0 + sum dt (1 - F^k)``, concave and increasing in ``k``."""
    t0, dt, F = envelopes
    means: np.ndarray = t0 + (dt * (1.0 - F ** np.asarray(k, dtype=float)[:, None])).sum(axis=1)
    return means


def ps_floor_of(instance: Instance, jp: int) -> float:
    """Job ``jp``'s push/pull floor (:func:`rules.ps_floor_ms`; 0 for an all-reduce job)."""
    job = instance.jobs[jp]
    if not job.is_ps:
        return 0.0
    intra, link = fastest_gbps(instance)
    most_local = int(cluster_of(instance).free_gpus.max(initial=0))
    return ps_floor_ms(
        job, intra, link, most_local, len(instance.servers) if job.max_servers is None else job.max_servers
    )


def comm_lower_bound(instance: Instance, jp: int) -> float:
    """A lower bound on job ``jp``'s communication time alone (``C_j``, or a parameter-server
    job's push/pull floor) over every feasible placement: at the widest bandwidth of a server
    or domain with room for the gang (what the transportation LP adds to its compute part)."""
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    cl = cluster_of(instance)
    free = np.where(np.isfinite(idx.job_a(jp)), cl.free_gpus, 0)
    if not free.any():
        return math.inf
    floor = ps_floor_of(instance, jp)
    if job.workers == 1:
        return floor
    terms = instance.terms_by_bandwidth
    comm = [comm_ms(job, float(b), 1, terms) for b in set(cl.intra_bandwidth[free >= job.workers].tolist())]
    if cl.domains:
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        k = max(2, -(-job.workers // int(free.max())))
        comm += [comm_floor_ms(job, d.bandwidth_gbps, terms, k) for d, r in zip(cl.domains, room) if r >= job.workers]
    return min(comm, default=math.inf) + floor


def spread_lower_bound(instance: Instance, jp: int, k: int) -> float:
    """A lower bound on ``E[max_{n in V} a_n S_n]`` over every set ``V`` of at least ``k``
    servers job ``jp`` may use (free GPUs, allowed): independent slowdowns give
    ``P(max_V <= t) <= the product of the k largest P(a_n S_n <= t)``, so
    ``E >= sum_i (t_i - t_{i-1}) (1 - that product at t_{i-1})`` over the support points;
    scenario tables give, per scenario, at least the k-th smallest ``a_n S_ns``.  Servers
    with the same ``a`` and distribution are counted together."""
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    own = idx.over_servers.get(jp, set())
    if own or job.allowed_servers is not None or job.compute_ms <= 0:
        return _spread(instance, jp, idx.job_a(jp), k)
    # E[max a S] is compute_ms x E[max S / speed]: one value per speed profile and k
    memo: dict[tuple[object, ...], float] = idx.__dict__.setdefault("_spread_memo", {})
    key = (tuple(job.speed(t) or 0.0 for t in idx.type_names), k)
    if key not in memo:
        memo[key] = _spread(instance, jp, idx.job_a(jp) / job.compute_ms, k)
    return job.compute_ms * memo[key]


def _spread(instance: Instance, jp: int, a: np.ndarray, k: int) -> float:
    idx = arrays_of(instance)
    sps = np.flatnonzero(np.isfinite(a) & (cluster_of(instance).free_gpus > 0))
    if len(sps) < k:
        return math.inf
    own = idx.over_servers.get(jp, set())
    if idx.scenario_probs is not None:
        rows = idx.table[sps] * a[sps, None]
        for i, sp in enumerate(sps):
            if int(sp) in own:
                r = idx.over_row.get((jp, int(sp)))
                if r is not None:
                    rows[i] = a[sp] * r
        kth = np.partition(rows, k - 1, axis=0)[k - 1]
        return float(kth @ idx.scenario_probs)
    codes = _dist_codes(idx).copy()
    for k2, osp in enumerate(sorted(own)):
        codes[osp] = -1 - k2  # a job's own estimate: its own group
    _, first, counts = np.unique(
        np.stack([a[sps], codes[sps].astype(float)], axis=1), axis=0, return_index=True, return_counts=True
    )
    if len(first) > SPREAD_MAX_GROUPS:
        return -math.inf  # too many kinds of servers to be worth it here: no bound
    reps = [int(sps[i]) for i in first]
    dists = [idx.over_dist.get((jp, q)) or idx.dists[q] for q in reps]
    t = np.unique(np.concatenate([a[q] * v for q, (v, _) in zip(reps, dists)]))
    # F[i, g] = P(a S <= t_i), ties counted in (a larger F keeps the bound valid)
    F = np.empty((len(t), len(reps)))
    for g, (rep, (v, p)) in enumerate(zip(reps, dists)):
        cdf = np.concatenate(([0.0], np.cumsum(p)))
        F[:, g] = np.minimum(cdf[np.searchsorted(a[rep] * v, t * (1 + TIE_RTOL), side="right")], 1.0)
    order = np.argsort(-F, axis=1, kind="stable")
    Fs = np.take_along_axis(F, order, axis=1)
    cs = counts[order]
    before = np.cumsum(cs, axis=1) - cs
    take = np.clip(k - before, 0, cs)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(take > 0, take * np.log(Fs), 0.0)
    prod = np.exp(logs.sum(axis=1))  # at each t_i: the product of the k largest F
    below = np.concatenate(([0.0], prod[:-1]))  # P(max <= t) on [t_{i-1}, t_i), at most
    return float((np.diff(np.concatenate(([0.0], t))) * (1.0 - below)).sum())


def lower_bound(instance: Instance) -> float | None:
    """A valid lower bound on the objective of any placement that places every job
    (admission ``all``); ``None`` for ``best_effort``, where the objective counts only the
    jobs placed (:func:`bound_placing_all` there)."""
    return bound_placing_all(instance) if instance.admission == "all" else None


def bound_placing_all(instance: Instance) -> float | None:
    """A valid lower bound on the objective of any placement that places every job, whatever
    the admission (with ``best_effort``, a placement of every job that meets it is optimal:
    no placement places more weight); ``None`` when some job has no room at all."""
    total = 0.0
    for jp, job in enumerate(instance.jobs):
        total += weight_factor(instance, job) * job_lower_bound(instance, jp)
    return total if math.isfinite(total) else None


def reportable_bound(bound: float | None, objective: float) -> tuple[float | None, str | None]:
    """The bound to report beside the exact ``objective``, and a note when one is dropped.

    A bound above the objective by at most ``BOUND_RTOL`` (relative) is the solvers'
    tolerance and is clipped to it; further above, it is not a bound and is dropped."""
    if bound is None:
        return None, None
    if objective < bound <= objective * (1 + BOUND_RTOL) + 1e-9:
        return objective, None
    if bound > objective:
        return None, f"dropped bound {bound:.9g} above the true objective {objective:.9g}"
    return bound, None
