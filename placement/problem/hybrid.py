"""Hybrid-parallel jobs: the iteration time of a mapping of groups to stages, and the mapping.

A hybrid job (``architecture: "hybrid"``) has pp x dp groups of ``tp`` workers; group
``(s, r)`` (stage s of replica r) sits on one server, ``m[s][r]``.  Its iteration is the 1F1B
pipeline paced by the slowest stage slot, then each stage's data-parallel all-reduce
(DESIGN.md, "Hybrid-parallel jobs")::

    p_g  = rules.p2p_ms(B(m[s][r], m[s+1][r]))       s < pp - 1, else 0
    q_n  = max of p_g over the groups on server n
    D_s  = rules.stage_sync_ms(B of stage s's servers)
    E[T] = (m + pp - 1) E[max_n a_n S_n + q_n] + max_s D_s

The expected maximum is the evaluator's kernel with shifts ``q`` (one CDF product, or one sum
over scenarios), so E[T], T° and P(T > T°) are exact.

Where the groups go, given how many each server holds, is the mapping's choice:
:func:`best_stages` tries the two canonical orders (a replica's stages together; a stage's
replicas together) over the servers in topology order, fastest and slowest first, then swaps
groups while that lowers E[T].  :func:`rank_order_stages` is Megatron's default order over the
servers as given (the baselines' rule); :func:`complete_stages` gives every placed hybrid job
without a matrix the best one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from placement.model.records import Assignment, Instance, Job, StageMatrix, Stages
from placement.problem.arrays import arrays_of
from placement.problem.congestion import congestion_of
from placement.problem.rules import p2p_ms, stage_sync_ms
from placement.problem.topology import cluster_of

__all__ = [
    "PosMatrix",
    "HybridTerms",
    "stage_terms",
    "hybrid_phase",
    "pipeline_slots",
    "group_counts",
    "canonical_stages",
    "rank_order_stages",
    "best_stages",
    "all_stages",
    "count_stages",
    "EXHAUSTIVE_MAPPINGS",
    "complete_stages",
    "matrix_ids",
    "matrix_pos",
    "MAX_SWAP_PAIRS",
    "MAX_SWAP_ROUNDS",
]

PosMatrix = list[list[int]]
"""A stage matrix by server positions: ``m[s][r]``."""

MAX_SWAP_PAIRS = 2000
"""Group swaps :func:`best_stages` evaluates per round (all pairs when fewer; else a seeded
sample that always holds the pairs touching the most loaded servers)."""

MAX_SWAP_ROUNDS = 12

EXHAUSTIVE_MAPPINGS = 20_000
""":func:`best_stages` evaluates every mapping (one per order of replicas) when there are at
most this many arrangements of the groups: the optimum mapping of a small job, which single
swaps may miss."""


class HybridTerms:
    """The communication terms of one mapping: ``q`` per server (its largest stage-boundary
    time per microbatch), ``D`` per stage, and the servers in order."""

    __slots__ = ("servers", "q", "d")

    def __init__(self, servers: list[int], q: list[float], d: list[float]) -> None:
        self.servers, self.q, self.d = servers, q, d

    @property
    def sync_ms(self) -> float:
        return max(self.d, default=0.0)


def _pair_bw(instance: Instance, a: int, b: int) -> float:
    if a == b:
        return instance.servers[a].intra_bandwidth_gbps
    cache = instance.derived.setdefault("hybrid_pair_bw", {})
    key = (a, b) if a < b else (b, a)
    bw = cache.get(key)
    if bw is None:
        bw = cache[key] = cluster_of(instance).bandwidth([instance.servers[a].id, instance.servers[b].id])
    return float(bw)


def _set_bw(instance: Instance, sps: Sequence[int]) -> float:
    """The bandwidth of a stage's servers (``Cluster.bandwidth``: intra for one server)."""
    return cluster_of(instance).bandwidth([instance.servers[sp].id for sp in sorted(set(sps))])


def stage_parts(
    instance: Instance, job: Job, m: PosMatrix
) -> tuple[list[int], list[float], list[float], list[float], list[bool]]:
    """The terms of job ``job`` mapped as ``m`` split by where they travel: the servers in
    order, per server its largest stage-boundary time within the server and to another server,
    per stage its ``D`` and whether the stage spans servers (its sync crosses the network)."""
    pp = len(m)
    qi: dict[int, float] = {}
    qc: dict[int, float] = {}
    for s in range(pp):
        for r, sp in enumerate(m[s]):
            qi.setdefault(sp, 0.0)
            qc.setdefault(sp, 0.0)
            if s < pp - 1:
                nxt = m[s + 1][r]
                p = p2p_ms(job, _pair_bw(instance, sp, nxt))
                side = qc if nxt != sp else qi
                side[sp] = max(side[sp], p)
    d = [stage_sync_ms(job, _set_bw(instance, row)) for row in m]
    servers = sorted(qi)
    return servers, [qi[x] for x in servers], [qc[x] for x in servers], d, [len(set(row)) > 1 for row in m]


def stage_terms(instance: Instance, job: Job, m: PosMatrix, cong: float = 1.0) -> HybridTerms:
    """``q`` per server and ``D`` per stage of job ``job`` mapped as ``m``; with ``cong`` > 1
    every transfer between two servers takes ``cong`` times longer (the job's congestion)."""
    servers, qi, qc, d, spans = stage_parts(instance, job, m)
    q = [max(a, b * cong) if b > 0 else a for a, b in zip(qi, qc)]
    return HybridTerms(servers, q, [x * cong if span and x > 0 else x for x, span in zip(d, spans)])


def pipeline_slots(job: Job) -> int:
    """The pipeline's slots per iteration: ``m + pp - 1``."""
    return int(job.microbatches) + int(job.pp or 1) - 1


def hybrid_phase(
    instance: Instance,
    items: Sequence[tuple[int, PosMatrix]],
    factors: Mapping[tuple[int, int], float] | None = None,
    cong: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[HybridTerms]]:
    """For each ``(job position, matrix)``: ``E[T]``, ``T°``, ``P(T > T°)`` and the terms
    (one batched kernel call).  ``factors``, on an instance with per-GPU factors: the largest
    factor of a job's GPUs on a server, by ``(job, server)`` position (absent 1): every group of the job on that server
    computes at it (the model's rule: a server's groups run at its slowest GPU).  ``cong``: the
    congestion on every transfer between servers (:func:`stage_terms`); ``None``: the job's own
    (the largest ``L`` of the domains its servers cross), exact by conditioning on its value."""
    if not items:
        z = np.zeros(0)
        return z, z, z, []
    if cong is None:
        e, ideal, strag, terms = hybrid_phase(instance, items, factors, 1.0)
        cg = congestion_of(instance)
        if cg.any:
            for i, (jp, m) in enumerate(items):
                law = cg.law_over([instance.servers[sp].id for sp in sorted({sp for row in m for sp in row})])
                if law is None:
                    continue
                e[i] = strag[i] = 0.0
                for lv, lp in zip(*law):
                    le, li, ls, _ = hybrid_phase(instance, [(jp, m)], factors, float(lv))
                    e[i] += lp * le[0]
                    strag[i] += lp * (1.0 if li[0] > ideal[i] * (1 + 1e-12) else ls[0])
        return e, ideal, strag, terms
    terms = [stage_terms(instance, instance.jobs[jp], m, cong) for jp, m in items]
    groups = [(jp, t.servers) for (jp, _), t in zip(items, terms)]
    idx = arrays_of(instance)
    coefs = None
    if factors is not None:
        coefs = [[idx.base_a(jp, sp) * factors.get((jp, sp), 1.0) for sp in sps] for jp, sps in groups]
    e, ideal, strag = idx.expected_max(groups, coefs, shifts=[t.q for t in terms])
    k = np.array([pipeline_slots(instance.jobs[jp]) for jp, _ in items], dtype=float)
    sync = np.array([t.sync_ms for t in terms])
    with np.errstate(invalid="ignore"):
        return k * e + sync, k * ideal + sync, strag, terms


def group_counts(job: Job, x: Mapping[int, int]) -> dict[int, int]:
    """Groups per server of an allocation ``x`` (workers per server, multiples of tp)."""
    return {sp: int(k) // job.unit for sp, k in x.items() if k > 0}


def _topology_order(instance: Instance, sps: Sequence[int], key: np.ndarray) -> list[int]:
    """Servers grouped by their bandwidth domains (outermost first), then by ``key``."""
    cluster = cluster_of(instance)
    return sorted(sps, key=lambda sp: (tuple(reversed(cluster.chain(instance.servers[sp].id))), float(key[sp]), sp))


def _fill(order: Sequence[int], counts: Mapping[int, int], pp: int, dp: int, replica_major: bool) -> PosMatrix:
    seq = [sp for sp in order for _ in range(counts[sp])]
    m = [[0] * dp for _ in range(pp)]
    for i, sp in enumerate(seq):
        s, r = (i % pp, i // pp) if replica_major else (i // dp, i % dp)
        m[s][r] = sp
    return m


def canonical_stages(instance: Instance, jp: int, x: Mapping[int, int]) -> list[PosMatrix]:
    """The canonical mappings of ``x``: a replica's stages together and a stage's replicas
    together, over the servers in topology order with the fastest (expected) first and with the
    slowest first (a slow server then holds the last stages, which send nothing on)."""
    job = instance.jobs[jp]
    counts = group_counts(job, x)
    pp, dp = int(job.pp or 1), int(job.dp or 1)
    score = arrays_of(instance).job_score(jp)
    out: list[PosMatrix] = []
    for key in (score, -score):
        order = _topology_order(instance, list(counts), key)
        for replica_major in (True, False):
            m = _fill(order, counts, pp, dp, replica_major)
            if m not in out:
                out.append(m)
    return out


def rank_order_stages(job: Job, x: Mapping[int, int]) -> PosMatrix:
    """Megatron's default order (ranks ``t + tp (r + dp s)``) over the servers in the order
    ``x`` gives them, filled server by server: what a scheduler that knows nothing of stages
    gives (a replica's stages apart, a stage's replicas together)."""
    counts = group_counts(job, x)
    return _fill(list(counts), counts, int(job.pp or 1), int(job.dp or 1), replica_major=False)


def count_stages(job: Job, counts: Mapping[int, int]) -> int:
    """Stage matrices with ``counts`` groups per server, replicas told apart (at most
    ``dp!`` times what :func:`all_stages` yields)."""
    n = math.factorial(int(job.pp or 1) * int(job.dp or 1))
    for k in counts.values():
        n //= math.factorial(k)
    return n


def _arrangements(counts: dict[int, int], cells: int) -> Iterator[tuple[int, ...]]:
    if cells == 0:
        yield ()
        return
    for sp in sorted(counts):
        if counts[sp]:
            counts[sp] -= 1
            for tail in _arrangements(counts, cells - 1):
                yield (sp,) + tail
            counts[sp] += 1


def all_stages(job: Job, counts: Mapping[int, int], stop: Callable[[], bool] | None = None) -> Iterator[PosMatrix]:
    """Every stage matrix with ``counts`` groups per server, one per order of its replicas
    (matrices that differ only in the order of their columns have the same iteration time: the
    same stage boundaries, the same servers per stage).  The walk visits every arrangement
    (:func:`count_stages` of them, up to ``dp!`` per matrix); ``stop()``, asked every 2,048,
    ends it early (a time limit)."""
    pp, dp = int(job.pp or 1), int(job.dp or 1)
    seen: set[tuple[tuple[int, ...], ...]] = set()
    for n, seq in enumerate(_arrangements({sp: k for sp, k in counts.items() if k > 0}, pp * dp)):
        if stop is not None and n % 2048 == 2047 and stop():
            return
        m = [list(seq[s * dp : (s + 1) * dp]) for s in range(pp)]
        key = tuple(sorted(tuple(m[s][r] for s in range(pp)) for r in range(dp)))
        if key not in seen:
            seen.add(key)
            yield m


def _swapped(m: PosMatrix, g1: tuple[int, int], g2: tuple[int, int]) -> PosMatrix:
    out = [list(row) for row in m]
    out[g1[0]][g1[1]], out[g2[0]][g2[1]] = m[g2[0]][g2[1]], m[g1[0]][g1[1]]
    return out


def best_stages(instance: Instance, jp: int, x: Mapping[int, int], *, swaps: bool = True) -> tuple[PosMatrix, float]:
    """The best mapping found for hybrid job ``jp`` on allocation ``x`` (server positions to
    workers) and its ``E[T]``: the canonical orders; then (``swaps``) every mapping when there
    are at most :data:`EXHAUSTIVE_MAPPINGS` (the optimum), else best-improving swaps of two
    groups on different servers, batched through the kernel, until none improves."""
    cands = canonical_stages(instance, jp, x)
    job = instance.jobs[jp]
    counts = group_counts(job, x)
    if swaps and count_stages(job, counts) <= EXHAUSTIVE_MAPPINGS:
        cands += list(all_stages(job, counts))
        swaps = False
    e, _, _, _ = hybrid_phase(instance, [(jp, m) for m in cands])
    k = int(np.argmin(e))
    best, best_e = cands[k], float(e[k])
    if not swaps or not math.isfinite(best_e):
        return best, best_e
    pp, dp = len(best), len(best[0])
    cells = [(s, r) for s in range(pp) for r in range(dp)]
    rng = np.random.default_rng(0)
    for _ in range(MAX_SWAP_ROUNDS):
        pairs = [
            (c1, c2) for i, c1 in enumerate(cells) for c2 in cells[i + 1 :] if best[c1[0]][c1[1]] != best[c2[0]][c2[1]]
        ]
        if not pairs:
            break
        if len(pairs) > MAX_SWAP_PAIRS:
            pick = rng.choice(len(pairs), size=MAX_SWAP_PAIRS, replace=False)
            pairs = [pairs[int(i)] for i in sorted(pick)]
        trials = [_swapped(best, c1, c2) for c1, c2 in pairs]
        e, _, _, _ = hybrid_phase(instance, [(jp, m) for m in trials])
        k = int(np.argmin(e))
        if not float(e[k]) < best_e * (1 - 1e-12):
            break
        best, best_e = trials[k], float(e[k])
    return best, best_e


def matrix_ids(instance: Instance, m: PosMatrix) -> StageMatrix:
    return tuple(tuple(instance.servers[sp].id for sp in row) for row in m)


def matrix_pos(instance: Instance, m: StageMatrix) -> PosMatrix:
    return [[instance.server_pos[s] for s in row] for row in m]


def complete_stages(instance: Instance, assignment: Assignment, stages: Stages | None) -> dict[str, StageMatrix]:
    """``stages`` with every placed hybrid job that has none given :func:`best_stages`'s
    mapping of its allocation.  An allocation that is not whole groups on known servers gets
    none (the validator then says why)."""
    out: dict[str, StageMatrix] = {j: tuple(tuple(r) for r in m) for j, m in (stages or {}).items() if m}
    for job in instance.jobs:
        a = assignment.get(job.id) or {}
        if not job.is_hybrid or job.id in out or not any(k for k in a.values()):
            continue
        if not all(
            s in instance.server_pos and isinstance(k, int) and not isinstance(k, bool) and k >= 0 and k % job.unit == 0
            for s, k in a.items()
        ):
            continue
        x = {instance.server_pos[s]: int(k) for s, k in a.items() if k > 0}
        if sum(x.values()) != job.workers:
            continue
        m, _ = best_stages(instance, instance.job_pos[job.id], x)
        out[job.id] = matrix_ids(instance, m)
    return out
