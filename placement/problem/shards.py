"""Parameter-server jobs: the push/pull phase of a placement, and where shards go.

A parameter-server job (``architecture: "ps"``) has ``ps_shards`` P shards placed on servers
(``z[m]``), besides its workers (``x[n]``).  Its iteration is the compute phase, then the
push/pull phase (DESIGN.md, "Parameter-server jobs")::

    c[m] = 8 * 2 * z[m] (G/P) ((W - x[m]) / B + x[m] / intra[m])      (rules.ps_comm_ms)
    E[T] = E[max_n a[n] S[n]] + E[max_m c[m] S[m]]

with B the bottleneck bandwidth of the workers' and shards' servers together.  Both expected
maxima come from the evaluator's kernel (:meth:`EvalIndex.expected_max`, the second with the
``c`` as coefficients); the straggler probability is exact: the iteration is ideal iff every
server's draw keeps both of its phases at their ideal maxima.

:func:`place_shards` is the one shard rule of the heuristics: given a job's workers, shards
go one at a time where they lower the push/pull phase's expected time most, among the
workers' servers and the other servers of their bandwidth domain (no narrower bandwidth),
within CPU and memory and ``max_servers``.  :func:`complete_shards` applies it to every
placed parameter-server job a method left without shards.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from placement.model.records import Assignment, Instance, Job
from placement.problem.arrays import arrays_of
from placement.problem.congestion import congestion_of
from placement.problem.rules import ps_comm_ms
from placement.problem.topology import cluster_of

__all__ = [
    "shard_room",
    "ps_coefs",
    "ps_phase",
    "ps_straggler",
    "place_shards",
    "complete_shards",
    "MAX_SHARD_CANDIDATES",
]

MAX_SHARD_CANDIDATES = 16
"""Servers outside a job's own that :func:`place_shards` considers (the fastest expected)."""


def _bandwidth(instance: Instance, x: Mapping[int, int], z: Mapping[int, int]) -> float:
    ids = [instance.servers[sp].id for sp in sorted(set(x) | set(z))]
    return cluster_of(instance).bandwidth(ids)


def ps_coefs(
    instance: Instance, job: Job, x: Mapping[int, int], z: Mapping[int, int], cong: float = 1.0
) -> tuple[list[int], list[float], float]:
    """``(shard servers, c[m] on each, B)`` of a parameter-server job (server positions), its
    traffic between servers ``cong`` times slower."""
    bw = _bandwidth(instance, x, z)
    sps = sorted(sp for sp, k in z.items() if k > 0)
    intra = [instance.servers[sp].intra_bandwidth_gbps for sp in sps]
    return sps, [ps_comm_ms(job, z[sp], x.get(sp, 0), bw, i, cong) for sp, i in zip(sps, intra)], bw


def ps_phase(
    instance: Instance, items: Sequence[tuple[int, Mapping[int, int], Mapping[int, int]]], cong: float | None = None
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """For each ``(job position, x, z)``: the push/pull phase's ``E[max_m c_m S_m]``, its
    ideal ``max_m c_m``, and ``B`` (one batched kernel call), at congestion ``cong``; ``None``:
    the job's own (the largest ``L`` of the domains its workers' and shards' servers cross),
    exact by conditioning on its value (it is independent of the servers' draws)."""
    if cong is None:
        e, ideal, bws = ps_phase(instance, items, 1.0)
        for i, (jp, x, z) in enumerate(items):
            law = _law(instance, x, z)
            if law is not None:
                e[i] = sum(lp * float(ps_phase(instance, [(jp, x, z)], float(lv))[0][0]) for lv, lp in zip(*law))
        return e, ideal, bws
    groups, coefs, bws = [], [], []
    for jp, x, z in items:
        sps, c, bw = ps_coefs(instance, instance.jobs[jp], x, z, cong)
        groups.append((jp, sps))
        coefs.append(c)
        bws.append(bw)
    if not groups:
        return np.zeros(0), np.zeros(0), []
    e, ideal, _ = arrays_of(instance).expected_max(groups, coefs)
    return e, ideal, bws


def _law(instance: Instance, x: Mapping[int, int], z: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray] | None:
    """The law of the largest congestion a job on ``x`` with shards ``z`` crosses (``None``: 1)."""
    return congestion_of(instance).law_over([instance.servers[sp].id for sp in sorted(set(x) | set(z))])


def ps_straggler(
    instance: Instance,
    jp: int,
    x: Mapping[int, int],
    z: Mapping[int, int],
    ideal_compute: float,
    ideal_comm: float,
    factors: Mapping[tuple[int, int], float] | None = None,
    cong: float | None = None,
) -> float:
    """``P(T_j > T°_j)``: 1 - P(every server of the job keeps both its phases at their ideal
    maxima), one draw per server for both phases (``factors``, on an instance with per-GPU
    factors: the largest factor of the job's GPUs on a server, by ``(job, server)`` position,
    absent 1), the push/pull phase at congestion ``cong`` against the ideals given (``None``:
    the job's own congestion, weighed over its values)."""
    if cong is None:
        law = _law(instance, x, z)
        if law is None:
            return ps_straggler(instance, jp, x, z, ideal_compute, ideal_comm, factors, 1.0)
        args = (ideal_compute, ideal_comm, factors)
        return float(sum(lp * ps_straggler(instance, jp, x, z, *args, float(lv)) for lv, lp in zip(*law)))
    idx = arrays_of(instance)
    job = instance.jobs[jp]
    sps, c, _ = ps_coefs(instance, job, x, z, cong)
    cm = dict(zip(sps, c))
    keep: float | np.ndarray = 1.0
    for sp in sorted(set(x) | set(z)):
        limit = math.inf
        if x.get(sp, 0) > 0:
            a = idx.a(jp, sp) if factors is None else idx.base_a(jp, sp) * factors.get((jp, sp), 1.0)
            limit = min(limit, ideal_compute / a)
        if cm.get(sp, 0.0) > 0:
            limit = min(limit, ideal_comm / cm[sp])
        keep = keep * idx.cdf(jp, sp, limit)
    if isinstance(keep, np.ndarray):
        assert idx.scenario_probs is not None
        p_keep = float(keep.astype(float) @ idx.scenario_probs)
    else:
        p_keep = float(keep)
    return min(1.0, max(0.0, 1.0 - p_keep))


def shard_room(job: Job, sp: int, cpus_left: np.ndarray, mem_left: np.ndarray) -> float:
    """How many shards of ``job`` fit in the CPU and memory left on server ``sp``."""
    room = math.inf
    for left, per in ((cpus_left, job.ps_cpus), (mem_left, job.ps_memory_gb)):
        if per and math.isfinite(left[sp]):  # a server stating no capacity takes any number
            room = min(room, math.floor(left[sp] / per + 1e-9))
    return room


def place_shards(
    instance: Instance,
    jp: int,
    x: Mapping[int, int],
    cpus_left: np.ndarray | None = None,
    mem_left: np.ndarray | None = None,
) -> dict[int, int] | None:
    """Shards of parameter-server job ``jp`` for its workers ``x`` (server positions), one at
    a time where the push/pull phase's expected time is lowest; ``None`` when no allowed
    server has room (CPU, memory, ``max_servers``)."""
    job = instance.jobs[jp]
    n = len(instance.servers)
    cpus = np.full(n, math.inf) if cpus_left is None else cpus_left
    mem = np.full(n, math.inf) if mem_left is None else mem_left
    idx = arrays_of(instance)
    cluster = cluster_of(instance)
    allowed = np.ones(n, dtype=bool)  # shards take no GPU: only allowed_servers restricts them
    if job.allowed_servers is not None:
        allowed[:] = False
        allowed[[instance.server_pos[s] for s in job.allowed_servers]] = True
    own = sorted(sp for sp, k in x.items() if k > 0)
    ids = [instance.servers[sp].id for sp in own]
    dom = cluster.domain_of(ids) if len(ids) > 1 else None
    if len(ids) > 1 and dom is None:
        return None  # workers that cannot reach each other: no placement to give shards to
    pool = [instance.server_pos[s] for s in dom.servers] if dom is not None else list(own)
    if dom is None and cluster.chain(ids[0]):  # one server: its innermost domain's others too
        pool = [instance.server_pos[s] for s in cluster.domains[cluster.chain(ids[0])[0]].servers]

    def usable(sp: int) -> bool:
        return bool(allowed[sp]) and shard_room(job, sp, cpus, mem) >= 1

    others = sorted((sp for sp in pool if sp not in x and usable(sp)), key=lambda sp: float(idx.server_mean[sp]))
    if not others and not any(usable(sp) for sp in own):
        # nowhere in the workers' domain: any server they reach (a narrower bandwidth)
        comp = cluster.component[own[0]]
        others = sorted(
            (sp for sp in range(n) if cluster.component[sp] == comp and sp not in x and usable(sp)),
            key=lambda sp: float(idx.server_mean[sp]),
        )
    cand = [sp for sp in own if allowed[sp]] + others[:MAX_SHARD_CANDIDATES]
    z: dict[int, int] = {}
    room = {sp: shard_room(job, sp, cpus, mem) for sp in cand}
    for _ in range(job.shards):
        best, best_e = None, math.inf
        options = [sp for sp in cand if room[sp] > z.get(sp, 0)]
        if job.max_servers is not None:
            used = set(own) | set(z)
            if len(used) >= job.max_servers:
                options = [sp for sp in options if sp in used]
        trials = [{**z, sp: z.get(sp, 0) + 1} for sp in options]
        if not trials:
            return None
        e, _, _ = ps_phase(instance, [(jp, x, t) for t in trials])
        for sp, ek in zip(options, e):
            if ek < best_e - 1e-12:
                best, best_e = sp, float(ek)
        if best is None:
            return None
        z[best] = z.get(best, 0) + 1
    return z


def complete_shards(instance: Instance, assignment: Assignment, shards: Assignment | None) -> dict[str, dict[str, int]]:
    """``shards`` with every placed parameter-server job that has none given its shards by
    :func:`place_shards`, within the CPU and memory the workers and the given shards leave.
    A job that cannot get them keeps none (the validator then says why)."""
    out = {j: {s: int(k) for s, k in a.items() if k > 0} for j, a in (shards or {}).items()}
    out = {j: a for j, a in out.items() if a}
    todo = [
        j
        for j in instance.jobs
        if j.is_ps and any(k for k in (assignment.get(j.id) or {}).values()) and j.id not in out
    ]
    if not todo:
        return out
    cpus = np.array([math.inf if s.cpus is None else s.cpus for s in instance.servers], dtype=float)
    mem = np.array([math.inf if s.memory_gb is None else s.memory_gb for s in instance.servers], dtype=float)
    # what the workers, then the given shards, take
    for doc, cpu_field, mem_field in (
        (assignment, "cpus_per_worker", "memory_gb_per_worker"),
        (out, "ps_cpus", "ps_memory_gb"),
    ):
        for jid, a in doc.items():
            job = instance.job_by_id.get(jid)
            if job is None:
                continue
            for s, k in a.items():
                sp = instance.server_pos.get(s)
                if sp is not None and isinstance(k, (int, float)):
                    cpus[sp] -= k * (getattr(job, cpu_field) or 0.0)
                    mem[sp] -= k * (getattr(job, mem_field) or 0.0)
    for job in todo:
        jp = instance.job_pos[job.id]
        a = assignment[job.id]
        if not all(s in instance.server_pos and isinstance(k, int) and not isinstance(k, bool) for s, k in a.items()):
            continue  # the validator names what is wrong
        x = {instance.server_pos[s]: int(k) for s, k in a.items() if k > 0}
        if not x:
            continue
        z = place_shards(instance, jp, x, cpus, mem)
        if z is None:
            continue
        for sp, k in z.items():
            cpus[sp] -= k * (job.ps_cpus or 0.0)
            mem[sp] -= k * (job.ps_memory_gb or 0.0)
        out[job.id] = {instance.servers[sp].id: k for sp, k in sorted(z.items())}
    return out
