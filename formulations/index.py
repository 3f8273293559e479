"""Shared indexing of an instance for the exact formulations.

Arrays per job over the servers it may use, the job's possible *homes* (one server, or a
bandwidth domain holding two or more of its servers) with their all-reduce times, and
the data of the expected maximum: per scenario the compute times ``a S``, or for
independent distributions the sorted support points ``t_k`` with, per server,
``q = P(a S < t_k)``.  Inverse maps give ids back.

The expected maximum of independent distributions is written as the tail sum
``E[X] = sum_k (t_k - t_{k-1}) P(X >= t_k)`` over the support points (``t_0 = 0``), with
``P(X >= t_k) = 1 - prod_{n used} q_nk``; a server with ``q_nk = 0`` forces the term to 1.
Both formulations are exact: no approximation error.

Two reductions (``index_instance(cutoff=..., aggregate=...)``): job-server pairs that cannot
be part of a placement better than a known one are pruned, and classes of interchangeable
servers can be aggregated into *units* of ``mult`` servers (a relaxation whose solutions
:func:`placement.formulations.packing.disaggregate` maps back to servers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance, Job
from placement.model.tolerances import PRUNE_RTOL, TIE_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.rules import (
    comm_ms,
    deadline_limit_ms,
    fastest_gbps,
    ps_floor_ms,
    singled_out_servers,
    weight_factor,
)
from placement.problem.state import State
from placement.problem.topology import Cluster, cluster_of

__all__ = ["Home", "JobIndex", "ProblemIndex", "index_instance", "prune_thresholds", "server_classes"]


@dataclass(frozen=True)
class Home:
    """Where a job's servers all lie: one server (``domain is None``) or a domain."""

    domain: int | None
    members: tuple[int, ...]
    """Server positions (within the job's own server list) inside this home."""
    comm_ms: float
    bandwidth_gbps: float


@dataclass
class JobIndex:
    jp: int
    job_id: str
    workers: int
    weight: float
    factor: float
    """Objective coefficient on E[T_j] in ms (w_j, or w_j iterations_j / 1000)."""
    servers: np.ndarray
    """Positions (in the instance) of the servers this job may use."""
    cap: np.ndarray
    """Most workers of this job each of those servers can take (GPUs, CPU, memory)."""
    a: np.ndarray
    homes: list[Home]
    time_limit_ms: float | None
    """Deadline as a bound on E[T_j] in ms, or None."""
    # scenarios: compute time of each server in each scenario, and the floor per scenario
    scen_time: np.ndarray | None = None
    scen_floor: np.ndarray | None = None
    # independent: support points, their gaps, and per point the servers with q=0 and 0<q<1
    t: np.ndarray | None = None
    dt: np.ndarray | None = None
    q: np.ndarray | None = None
    """q[k, i] = P(a_i S_i < t_k) for the job's i-th server."""
    upper_ms: float = 0.0
    """An upper bound on E[T_j] over every placement (used for big-M-free bounds)."""
    mult: np.ndarray | None = None
    """Servers behind each entry of ``servers`` (1, or a class's size when aggregated)."""

    def umax(self, i: int) -> int:
        """Most servers of unit ``i`` the job can use."""
        m = 1 if self.mult is None else int(self.mult[i])
        job_cap = self.workers if self.max_servers is None else min(self.workers, self.max_servers)
        return max(1, min(m, job_cap))

    max_servers: int | None = None


@dataclass
class ProblemIndex:
    instance: Instance
    jobs: list[JobIndex]
    scenario_probs: np.ndarray | None
    best_effort: bool
    server_ids: tuple[str, ...]
    notes: list[str] = field(default_factory=list)

    classes: list[list[int]] = field(default_factory=list)
    """Groups (two or more) of interchangeable servers: same innermost domain, GPU type,
    slowdowns, free capacity and intra-server bandwidth, and no job singles one out
    (those not aggregated into units)."""
    units: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Aggregated classes: representative server position -> its servers."""

    @property
    def size(self) -> int:
        """A rough count of variables, to decide whether an exact solve can finish."""
        total = 0
        for j in self.jobs:
            n = len(j.servers)
            bits = np.array([j.umax(i).bit_length() for i in range(n)], dtype=np.int64)
            total += 2 * n + int((bits[bits > 1] + 1).sum()) + len(j.homes)
            if j.scen_time is not None:
                total += j.scen_time.shape[1]
            elif j.q is not None:
                total += int((((j.q > 0) & (j.q < 1)) * bits).sum())
        return total


def _homes(job: Job, cl: Cluster, instance: Instance, sps: np.ndarray, cap: np.ndarray, mult: np.ndarray) -> list[Home]:
    """The job's homes over its units ``sps`` (a unit is a server, or a class of ``mult``
    interchangeable servers represented by its first)."""
    local = {int(sp): i for i, sp in enumerate(sps)}
    homes: list[Home] = []
    # a parameter-server job's push/pull phase is not modelled: its floor is (a valid bound)
    floor = ps_floor_ms(
        job, fastest_gbps(instance), len(instance.servers) if job.max_servers is None else job.max_servers
    )

    def comm(bw: float) -> float:
        return comm_ms(job, bw) + floor

    for i, sp in enumerate(sps):
        if cap[i] >= job.workers:
            bw = instance.servers[int(sp)].intra_bandwidth_gbps
            homes.append(Home(None, (i,), comm(bw), bw))
    if job.workers > 1:
        for d, members in enumerate(cl.domain_members):
            mem = tuple(local[int(m)] for m in members if int(m) in local)
            if not mem or int(mult[list(mem)].sum()) < 2:
                continue
            caps = np.repeat(cap[list(mem)], mult[list(mem)])
            if int(caps.sum()) < job.workers:
                continue
            if job.max_servers is not None and int(np.sort(caps)[::-1][: job.max_servers].sum()) < job.workers:
                continue
            bw = cl.domains[d].bandwidth_gbps
            homes.append(Home(d, mem, comm(bw), bw))
    return homes


def index_instance(instance: Instance, *, cutoff: float | None = None, aggregate: bool = False) -> ProblemIndex:
    """Index ``instance`` for an exact model.

    ``cutoff``: the true objective of a known placement (admission ``all`` only).  A server
    is dropped from a job's candidates when using it at all would make the objective at
    least ``cutoff`` even with every other job at its own lower bound: its ``E[a S]`` plus
    the cheapest all-reduce of a home holding it exceeds the job's slack.  No placement
    better than the known one is lost, so the model's optimum, taken together with the
    known placement, is the true optimum (see :func:`prune_thresholds`).

    ``aggregate``: each class of interchangeable servers (:func:`server_classes`) becomes
    one *unit* of ``mult`` servers (represented by its first server) on which a job chooses
    how many servers and workers it uses; the model is then a relaxation (a class's
    capacity is pooled), solutions are mapped back to servers by
    :func:`placement.formulations.packing.disaggregate`.
    """
    st = State(instance)
    ev = arrays_of(instance)
    cl = cluster_of(instance)
    probs = None if ev.scenario_probs is None else np.asarray(ev.scenario_probs)
    classes = server_classes(instance)
    members: dict[int, tuple[int, ...]] = {}
    hidden: set[int] = set()
    if aggregate:
        for g in classes:
            members[g[0]] = tuple(g)
            hidden.update(g[1:])
    thresholds = prune_thresholds(instance, cutoff) if cutoff is not None and instance.admission == "all" else None
    notes: list[str] = []
    pruned = total = 0
    jobs: list[JobIndex] = []
    for jp, job in enumerate(instance.jobs):
        allowed = st.allowed(jp)
        if hidden:
            allowed = allowed[~np.isin(allowed, list(hidden))]
        cap = np.minimum(st.room(jp, allowed), job.workers) if len(allowed) else np.zeros(0, dtype=np.int64)
        keep = cap > 0
        sps, cap = allowed[keep], cap[keep]
        mult = np.array([len(members.get(int(sp), (0,))) for sp in sps], dtype=np.int64)
        homes = _homes(job, cl, instance, sps, cap, mult)
        if thresholds is not None and len(sps):
            total += int(mult.sum())
            cheapest = np.full(len(sps), math.inf)
            for h in homes:
                for i in h.members:
                    cheapest[i] = min(cheapest[i], h.comm_ms)
            score = ev.job_score(jp)[sps]
            ok = score + cheapest <= thresholds[jp] * (1 + PRUNE_RTOL) + PRUNE_RTOL
            if not ok.all():
                pruned += int(mult[~ok].sum())
                sps, cap, mult = sps[ok], cap[ok], mult[ok]
                homes = _homes(job, cl, instance, sps, cap, mult)
        a = np.array([ev.a(jp, int(sp)) for sp in sps])
        ji = JobIndex(
            jp=jp,
            job_id=job.id,
            workers=job.workers,
            weight=job.weight,
            factor=weight_factor(instance, job),
            servers=sps,
            cap=cap,
            a=a,
            homes=homes,
            time_limit_ms=deadline_limit_ms(job),
            mult=mult,
            max_servers=job.max_servers,
        )
        if len(sps) == 0:
            jobs.append(ji)
            continue
        if probs is not None:
            rows = []
            for sp in sps:
                r = ev.over_row.get((jp, int(sp)))
                rows.append(ev.table[int(sp)] if r is None else r)
            ji.scen_time = a[:, None] * np.asarray(rows)
            ji.scen_floor = ji.scen_time.min(axis=0)
            ji.upper_ms = float(ji.scen_time.max(axis=0) @ probs)
        else:
            dists = [ev.over_dist.get((jp, int(sp))) or ev.dists[int(sp)] for sp in sps]
            t = np.unique(np.concatenate([a[i] * v for i, (v, _) in enumerate(dists)]))
            q = np.empty((len(t), len(sps)))
            for i, (v, p) in enumerate(dists):
                cdf = np.concatenate(([0.0], np.cumsum(p)))
                # P(a S < t) = sum of probs of values with a v < t (relative tie tolerance)
                k = np.searchsorted(a[i] * v, t * (1 - TIE_RTOL), side="left")
                q[:, i] = np.minimum(cdf[k], 1.0)
            q[q > 1 - 1e-15] = 1.0
            ji.t = t
            ji.dt = np.diff(np.concatenate(([0.0], t)))
            ji.q = q
            ji.upper_ms = float(t[-1])
        ji.upper_ms += max((h.comm_ms for h in homes), default=0.0)
        if not math.isfinite(ji.upper_ms):  # pragma: no cover - homes have positive bandwidth
            ji.upper_ms = 1e12
        jobs.append(ji)
    if thresholds is not None:
        notes.append(f"pruned {pruned} of {total} job-server pairs that cannot beat the start")
    if members:
        notes.append(
            f"{len(members)} classes of interchangeable servers aggregated ({len(hidden) + len(members)} servers)"
        )
    return ProblemIndex(
        instance=instance,
        jobs=jobs,
        scenario_probs=probs,
        best_effort=instance.admission == "best_effort",
        server_ids=tuple(s.id for s in instance.servers),
        notes=notes,
        classes=[g for g in classes if g[0] not in members],
        units=members,
    )


def prune_thresholds(instance: Instance, cutoff: float) -> np.ndarray:
    """Per job, the largest ``E[T_j]`` a placement with objective below ``cutoff`` can have:
    ``(cutoff - sum_{k != j} f_k LB_k) / f_j`` with ``LB_k`` the job's own lower bound
    (:func:`placement.evaluate.job_lower_bound`) and ``f`` the objective factors.  Using
    a server ``n`` costs job ``j`` at least ``E[a_jn S_n]`` plus its cheapest all-reduce,
    since the expected maximum is at least each used server's expectation."""
    lbs = np.array([job_lower_bound(instance, jp) for jp in range(len(instance.jobs))], dtype=float)
    f = np.array([weight_factor(instance, j) for j in instance.jobs], dtype=float)
    if not np.isfinite(lbs).all():
        return np.full(len(lbs), math.inf)
    rest = float(f @ lbs) - f * lbs
    return (cutoff - rest) / np.where(f > 0, f, 1.0) + np.where(f > 0, 0.0, math.inf)


def server_classes(instance: Instance) -> list[list[int]]:
    """Interchangeable servers (see :attr:`ProblemIndex.classes`), in instance order."""
    singled = singled_out_servers(instance)
    cl = cluster_of(instance)
    table = instance.scenarios.slowdowns if instance.scenarios is not None else {}
    groups: dict[tuple, list[int]] = {}
    for sp, s in enumerate(instance.servers):
        if s.id in singled or s.free_gpus <= 0:
            continue
        key = (
            cl.chain(s.id)[:1],
            s.gpu_type,
            s.slowdown,
            s.free_gpus,
            s.cpus,
            s.memory_gb,
            s.intra_bandwidth_gbps,
            tuple(table.get(s.id, ())),
        )
        groups.setdefault(key, []).append(sp)
    return [g for g in groups.values() if len(g) >= 2]
