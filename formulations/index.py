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
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from placement.evaluate import comm_ms, job_weight_factor
from placement.model import Instance, Slowdown

__all__ = ["Home", "JobIndex", "ProblemIndex", "index_instance", "without_slowdowns"]


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
    slowdowns, free capacity and intra-server bandwidth, and no job singles one out."""

    @property
    def size(self) -> int:
        """A rough count of variables, to decide whether an exact solve can finish."""
        total = 0
        for j in self.jobs:
            n = len(j.servers)
            total += 2 * n + len(j.homes)
            if j.scen_time is not None:
                total += j.scen_time.shape[1]
            elif j.q is not None:
                total += int(((j.q > 0) & (j.q < 1)).sum())
        return total


def without_slowdowns(instance: Instance) -> Instance:
    """The same instance with every slowdown set to 1 (for the straggler-oblivious
    ``comm_optimal`` baseline)."""
    servers = tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in instance.servers)
    jobs = tuple(dataclasses.replace(j, slowdown={}) for j in instance.jobs)
    return instance.replace(servers=servers, jobs=jobs, scenarios=None)


def index_instance(instance: Instance) -> ProblemIndex:
    from placement.state import State

    st = State(instance)
    ev = instance.eval_index
    cl = instance.cluster
    probs = None if ev.scenario_probs is None else np.asarray(ev.scenario_probs)
    jobs: list[JobIndex] = []
    for jp, job in enumerate(instance.jobs):
        allowed = st.allowed(jp)
        cap = np.minimum(st.room(jp, allowed), job.workers) if len(allowed) else np.zeros(0, dtype=np.int64)
        keep = cap > 0
        sps, cap = allowed[keep], cap[keep]
        a = np.array([ev.a(jp, int(sp)) for sp in sps])
        local = {int(sp): i for i, sp in enumerate(sps)}
        homes: list[Home] = []
        for i, sp in enumerate(sps):
            if cap[i] >= job.workers:
                bw = instance.servers[int(sp)].intra_bandwidth_gbps
                homes.append(Home(None, (i,), comm_ms(job, bw), bw))
        if job.workers > 1:
            for d, members in enumerate(cl.domain_members):
                mem = tuple(local[int(m)] for m in members if int(m) in local)
                if len(mem) >= 2 and int(cap[list(mem)].sum()) >= job.workers:
                    if job.max_servers is not None and int(np.sort(cap[list(mem)])[::-1][: job.max_servers].sum()) < job.workers:
                        continue
                    bw = cl.domains[d].bandwidth_gbps
                    homes.append(Home(d, mem, comm_ms(job, bw), bw))
        ji = JobIndex(
            jp=jp, job_id=job.id, workers=job.workers, weight=job.weight,
            factor=job_weight_factor(instance, job), servers=sps, cap=cap, a=a, homes=homes,
            time_limit_ms=None if job.deadline_s is None else job.deadline_s * 1000.0 / (job.iterations or 1),
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
                k = np.searchsorted(a[i] * v, t * (1 - 1e-12), side="left")
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
    return ProblemIndex(
        instance=instance,
        jobs=jobs,
        scenario_probs=probs,
        best_effort=instance.admission == "best_effort",
        server_ids=tuple(s.id for s in instance.servers),
        classes=server_classes(instance),
    )


def server_classes(instance: Instance) -> list[list[int]]:
    """Interchangeable servers (see :attr:`ProblemIndex.classes`), in instance order."""
    singled = set()
    for j in instance.jobs:
        singled.update(j.allowed_servers or ())
        singled.update(j.slowdown)
    cl = instance.cluster
    table = instance.scenarios.slowdowns if instance.scenarios is not None else {}
    groups: dict[tuple, list[int]] = {}
    for sp, s in enumerate(instance.servers):
        if s.id in singled or s.free_gpus <= 0:
            continue
        key = (cl.chain(s.id)[:1], s.gpu_type, s.slowdown, s.free_gpus, s.cpus, s.memory_gb,
               s.intra_bandwidth_gbps, tuple(table.get(s.id, ())))
        groups.setdefault(key, []).append(sp)
    return [g for g in groups.values() if len(g) >= 2]
