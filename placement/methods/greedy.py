"""The straggler- and communication-aware greedy construction.

It prices every candidate with the evaluator's exact kernel (``State.costs``), so it trades
the expected slowest-worker time against the all-reduce cost of the candidate's actual
bottleneck bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from placement.methods.baselines import consolidate_state
from placement.model.records import Instance, Job
from placement.model.tolerances import IMPROVE_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.rules import comm_ms, comm_ms_each, weight_factor
from placement.problem.state import State
from placement.problem.topology import cluster_of
from placement.solving.options import Options, Outcome

__all__ = [
    "greedy",
    "quick_greedy",
    "greedy_job",
    "greedy_state",
    "price_guided_greedy",
    "job_order",
    "density_order",
    "cost_density_order",
    "GREEDY_ROUNDS",
]


def job_order(instance: Instance) -> list[int]:
    """Least flexible first: jobs whose allowed servers offer few GPUs per worker needed
    (restricted GPU types or servers) come first, by powers of two of that ratio; within
    a class, largest gangs first (hardest to fit), then heaviest per-iteration cost."""
    idx = arrays_of(instance)
    free = cluster_of(instance).free_gpus

    def flex(jp: int) -> int:
        usable = int(free[np.isfinite(idx.job_a(jp))].sum())
        return int(math.floor(math.log2(max(usable, 1) / instance.jobs[jp].workers))) if usable else -1

    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (
            min(flex(jp), 6),
            -instance.jobs[jp].workers,
            -instance.jobs[jp].weight * instance.jobs[jp].compute_ms,
            jp,
        ),
    )


def density_order(instance: Instance) -> list[int]:
    """Most weight per GPU first, smaller gangs first among equals (best-effort admission:
    the knapsack greedy for the weight placed)."""
    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (-instance.jobs[jp].weight / instance.jobs[jp].workers, instance.jobs[jp].workers, jp),
    )


def cost_density_order(instance: Instance) -> list[int]:
    """Most objective per worker first: ``weight factor x (compute_ms + all-reduce time at
    the widest bandwidth of a domain) / workers``, the weight a worker's time carries in
    the objective when its gang spreads inside a rack; smaller gangs first among equals.
    Workers that weigh most get the fast servers (the rearrangement inequality, for the
    compute part), and gangs whose all-reduce is heavy come before light ones."""
    jobs = instance.jobs
    cl = cluster_of(instance)
    widest = max((d.bandwidth_gbps for d in cl.domains), default=0.0)

    def density(job: Job) -> float:
        comm = comm_ms(job, widest, 2, instance.terms_by_bandwidth) if job.workers > 1 and widest > 0 else 0.0
        return weight_factor(instance, job) * (job.compute_ms + comm) / job.workers

    return sorted(range(len(jobs)), key=lambda jp: (-density(jobs[jp]), jobs[jp].workers, jp))


PRICED_CHUNKS = 1
"""With prices, ``greedy_job`` costs this many chunks of 24 distinct fills (from the domains
of least optimistic cost): on fleet1g-4278 a pass took 3.2 s instead of 15 s, and its
objective was 0.1% lower."""

Prices = tuple[np.ndarray, np.ndarray]
"""Per server: the price of a GPU for a worker, and for a gang of two or more on one server."""


def _smallest(key: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest of ``key``, as ``np.argsort(key, kind="stable")[:k]``
    (ties by position) without sorting all of it."""
    if len(key) <= k:
        return np.argsort(key, kind="stable")
    near = np.flatnonzero(key <= np.partition(key, k - 1)[k - 1])
    return near[np.argsort(key[near], kind="stable")[:k]]


def _fill(members: np.ndarray, rooms: np.ndarray, order: np.ndarray, W: int) -> dict[int, int]:
    need = W
    alloc: dict[int, int] = {}
    for sp, rr in zip(members[order], rooms[order]):
        k = int(min(rr, need))
        alloc[int(sp)] = k
        need -= k
        if need == 0:
            break
    return alloc


def greedy_job(st: State, jp: int, prices: Prices | None = None) -> tuple[dict[int, int] | None, float]:
    """The cheapest candidate allocation of ``jp`` on the current free capacity, and its
    cost (inf: none fits); with ``prices`` (per server, a GPU's price for a worker, and for
    a gang of two or more on one server), the cheapest by cost plus the GPUs' prices, among
    :data:`PRICED_CHUNKS` chunks of fills.

    Candidates: the best single servers; and inside each bandwidth domain able to hold the
    gang, fills in three orders (expected compute time; fewest servers; probability of no
    slowdown).  Domains are visited by increasing optimistic cost (their best server's
    expected compute time plus the all-reduce time at their bandwidth) and skipped once that
    cannot beat the best candidate found, which keeps the work per job near-linear in the
    number of servers.
    """
    inst = st.instance
    job = inst.jobs[jp]
    W = job.workers
    allowed = st.allowed(jp)
    if len(allowed) == 0:
        return None, math.inf
    rooms = st.room(jp, allowed)
    ok = rooms > 0
    cand, crooms = allowed[ok], rooms[ok]
    if crooms.sum() < W:
        return None, math.inf
    score = st.score(jp)
    wf = weight_factor(inst, job)
    per_worker = prices[0] if prices is not None else np.zeros(st.n)
    per_whole = (prices[1] if W > 1 else prices[0]) if prices is not None else np.zeros(st.n)
    best_alloc: dict[int, int] | None = None
    best = math.inf
    single = cand[crooms >= W]
    if len(single):
        c = comm_ms_each(job, st.cluster.intra_bandwidth[single], inst.terms_by_bandwidth) if W > 1 else 0.0
        key = score[single] + c if prices is None else wf * (score[single] + c) + W * per_whole[single]
        top = single[_smallest(key, 3)]
        singles = [{int(sp): W} for sp in top]
        costs = st.alloc_costs(jp, singles) + W * per_whole[top]
        k = int(np.argmin(costs))
        if math.isfinite(costs[k]):
            best_alloc, best = singles[k], float(costs[k])
    if W == 1 or job.max_servers == 1:
        return best_alloc, best
    cl = st.cluster
    if not cl.domains:
        return best_alloc, best
    room_full = np.zeros(st.n, dtype=np.int64)
    room_full[cand] = crooms
    concat, offsets = cl.domain_concat
    dom_room = np.add.reduceat(room_full[concat], offsets)
    dom_maxroom = np.maximum.reduceat(room_full[concat], offsets)
    # a set of k >= 2 servers of D has E[max] >= its largest E[a S] >= D's k-th smallest
    masked = np.where(room_full > 0, score, math.inf)
    # each domain's members by score: one sort of (domain << 32 | the server's rank by score)
    by_score = np.argsort(masked)  # ties in any order: only the sorted values are used
    rank = np.empty(st.n, dtype=np.int64)
    rank[by_score] = np.arange(st.n)
    keys = np.sort((cl.domain_segment.astype(np.int64) << 32) | rank[concat])
    sorted_scores = masked[by_score[keys & 0xFFFFFFFF]]
    lens = np.diff(np.append(offsets, len(concat)))
    k = np.maximum(2, -(-W // np.maximum(dom_maxroom, 1)))
    kth = sorted_scores[offsets + np.minimum(k, lens) - 1]
    # (two or more servers: the all-reduce at least its least over server counts)
    comm = comm_ms_each(job, cl.domain_bandwidth, inst.terms_by_bandwidth, min_servers=2)
    if inst.comm_terms:  # a fill inside D may sit in a narrower domain, whose terms may cost less
        comm = np.full(len(comm), float(comm.min(initial=math.inf)))
    lb = np.where(dom_room >= W, wf * (kth + comm), math.inf)
    order = np.argsort(lb, kind="stable")
    pos = 0
    seen: set[frozenset[tuple[int, int]]] = set()  # fills often repeat (orders, nested domains)
    chunks = 0
    while (
        pos < len(order) and lb[order[pos]] < best * (1 - IMPROVE_RTOL) and (prices is None or chunks < PRICED_CHUNKS)
    ):
        chunks += 1
        # a chunk of domains at a time: one call of the exact kernel, then prune again
        opts: list[dict[int, int]] = []
        while pos < len(order) and len(opts) < 24 and lb[order[pos]] < best * (1 - IMPROVE_RTOL):
            members = cl.domain_members[order[pos]]
            pos += 1
            m = members[room_full[members] > 0]
            r, sc = room_full[m], score[m] if prices is None else wf * score[m] + per_worker[m]
            sv = st.idx.job_survival(jp, m)
            for o in (np.lexsort((-r, sc)), np.lexsort((sc, -r)), np.lexsort((-r, sc, -sv))):
                alloc = _fill(m, r, o, W)
                sig = frozenset(alloc.items())
                if sig not in seen and (job.max_servers is None or len(alloc) <= job.max_servers):
                    seen.add(sig)
                    opts.append(alloc)
        if not opts:
            continue
        costs = st.alloc_costs(jp, opts)
        if prices is not None:
            costs = costs + np.array([sum(per_worker[sp] * w for sp, w in a.items()) for a in opts])
        k = int(np.argmin(costs))
        if costs[k] < best:
            best_alloc, best = opts[k], float(costs[k])
    return best_alloc, best


def greedy_state(instance: Instance, order: Sequence[int] | None = None, prices: Prices | None = None) -> State:
    st = State(instance)
    for jp in order if order is not None else job_order(instance):
        alloc, _ = greedy_job(st, jp, prices)
        if alloc is not None:
            st.take(jp, alloc)
    return st


GREEDY_ROUNDS = 4
"""Squeaky-wheel rounds: jobs left out by one greedy pass go first in the next."""
SECOND_ORDER_ROOM = 8.0
"""``greedy`` builds from its second order only when the time left is at least this many
times what the first took."""


def _rounds(instance: Instance, order: list[int], opts: Options, prices: Prices | None = None) -> tuple[State, int]:
    """A greedy pass in ``order``; with admission ``all``, jobs a pass could not place go
    first in the next, up to ``GREEDY_ROUNDS`` passes.  The best state and the passes made."""
    st = greedy_state(instance, order, prices)
    rounds = 1
    while instance.admission == "all" and not st.complete and rounds < GREEDY_ROUNDS and not opts.budget.expired():
        failed = [jp for jp in order if jp not in st.x]
        order = failed + [jp for jp in order if jp in st.x]
        nxt = greedy_state(instance, order, prices)
        rounds += 1
        if nxt.rank() < st.rank():
            st = nxt
    return st, rounds


def price_guided_greedy(instance: Instance, prices: Prices, opts: Options) -> tuple[State, int]:
    """The greedy in :func:`cost_density_order` (with squeaky-wheel rounds), each candidate
    charged its GPUs' ``prices`` on top of its cost: the transportation LP's duals
    (:class:`~placement.formulations.transport.TransportLP`) tell a single-worker job that a
    GPU of an eight-GPU server is worth more to a gang.  The state and the passes made."""
    return _rounds(instance, cost_density_order(instance), opts, prices)


def quick_greedy(instance: Instance, opts: Options) -> tuple[State, int]:
    """:func:`price_guided_greedy` at zero prices: the plain greedy's first order with each
    job's candidates cut to :data:`PRICED_CHUNKS` chunks of fills (a pass took 0.97 s
    instead of 3.47 s on fleet1g-4278, objective 0.4% higher): ``auto``'s first placement
    on large fleets."""
    free = np.zeros(len(instance.servers))
    return price_guided_greedy(instance, (free, free), opts)


def greedy(instance: Instance, opts: Options) -> Outcome:
    """Straggler- and communication-aware greedy construction, from two job orders, the
    better kept.

    With admission ``all``: :func:`cost_density_order` first (fast servers to the workers
    that weigh most), then :func:`job_order` (least flexible, largest gangs first) when the
    budget leaves room (:data:`SECOND_ORDER_ROOM`); with ``best_effort``, :func:`job_order`
    then :func:`density_order` (weight placed per GPU).  Each order gets squeaky-wheel rounds
    (:func:`_rounds`); if no order places every job, the consolidating baseline's packing is
    the fallback start."""
    if instance.admission == "all":
        orders = [("cost-density order", cost_density_order(instance)), ("flexibility order", job_order(instance))]
    else:
        orders = [("flexibility order", job_order(instance)), ("weight-density order", density_order(instance))]
    st: State | None = None
    path: list[str] = []
    for k, (name, order) in enumerate(orders):
        start = opts.budget.now()
        cand, rounds = _rounds(instance, order, opts)
        label = f"greedy({name}" + (f", {rounds} rounds)" if rounds > 1 else ")")
        if st is None or cand.rank() < st.rank():
            st, path = cand, [label]
        took = opts.budget.now() - start
        if k + 1 < len(orders) and (opts.budget.expired() or opts.budget.left() < SECOND_ORDER_ROOM * took):
            break
    assert st is not None
    if not st.complete:
        st2 = consolidate_state(instance)
        path.append("consolidate-fallback")
        if st2.complete:
            st = st2
        else:
            return Outcome(None, path=path, message="greedy and the consolidating fallback could not place every job")
    return Outcome(st.assignment(), path=path, shards=st.shard_assignment())
