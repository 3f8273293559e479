"""Lower bounds valid for the true objective, computed without a solver, and the rule
that decides whether a backend's bound may be reported."""

from __future__ import annotations

import math
from collections.abc import Callable

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
    spread_factor,
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
    - ``k >= 2`` servers, ``k`` at least ``ceil(W / most free GPUs of a server)``, all in
      their *home* (the smallest domain holding them, with room for the gang), which sets
      the all-reduce's bandwidth: the least over homes of :func:`spread_lower_bound`'s
      expected maximum over ``k`` of the home's servers plus the least all-reduce time on
      ``k`` servers at its bandwidth (:func:`_least_over_homes`).

    A hybrid job's is :func:`hybrid_lower_bound`'s.  Memoised per instance and job.
    """
    memo: dict[int, float] = arrays_of(instance).__dict__.setdefault("_job_lower_bound", {})
    if jp not in memo:
        memo[jp] = _job_lower_bound(instance, jp)
    return memo[jp]


def _job_lower_bound(instance: Instance, jp: int) -> float:
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
        # every placement over two or more servers uses at least k of them, all in its home
        # (the smallest domain holding them), and all-reduces at the home's bandwidth; the
        # maximum is also at least each used server's expectation
        def cost(bandwidth: float, view: _Within) -> float:
            return view.compute(k) + comm_floor_ms(job, bandwidth, terms, k)

        multi = _least_over_homes(instance, jp, free, job.workers, k, cost, below=single)
        multi = (multi + floor) * spread_factor(instance, 2) - floor  # two or more servers: the penalty
    return min(single, multi) + floor


def hybrid_lower_bound(instance: Instance, jp: int) -> float:
    """A valid lower bound on a hybrid job's ``E[T]`` over every feasible placement, with
    ``K = m + pp - 1`` its pipeline slots, the lesser of:

    - one server ``n`` with room for the gang: ``K (E[a_n S_n] + p2p(intra_n)) + D(intra_n)``
      (``p2p`` only with two or more stages);
    - ``k >= 2`` servers in a home ``H`` (the smallest domain holding them, bandwidth
      ``beta``: they lie in two or more of its children), ``C`` :func:`spread_lower_bound`'s
      over ``k`` of ``H``'s servers, ``B*`` the widest bandwidth between two servers and
      ``D*`` every stage's all-reduce at the widest bandwidth a stage may have (the widest
      intra-server bandwidth of a server with room for a stage, else the widest domain's with
      room); the least over homes of the least of three cases:

      - no stage boundary crosses servers (every replica's ``pp`` stages on one server; needs
        ``dp >= 2`` and such a server): every stage spans all the servers, ``K C + D(beta)``;
      - a boundary crosses servers and every stage lies inside one child of ``H``: some group
        sends at least at ``B*``, so the slot is at least ``X = max(C, min E[a S] +
        p2p(B*))`` (where no server holds two groups, the ``(pp - 1) dp`` groups before the
        last stage over as many servers instead of ``min``), and two consecutive stages are
        in two children, so that stage's ``dp`` groups (on at least ``ceil(dp tp / most
        free)`` servers) send at ``beta``: ``K max(X, their spread + p2p(beta)) + D*``;
      - a boundary crosses servers and a stage spans two children (``dp >= 2``): ``K X +
        max(D*, D(beta))``.
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
        # every stage's all-reduce at least at the widest bandwidth any stage may have: one
        # server's with room for it, else the widest domain's with room (every stage spans two)
        one = cl.intra_bandwidth[free >= dp * tp]
        least_sync = stage_sync_ms(job, max(float(one.max()) if len(one) else 0.0, stage_bw))
        most = int(free.max())
        senders = -(-dp * tp // most)  # the servers one stage's dp groups take, at least

        def cost(beta: float, view: _Within) -> float:
            # the placement's home (the smallest domain holding its servers) has bandwidth
            # ``beta``; its servers are in two or more of the home's children, so either no
            # stage boundary crosses servers (apart: every stage spans all of them), or one
            # does with every stage inside one child (then two consecutive stages are in two
            # children: that stage's dp groups send at ``beta``), or one does with a stage
            # spanning two children (its all-reduce at ``beta``)
            compute = view.compute(k)
            boundary = view.least
            if most < 2 * tp and pp > 1:
                # no server holds two of its groups: the (pp - 1) dp groups before the last
                # stage each sit on a server of their own, every one sending across servers
                boundary = max(boundary, view.compute((pp - 1) * dp))
            crossing = max(compute, boundary + p2p_ms(job, widest))
            out = math.inf
            if pp > 1:
                # a stage inside one child: the boundary after some stage crosses children
                at_home = view.compute(senders) if senders >= 2 else view.least
                out = slots * max(crossing, at_home + p2p_ms(job, beta)) + least_sync
                if dp > 1:  # a stage spanning children (one group per stage cannot)
                    out = min(out, slots * crossing + max(least_sync, stage_sync_ms(job, beta)))
            if dp > 1 and most >= pp * tp:  # apart: a replica's pp stages on one server
                out = min(out, slots * compute + stage_sync_ms(job, beta))
            return out

        multi = _least_over_homes(instance, jp, free, job.workers, k, cost, below=single)
        multi *= spread_factor(instance, 2)  # two or more servers: the penalty
    return min(single, multi)


DOMAIN_SPREAD_MAX = 32
"""A job's bound prices at most this many homes (domains with room for it) with the spread
bound over their own servers (:func:`_least_over_homes`), the cheapest first by the spread over
all servers; the rest keep that lower price."""


class _Within:
    """The compute part of a job's bound on the usable servers of one domain (``None``: all):
    :func:`spread_lower_bound` over ``k`` of them, at least ``least`` (the least expectation
    among them)."""

    def __init__(
        self, instance: Instance, jp: int, domain: int | None, least: float, rough: _Within | None = None
    ) -> None:
        self.instance, self.jp, self.domain, self.least, self.rough = instance, jp, domain, least, rough
        self._memo: dict[int, float] = {}

    def compute(self, k: int) -> float:
        """With ``rough`` (the part over more servers), its value at least ``least`` instead
        of the domain's own spread bound: a lower value, quick."""
        if k not in self._memo:
            if self.rough is not None:
                self._memo[k] = max(self.rough.compute(k), self.least)
            else:
                self._memo[k] = max(spread_lower_bound(self.instance, self.jp, k, within=self.domain), self.least)
        return self._memo[k]


def _least_over_homes(
    instance: Instance,
    jp: int,
    free: np.ndarray,
    workers: int,
    k: int,
    cost: Callable[[float, _Within], float],
    below: float = math.inf,
) -> float:
    """The least ``cost(bandwidth, compute part)`` over the job's possible homes (domains with
    room for ``workers`` of the ``free`` GPUs over at least ``k`` servers), or ``below`` when
    none is less.  ``cost`` may only grow with the compute part, so each home's cost with the
    compute part over all servers is a lower value (one per bandwidth); homes are priced with
    their own servers in that order until none can be cheaper, at most
    :data:`DOMAIN_SPREAD_MAX` of them (the rest keep their lower value)."""
    cl = cluster_of(instance)
    score = np.where(free > 0, arrays_of(instance).job_score(jp), math.inf)
    everywhere = _Within(instance, jp, None, float(score.min()))
    if min(cost(bw, everywhere) for bw in {d.bandwidth_gbps for d in cl.domains}) >= below:
        return below  # no home at all could be cheaper
    concat, offsets = cl.domain_concat
    room = np.add.reduceat(free[concat], offsets)
    homes = [i for i, (d, r) in enumerate(zip(cl.domains, room)) if r >= workers and len(d.servers) >= k]
    if not homes:
        return below
    least = np.minimum.reduceat(score[concat], offsets)
    levels: dict[float, list[int]] = {}
    for d in homes:
        levels.setdefault(cl.domains[d].bandwidth_gbps, []).append(d)
    best, priced = below, 0
    for level_low, bw in sorted((cost(bw, everywhere), bw) for bw in levels):
        if level_low >= best:
            break
        for d in sorted(levels[bw], key=lambda d: least[d]):
            # a lower value with the home's least expectation, growing in this order
            if cost(bw, _Within(instance, jp, d, float(least[d]), rough=everywhere)) >= best:
                break
            if priced >= DOMAIN_SPREAD_MAX:
                return min(best, level_low)  # below every home left, this level's and the next
            priced += 1
            best = min(best, cost(bw, _Within(instance, jp, d, float(least[d]))))
    return best


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


def spread_lower_bound(instance: Instance, jp: int, k: int, within: int | None = None) -> float:
    """A lower bound on ``E[max_{n in V} a_n S_n]`` over every set ``V`` of at least ``k``
    servers job ``jp`` may use (free GPUs, allowed; with ``within``, of that domain only):
    independent slowdowns give
    ``P(max_V <= t) <= the product of the k largest P(a_n S_n <= t)``, so
    ``E >= sum_i (t_i - t_{i-1}) (1 - that product at t_{i-1})`` over the support points;
    scenario tables give, per scenario, at least the k-th smallest ``a_n S_ns``.  Servers
    with the same ``a`` and distribution are counted together."""
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    own = idx.over_servers.get(jp, set())

    def a_within(a: np.ndarray) -> np.ndarray:
        if within is None:
            return a
        out = np.full(len(a), math.inf)
        members = cluster_of(instance).domain_members[within]
        out[members] = a[members]
        return out

    if own or job.allowed_servers is not None or job.compute_ms <= 0:
        return _spread(instance, jp, a_within(idx.job_a(jp)), k)
    # E[max a S] is compute_ms x E[max S / speed]: one value per speed profile, k and domain
    memo: dict[tuple[object, ...], float] = idx.__dict__.setdefault("_spread_memo", {})
    key = (tuple(job.speed(t) or 0.0 for t in idx.type_names), k, within)
    if key not in memo:
        memo[key] = _spread(instance, jp, a_within(idx.job_a(jp) / job.compute_ms), k)
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
