"""A capacity-aware lower bound for large instances: the home-aware transportation LP over
server classes.

Every placement of job ``j`` is either on **one server** ``n`` (``E[T_j] >= E[a_jn S_n] +
C_j(intra_n)``) or on **two or more servers** whose smallest bandwidth domain has bandwidth
``b`` (``E[T_j] >= E[max_n a_jn S_n] + C_j(b)``); a parameter-server job adds its push/pull
floor.  Also ``E[T_j] >= job_lower_bound``.  The LP:

- per job, a convex combination of *single-server* options ``s_jc`` (a class ``c`` whose
  servers have room for the whole gang; they use ``W_j`` of the class's GPUs) and *tiers*
  ``t_jb`` (a bandwidth ``b`` of some domain with room for the gang), with fractional
  workers ``x_jc`` for the tiers (``sum_c x_jc = W_j sum_b t_jb``);
- the classes' free GPUs as capacities, shared by both kinds;
- ``e_j >= the options' costs``, where a tier worker in class ``c`` costs ``1/W_j`` of
  ``a_jc h_c``, the expected maximum of ``W_j / g_c`` independent copies of the class's
  *envelope* (:func:`class_envelopes`; ``g_c = min(free GPUs of its servers, W_j - 1)``):
  on two or more servers, ``x_c`` workers in class ``c`` use at least ``x_c / g_c`` of its
  servers, every server is stochastically at least its class's envelope, and the expected
  maximum ``int 1 - prod_c F_c^(x_c / g_c)`` is concave in ``x``, hence at least its
  interpolation between the placements all in one class (gangs spread over one-GPU servers
  wait for the slowest of many).  For a scenario table (correlated slowdowns) and singled
  out servers ``h_c`` is the worker-weighted average's ``E[a_jc S]``;
- ``e_j >= job_lower_bound``; minimise ``sum_j f_j e_j``.

Any placement that places every job is a feasible point of equal or higher cost, so the LP
optimum is a valid lower bound; it is at least the plain transportation LP's (where every
job gets its widest bandwidth for free and the average of its workers' expectations):
gangs that do not all fit on single servers must pay for a domain's bandwidth and for the
slowest of their servers.  Servers are aggregated into classes of equal GPU type, free GPUs
and expected slowdown rounded down to ``CLASS_STEP``, each class at its servers' least
expected slowdown (so the bound stays valid, looser by at most that step), whose GPUs cap
all workers, and subclasses of equal intra-server
bandwidth and largest gang size (of the instance's) that fits in their free GPUs, whose GPUs
cap the single-server options of gangs of two or more; servers a job restricts
or overrides stay singletons.  Solved by HiGHS (highspy) directly, by column generation over
the per-class columns (:func:`_solve_with_pricing`), its first restricted LP seeded with a
placement when one is given; the reported bound is the LP optimum times ``1 -
TRANSPORT_LP_RTOL`` (its tolerance), or, cut short, the best Lagrangian bound of the rounds'
capacity prices (:meth:`JobOptions.bound`: every job's exact minimum over all its options),
never below the sum of the jobs' simple bounds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.evaluation.bounds import (
    class_envelopes,
    comm_lower_bound,
    iid_max_means,
    job_lower_bound,
    ps_floor_of,
)
from placement.formulations.quiet import interruptible_run, native_stdout_silenced
from placement.model.records import Assignment, Instance
from placement.model.tolerances import TRANSPORT_LP_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.rules import comm_floor_ms, comm_ms, comm_ms_each, singled_out_servers, weight_factor
from placement.problem.topology import cluster_of

__all__ = ["transport_lower_bound", "transport_lp", "TransportLP", "CLASS_STEP"]

CLASS_STEP = 0.01
"""Expected slowdowns are rounded down to multiples of this to form server classes (seeded
LP on fleet1g-4278: 378,495 in 6.9 s; with 0.02, 376,320 in 5.1 s; with 0.05, 371,066 in
3.6 s)."""
PRICING_START = 12
PRICING_ADD = 12
PRICING_RTOL = 1e-9
PRICING_RESTART = 0.2
RETRY_SOLVERS = ("ipm", "simplex")
"""When a restricted LP's run ends neither optimal nor out of time, it is solved again from
scratch by these, one per such failure."""
ARTIFICIAL_RAISE = 100.0
ARTIFICIAL_ROUNDS = 3
"""Column generation (:func:`_solve_with_pricing`): classes per job in the first LP, columns
added per job and round, the reduced cost (relative to the column's size) below which a
column is priced in, the share of new columns above which the LP is solved again from
scratch (interior point) rather than by the simplex from the last basis (only without a
seed placement: seeded, the simplex goes on, 6.8 s against 10.0 s on fleet1g-4278), and how the
artificial options' costs rise (factor, times) while the optimum uses one."""


@dataclass(frozen=True)
class TransportLP:
    """The transportation LP's bound (``None``: no valid bound) and, from its last duals,
    per server the price of a GPU for a worker (its class's capacity row) and for a gang of
    two or more on that one server (adding its subclass's row): what a GPU there is worth to
    the other jobs, for price-guided construction (``None``: no LP was solved)."""

    bound: float | None
    gpu_price: np.ndarray | None = None
    whole_price: np.ndarray | None = None
    solved: bool = False
    """Whether the LP was solved to optimality (not cut short: then its duals are those of a
    restricted LP, poor guides)."""


def transport_lower_bound(instance: Instance, *, time_limit_s: float = 30.0, home_aware: bool = True) -> float | None:
    """The home-aware transportation-LP bound (``None``: best effort, no HiGHS, or not
    solved in time).  ``home_aware=False``: the plain transportation LP (every job at the
    average of its workers' classes plus its widest all-reduce, ``comm_lower_bound``), for
    ``python -m placement.bench bounds``'s side-by-side."""
    return transport_lp(instance, time_limit_s=time_limit_s, home_aware=home_aware).bound


def transport_lp(
    instance: Instance,
    *,
    time_limit_s: float = 30.0,
    home_aware: bool = True,
    start: Assignment | None = None,
    class_step: float = CLASS_STEP,
) -> TransportLP:
    """:func:`transport_lower_bound` with the LP's GPU prices (:class:`TransportLP`).  With a
    placement ``start`` (of every job), the first restricted LP holds the columns it uses, so
    that it is feasible without the artificial options and its duals are meaningful from the
    first round.  ``class_step``: the rounding of the servers' expected slowdowns into classes
    (coarser: a smaller LP and a looser bound, still valid)."""
    if instance.admission != "all" or not instance.jobs:
        return TransportLP(None)
    try:
        import highspy
    except ImportError:  # pragma: no cover
        return TransportLP(None)
    idx = arrays_of(instance)
    cl = cluster_of(instance)
    terms = instance.terms_by_bandwidth
    free = cl.free_gpus
    special_pos = {instance.server_pos[s] for s in singled_out_servers(instance)}
    mean = np.floor(idx.server_mean / class_step + 1e-9) * class_step
    intra = cl.intra_bandwidth
    # classes (workers of the tiers; GPU capacity rows) and their subclasses by free GPUs and
    # intra-server bandwidth (single-server options; whole-server capacity rows)
    sizes = sorted({j.workers for j in instance.jobs})
    keys: dict[tuple[object, ...], int] = {}
    subkeys: dict[tuple[object, ...], int] = {}
    cls = np.empty(len(free), dtype=np.int64)
    sub = np.empty(len(free), dtype=np.int64)
    for sp in range(len(free)):
        key: tuple[object, ...] = (
            ("s", sp) if sp in special_pos else ("c", int(idx.type_codes[sp]), float(mean[sp]), int(free[sp]))
        )
        cls[sp] = keys.setdefault(key, len(keys))
        fit = max((w for w in sizes if w <= free[sp]), default=0)  # the largest gang it can hold
        sub[sp] = subkeys.setdefault((cls[sp], fit, float(intra[sp])), len(subkeys))
    C, F = len(keys), len(subkeys)
    cap = np.bincount(cls, weights=free, minlength=C)
    sub_cap = np.bincount(sub, weights=free, minlength=F)
    rep = np.zeros(C, dtype=np.int64)
    rep[cls] = np.arange(len(free))  # a representative server per class
    sub_rep = np.zeros(F, dtype=np.int64)
    sub_rep[sub] = np.arange(len(free))
    sub_cls = cls[sub_rep]
    # the least expected slowdown of a class's servers with a free GPU (at least the rounded one)
    class_mean = np.full(C, np.inf)
    np.minimum.at(class_mean, cls[free > 0], idx.server_mean[free > 0])
    class_mean = np.where(np.isfinite(class_mean), class_mean, mean[rep])  # no free GPU: unused
    sub_free = np.array([k[1] for k in subkeys], dtype=np.int64)  # gangs up to this size fit
    class_most = np.zeros(C, dtype=np.int64)  # most free GPUs of a server in each class
    np.maximum.at(class_most, cls, free)
    sub_intra = intra[sub_rep]
    if cl.domains:
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        multi = [(d.bandwidth_gbps, float(r)) for d, r in zip(cl.domains, room) if len(d.servers) >= 2]
    else:
        multi = []

    J = len(instance.jobs)
    special_cls = np.array(sorted({int(cls[sp]) for sp in special_pos}), dtype=np.int64)
    narrowest = min((float(b) for b in [*(b for b, _ in multi), *intra] if b > 0), default=1.0)
    artificial: list[int] = []  # their block positions
    # row blocks: convexity (J), worker link (J), cost (J), class capacity (C), subclass
    # capacity (F)
    r_cvx, r_link, r_cost, r_cap, r_sub = 0, J, 2 * J, 3 * J, 3 * J + C
    order = np.argsort(cls, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(cls, minlength=C))[:-1])
    envelopes = class_envelopes(instance, [m[free[m] > 0] for m in members]) if home_aware else None
    tier_means: dict[int, np.ndarray] = {}  # per gang size, per class: see below
    # columns in blocks of equal length: (cost, lower bound, rows [cols x nnz], values)
    blocks: list[Block] = []
    # per job, its columns over the classes (single-server options, workers of the tiers,
    # single workers): priced in
    lazy: list[Lazy] = []
    seeds: list[np.ndarray] = []  # per lazy entry, the columns ``start`` uses (in the first LP)

    def add(cost: np.ndarray, lower: np.ndarray, rows: np.ndarray, vals: np.ndarray) -> None:
        blocks.append((cost, lower, np.atleast_2d(rows), np.atleast_2d(vals)))

    row_lower = np.zeros(3 * J + C + F)
    row_upper = np.zeros(3 * J + C + F)
    row_lower[r_cvx : r_cvx + J] = 1.0
    row_upper[r_cvx : r_cvx + J] = 1.0
    row_upper[r_cost:r_cap] = highspy.kHighsInf
    row_lower[r_cap:] = -highspy.kHighsInf
    row_upper[r_cap:r_sub] = cap
    row_upper[r_sub:] = sub_cap
    floor = 0.0  # sum of f_j x job_lower_bound: the LP's optimum is at least this (e_j >= it)
    dual = JobOptions(cap, sub_cap, r_cap, r_sub)  # each job's options, for Lagrangian bounds
    for jp, job in enumerate(instance.jobs):
        lb = job_lower_bound(instance, jp)
        if not math.isfinite(lb):
            return TransportLP(None)
        f = weight_factor(instance, job)
        floor += f * lb if home_aware else 0.0
        W = job.workers

        on = np.array([instance.server_pos[s] for s in (start or {}).get(job.id, {})], dtype=np.int64)
        a_c = idx.job_a(jp)[rep]
        m_c = class_mean.copy()
        for sp in special_pos:
            m_c[cls[sp]] = idx.mean_slowdown(jp, sp)
        usable = np.isfinite(a_c) & (cap > 0)
        E = np.where(usable, a_c * m_c, np.inf)
        row_lower[r_cost + jp] = ps_floor_of(instance, jp)
        one = np.ones(1)
        if home_aware:
            # an artificial option, dearer than the job's real ones, so that the first
            # restricted LPs are feasible (an LP with more options has no higher optimum: its
            # value stays a bound; made dearer while the optimum uses it)
            worst = float(E[usable].max(initial=0.0)) + (comm_ms(job, narrowest, W, terms) if W > 1 else 0.0)
            artificial.append(len(blocks))
            add(one * f * (10.0 * worst + lb + 1.0), one * 0.0, np.array([r_cvx + jp]), one)
        add(
            one * f,
            one * (lb if home_aware else 0.0),
            np.array([r_cost + jp]),
            one,
        )  # e_j
        if not home_aware:
            cm = comm_lower_bound(instance, jp) - row_lower[r_cost + jp]
            tier = np.array([r_cvx + jp, r_link + jp, r_cost + jp])
            add(np.zeros(1), np.zeros(1), tier, np.array([1.0, -float(W), -cm]))
            xs = np.flatnonzero(usable)
            rows = np.stack([np.full(len(xs), r_link + jp), np.full(len(xs), r_cost + jp), r_cap + xs], axis=1)
            add(
                np.zeros(len(xs)),
                np.zeros(len(xs)),
                rows,
                np.stack([np.ones(len(xs)), -E[xs] / W, np.ones(len(xs))], axis=1),
            )
            continue
        if W == 1:  # any server with a free GPU holds it, at no all-reduce: by class
            xs = np.flatnonzero(usable)
            rows = np.stack(
                [
                    np.full(len(xs), r_cvx + jp),
                    np.full(len(xs), r_cost + jp),
                    r_cap + xs,
                ],
                axis=1,
            )
            vals = np.stack([np.ones(len(xs)), -E[xs], np.ones(len(xs))], axis=1)
            lazy.append((rows, vals, E[xs], 1.0))  # their sum is 1 (convexity)
            seeds.append(np.flatnonzero(np.isin(xs, cls[on])) if len(on) == 1 else _NONE[1])
            dual.add(f, lb, row_lower[r_cost + jp], W, (E[xs], xs, np.full(len(xs), -1)))
            continue
        cs = np.flatnonzero(usable[sub_cls] & (sub_free >= W))  # one server of subclass f
        if len(cs):
            cost = E[sub_cls[cs]] + comm_ms_each(job, sub_intra[cs], terms)
            rows = np.stack(
                [
                    np.full(len(cs), r_cvx + jp),
                    np.full(len(cs), r_cost + jp),
                    r_cap + sub_cls[cs],
                    r_sub + cs,
                ],
                axis=1,
            )
            vals = np.stack([np.ones(len(cs)), -cost, np.full(len(cs), float(W)), np.full(len(cs), float(W))], axis=1)
            lazy.append((rows, vals, cost, 1.0))  # their sum is at most 1 (convexity)
            seeds.append(np.flatnonzero(cs == sub[on[0]]) if len(on) == 1 else _NONE[1])
        one_server = (cost, sub_cls[cs], cs) if len(cs) else None
        if W < 2:
            dual.add(f, lb, row_lower[r_cost + jp], W, one_server)
            continue
        tiers = sorted({b for b, r in multi if r >= W})
        k = max(2, -(-W // max(1, int(class_most[usable].max(initial=1)))))
        if int((np.isfinite(idx.job_a(jp)) & (free > 0)).sum()) < k:
            dual.add(f, lb, row_lower[r_cost + jp], W, one_server)
            continue  # fewer than k usable servers: no placement on two or more
        for b in tiers:  # k or more servers whose smallest domain has bandwidth b
            cm = comm_floor_ms(job, b, terms, k)
            add(
                np.zeros(1),
                np.zeros(1),
                np.array([r_cvx + jp, r_link + jp, r_cost + jp]),
                np.array([1.0, -float(W), -cm]),
            )
        if tiers:
            # the tier workers' cost: on two or more servers a server holds at most g = min(most
            # free GPUs of its class, W - 1) workers, so x_c workers in class c use at least
            # x_c / g of its servers; E[max] >= h(x / g) = int 1 - prod_c F_c^(x_c / g_c),
            # concave in x, hence >= its interpolation sum_c (x_c / W) h(W / g_c at class c)
            # over the simplex of the W workers (the average E_c where unknown: a scenario
            # table, singled out servers)
            xs = np.flatnonzero(usable)
            V = E[xs]
            if envelopes is not None:
                if W not in tier_means:
                    tier_means[W] = iid_max_means(envelopes, W / np.clip(np.minimum(class_most, W - 1), 1, None))
                V = np.where(np.isin(xs, special_cls), V, a_c[xs] * tier_means[W][xs])
            rows = np.stack([np.full(len(xs), r_link + jp), np.full(len(xs), r_cost + jp), r_cap + xs], axis=1)
            vals = np.stack([np.ones(len(xs)), -V / W, np.ones(len(xs))], axis=1)
            lazy.append((rows, vals, V, float(W)))  # their sum is at most W (worker link)
            seeds.append(np.flatnonzero(np.isin(xs, cls[on])) if len(on) >= 2 else _NONE[1])
            # a tier's vertices: all W workers in one class, at the cheapest tier's all-reduce
            spread = (min(comm_floor_ms(job, b, terms, k) for b in tiers) + V, xs, np.full(len(xs), -1))
        else:
            spread = None
        dual.add(f, lb, row_lower[r_cost + jp], W, one_server, spread)
    if not home_aware:  # the plain LP: every column at once, as before
        blocks += [(np.zeros(len(r)), np.zeros(len(r)), r, v) for r, v, _, _ in lazy]
        lazy = []
    bound, y, solved = _solve_with_pricing(
        highspy,
        blocks,
        lazy,
        row_lower,
        row_upper,
        time_limit_s,
        artificial,
        lagrangian=dual.bound if home_aware else None,
        seeds=seeds if start is not None else None,
    )
    # cut short, the Lagrangian bound can be far below the floor every column respects
    bound = None if bound is None else max(bound * (1 - TRANSPORT_LP_RTOL), floor)
    if y is None:
        return TransportLP(bound)
    gpu = np.maximum(0.0, -y[r_cap + cls])  # a <= row's dual is <= 0 when minimising
    return TransportLP(bound, gpu, gpu + np.maximum(0.0, -y[r_sub + sub]), solved and bound is not None)


Block = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Lazy = tuple[np.ndarray, np.ndarray, np.ndarray, float]
Vertices = tuple[np.ndarray, np.ndarray, np.ndarray]
_NONE: Vertices = (np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
GOLDEN_STEPS = 30
"""Golden-section steps of each job's Lagrangian dual (:meth:`JobOptions.bound`)."""


class JobOptions:
    """Every job's options in the LP as its vertices: on one server of a subclass, or all
    its workers in one class at its cheapest tier (its own rows allow no other vertex),
    each with its expected time and the GPUs it uses, for the Lagrangian bound of any
    capacity prices (:meth:`bound`)."""

    def __init__(self, cap: np.ndarray, sub_cap: np.ndarray, r_cap: int, r_sub: int) -> None:
        self.cap, self.sub_cap, self.r_cap, self.r_sub = cap, sub_cap, r_cap, r_sub
        self.f: list[float] = []
        self.lb: list[float] = []
        self.psf: list[float] = []
        self.w: list[int] = []
        self.cost: list[np.ndarray] = []
        self.cls: list[np.ndarray] = []
        self.sub: list[np.ndarray] = []

    def add(self, f: float, lb: float, psf: float, w: int, *parts: Vertices | None) -> None:
        """A job's weight factor, simple bound, push/pull floor, workers and vertices: per
        part given, their expected times, classes and subclasses (-1: no subclass row)."""
        given = [q for q in parts if q is not None]
        cost, cls, sub = (np.concatenate(z) for z in zip(*given)) if given else _NONE
        self.f.append(f)
        self.lb.append(lb)
        self.psf.append(psf)
        self.w.append(w)
        self.cost.append(np.asarray(cost, dtype=float))
        self.cls.append(np.asarray(cls, dtype=np.int64))
        self.sub.append(np.asarray(sub, dtype=np.int64))

    def bound(self, y: np.ndarray) -> float | None:
        """The Lagrangian bound of the LP with its capacity rows priced at ``lam = max(0,
        -y)`` (``y``: the LP's row duals; any ``lam >= 0`` gives a valid bound, the LP's
        optimal duals the LP optimum): ``sum_j min over job j's polytope of (f_j max(lb_j,
        floor_j + time) + its GPUs' prices) - lam . capacities``.  A job's minimum over the
        convex hull of its vertices is ``max over w in [0, 1] of (1 - w) f lb + min_k (w f
        (floor + time_k) + price_k)`` (minimax), concave in ``w``: golden-section search,
        where every ``w`` gives a valid value.  ``None`` when a job has no option."""
        if not self.f:
            return None
        lam = np.maximum(0.0, -y[self.r_cap : self.r_cap + len(self.cap)])
        mu = np.maximum(0.0, -y[self.r_sub : self.r_sub + len(self.sub_cap)])
        sizes = np.array([len(c) for c in self.cost])
        if (sizes == 0).any():
            return None
        job = np.repeat(np.arange(len(sizes)), sizes)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        sub = np.concatenate(self.sub)
        price = np.asarray(self.w, dtype=float)[job] * (
            lam[np.concatenate(self.cls)] + np.where(sub >= 0, mu[np.maximum(sub, 0)], 0.0)
        )
        f, lb = np.asarray(self.f), np.asarray(self.lb)
        slope = f[job] * (np.asarray(self.psf)[job] + np.concatenate(self.cost))

        def phi(w: np.ndarray) -> np.ndarray:
            return np.minimum.reduceat(w[job] * slope + price, starts) + (1.0 - w) * f * lb

        lo, hi = np.zeros(len(f)), np.ones(len(f))
        g = (math.sqrt(5.0) - 1.0) / 2.0
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        pa, pb = phi(a), phi(b)
        best = np.maximum(np.maximum(phi(lo), phi(hi)), np.maximum(pa, pb))
        for _ in range(GOLDEN_STEPS):
            left = pa >= pb  # the maximum is in [lo, b]: b becomes a; else in [a, hi]: a becomes b
            lo, hi = np.where(left, lo, a), np.where(left, b, hi)
            a, b, pa, pb = np.where(left, hi - g * (hi - lo), b), np.where(left, a, lo + g * (hi - lo)), pa, pb
            new = phi(np.where(left, a, b))
            pa, pb = np.where(left, new, pb), np.where(left, pa, new)
            best = np.maximum(best, new)
        return float(best.sum() - lam @ self.cap - mu @ self.sub_cap)


def _solve_with_pricing(
    highspy: Any,
    blocks: list[Block],
    lazy: list[Lazy],
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    time_limit_s: float,
    artificial: list[int] | None = None,
    rounds: int | None = None,
    lagrangian: Callable[[np.ndarray], float | None] | None = None,
    seeds: list[np.ndarray] | None = None,
) -> tuple[float | None, np.ndarray | None, bool]:
    """The LP's optimum by column generation over the per-class columns (``lazy``: per job,
    its columns' rows, values, expected times and the most their sum can be; their cost is
    0).  The first LP (interior point) holds each job's :data:`PRICING_START` classes of least
    expected time and as many spread over the rest; after each solve, a job's columns of
    negative reduced cost (``-y . column`` with the row duals ``y``) join, the
    :data:`PRICING_ADD` most negative at a time, and the simplex goes on from the last basis,
    until none is left: then the restricted optimum is the whole LP's.  If time runs out first, the Lagrangian bound of the last duals, ``z +
    sum over jobs of (their most) x min(0, least reduced cost)``, valid for the whole LP, is
    returned (the best of the rounds); also after ``rounds`` solves, if given (for tests).
    With the value, the row duals of the last restricted optimum (``None``: none) and whether
    the LP was solved to optimality.

    The blocks at positions ``artificial`` are one-column options without capacity use
    that keep the first LPs feasible; while the optimum uses one, their costs are raised
    :data:`ARTIFICIAL_RAISE`-fold (at most :data:`ARTIFICIAL_ROUNDS` times) and the pricing
    goes on.

    ``lagrangian``, when given, maps the row duals of each round to a bound valid for the
    whole LP (:meth:`JobOptions.bound`); the best of the rounds is kept.  ``seeds``, when
    given: per ``lazy`` entry, columns that join the first LP (a known placement's), and the
    simplex then always goes on from the last basis."""
    art = sorted(artificial or [])
    starts = np.cumsum([0] + [len(bl[0]) for bl in blocks])
    art_cols = starts[art].astype(np.int32)
    raises = 0
    deadline = time.monotonic() + max(0.1, time_limit_s)
    masks: list[np.ndarray] = []
    for _, _, key, _ in lazy:
        m = np.zeros(len(key), dtype=bool)
        order = np.argsort(key, kind="stable")
        m[order[:PRICING_START]] = True  # the cheapest, and as many spread over the rest
        m[order[np.linspace(0, len(key) - 1, PRICING_START).astype(np.int64)]] = True
        if seeds is not None:
            m[seeds[len(masks)]] = True
        masks.append(m)

    def restricted() -> list[Block]:  # the fixed columns and the priced-in ones
        return blocks + [
            (np.zeros(int(m.sum())), np.zeros(int(m.sum())), r[m], v[m]) for (r, v, _, _), m in zip(lazy, masks)
        ]

    h = _solve_lp(highspy, restricted(), row_lower, row_upper, deadline - time.monotonic())
    best: float | None = None
    y: np.ndarray | None = None
    retries = 0
    while h is not None:
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            left = deadline - time.monotonic()
            if retries >= len(RETRY_SOLVERS) or left <= 0 or h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
                break
            # a run that ended otherwise (a warm start stalling on numerics): from scratch
            h = _solve_lp(highspy, restricted(), row_lower, row_upper, left, RETRY_SOLVERS[retries])
            retries += 1
            continue
        z = float(h.getInfo().objective_function_value)
        y = np.asarray(h.getSolution().row_dual)
        slack = 0.0
        new: list[tuple[np.ndarray, np.ndarray]] = []
        for k, (r, v, _, most) in enumerate(lazy):
            miss = np.flatnonzero(~masks[k])
            if not len(miss):
                continue
            rc = -(y[r[miss]] * v[miss]).sum(axis=1)
            neg = rc < -PRICING_RTOL * (1.0 + np.abs(v[miss]).max(axis=1))
            if neg.any():
                slack += most * float(rc.min())
                pick = miss[neg][np.argsort(rc[neg], kind="stable")[:PRICING_ADD]]
                masks[k][pick] = True
                new.append((r[pick], v[pick]))
        if not new:
            used = np.asarray(h.getSolution().col_value)[art_cols] > 1e-9 if len(art_cols) else np.zeros(0, bool)
            if not used.any():
                return z, y, True
            if raises >= ARTIFICIAL_ROUNDS:  # the LP without them is likely infeasible
                return None, None, False
            raises += 1
            for k in art:
                blocks[k][0][:] *= ARTIFICIAL_RAISE  # also for a later restart from scratch
            h.changeColsCost(len(art_cols), art_cols, np.array([blocks[k][0][0] for k in art], dtype=float))
            h.setOptionValue("solver", "simplex")
            _limit(h, deadline - time.monotonic())
            with native_stdout_silenced():
                interruptible_run(h)
            continue
        best = max(best if best is not None else -math.inf, z + slack)
        whole = lagrangian(y) if lagrangian is not None else None
        if whole is not None:
            best = max(best, whole)
        left = deadline - time.monotonic()
        if left <= 0 or (rounds is not None and (rounds := rounds - 1) <= 0):
            return best, y, False
        lengths = np.concatenate([np.full(r.shape[0], r.shape[1]) for r, _ in new])
        n = len(lengths)
        if seeds is None and n > PRICING_RESTART * h.getNumCol():
            # many new columns (the first rounds): interior point again, from scratch
            h = _solve_lp(highspy, restricted(), row_lower, row_upper, left)
            continue
        h.addCols(
            n,
            np.zeros(n),
            np.zeros(n),
            np.full(n, highspy.kHighsInf),
            int(lengths.sum()),
            np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int32),
            np.concatenate([r.ravel() for r, _ in new]).astype(np.int32),
            np.concatenate([v.ravel() for _, v in new]).astype(float),
        )
        h.setOptionValue("solver", "simplex")  # on from the last basis
        _limit(h, left)
        with native_stdout_silenced():
            interruptible_run(h)
    return best, y, False


def _limit(h: Any, seconds: float) -> None:
    """Let ``h``'s next run take at most ``seconds``: HiGHS compares ``time_limit`` with the
    run time its object has accumulated over all its runs, not with the next run's."""
    h.setOptionValue("time_limit", float(h.getRunTime() + max(0.0, seconds)))


def _solve_lp(
    highspy: Any,
    blocks: list[Block],
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    time_limit_s: float,
    solver: str = "ipm",
) -> Any | None:
    """HiGHS (``solver``, interior point by default) on the columns ``blocks`` (cost, lower
    bound, rows, values per column); the ``Highs`` object after the run (its model status says how it ended), or
    ``None`` without time."""
    if time_limit_s <= 0:
        return None
    cost_all = np.concatenate([bl[0] for bl in blocks])
    n = len(cost_all)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(row_lower)
    lp.col_cost_ = cost_all
    lp.col_lower_ = np.concatenate([bl[1] for bl in blocks])
    lp.col_upper_ = np.full(n, highspy.kHighsInf)
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lengths = np.concatenate([np.full(bl[2].shape[0], bl[2].shape[1]) for bl in blocks])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    lp.a_matrix_.index_ = np.concatenate([bl[2].ravel() for bl in blocks]).astype(np.int32)
    lp.a_matrix_.value_ = np.concatenate([bl[3].ravel() for bl in blocks]).astype(float)
    with native_stdout_silenced():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", solver)  # ipm: 3-4x faster than simplex on these LPs
    h.setOptionValue("time_limit", float(max(0.1, time_limit_s)))
    with native_stdout_silenced():
        h.passModel(lp)
        interruptible_run(h)
    return h
