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
:func:`disaggregate` maps back to servers).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from placement.evaluate import comm_ms, job_weight_factor
from placement.model import Instance, Slowdown

__all__ = ["Home", "JobIndex", "ProblemIndex", "index_instance", "prune_thresholds", "disaggregate", "without_slowdowns"]


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


def without_slowdowns(instance: Instance) -> Instance:
    """The same instance with every slowdown set to 1 (for the straggler-oblivious
    ``comm_optimal`` baseline)."""
    servers = tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in instance.servers)
    jobs = tuple(dataclasses.replace(j, slowdown={}) for j in instance.jobs)
    return instance.replace(servers=servers, jobs=jobs, scenarios=None)


def _homes(job, cl, instance: Instance, sps: np.ndarray, cap: np.ndarray, mult: np.ndarray) -> list[Home]:
    """The job's homes over its units ``sps`` (a unit is a server, or a class of ``mult``
    interchangeable servers represented by its first)."""
    local = {int(sp): i for i, sp in enumerate(sps)}
    homes: list[Home] = []
    for i, sp in enumerate(sps):
        if cap[i] >= job.workers:
            bw = instance.servers[int(sp)].intra_bandwidth_gbps
            homes.append(Home(None, (i,), comm_ms(job, bw), bw))
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
            homes.append(Home(d, mem, comm_ms(job, bw), bw))
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
    capacity is pooled), solutions are mapped back to servers by :func:`disaggregate`.
    """
    from placement.state import State

    st = State(instance)
    ev = instance.eval_index
    cl = instance.cluster
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
            ok = score + cheapest <= thresholds[jp] * (1 + 1e-9) + 1e-9
            if not ok.all():
                pruned += int(mult[~ok].sum())
                sps, cap, mult = sps[ok], cap[ok], mult[ok]
                homes = _homes(job, cl, instance, sps, cap, mult)
        a = np.array([ev.a(jp, int(sp)) for sp in sps])
        ji = JobIndex(
            jp=jp, job_id=job.id, workers=job.workers, weight=job.weight,
            factor=job_weight_factor(instance, job), servers=sps, cap=cap, a=a, homes=homes,
            time_limit_ms=None if job.deadline_s is None else job.deadline_s * 1000.0 / (job.iterations or 1),
            mult=mult, max_servers=job.max_servers,
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
    if thresholds is not None:
        notes.append(f"pruned {pruned} of {total} job-server pairs that cannot beat the start")
    if members:
        notes.append(f"{len(members)} classes of interchangeable servers aggregated ({len(hidden) + len(members)} servers)")
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
    from placement.evaluate import job_lower_bound

    lbs = np.array([job_lower_bound(instance, jp) for jp in range(len(instance.jobs))], dtype=float)
    f = np.array([job_weight_factor(instance, j) for j in instance.jobs], dtype=float)
    if not np.isfinite(lbs).all():
        return np.full(len(lbs), math.inf)
    rest = float(f @ lbs) - f * lbs
    return (cutoff - rest) / np.where(f > 0, f, 1.0) + np.where(f > 0, 0.0, math.inf)


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


def disaggregate(instance: Instance, index: ProblemIndex, counts: dict[tuple[int, int], tuple[int, int]],
                 plain: dict[tuple[int, int], int]) -> tuple[dict[str, dict[str, int]] | None, list[int]]:
    """Map an aggregated model's solution back to servers.

    ``counts[(job, unit)] = (workers, servers used)`` for every aggregated unit, ``plain``
    the workers on ordinary servers.  Each class is packed on its own: jobs with the
    biggest per-server share first, each onto the servers with the most room for it, one
    worker on each then the rest where room is largest; a class where that fails is packed
    exactly by CP-SAT.  Returns the assignment (``None`` if some class cannot be packed)
    and the classes that needed CP-SAT or failed."""
    from placement.state import State

    st = State(instance)
    out: dict[str, dict[str, int]] = {}
    for (jp, sp), k in plain.items():
        if k > 0:
            out.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
    hard: list[int] = []
    by_unit: dict[int, list[tuple[int, int, int]]] = {}
    for (jp, rep), (w, u) in counts.items():
        if w > 0:
            by_unit.setdefault(rep, []).append((jp, w, u))
    failed = False
    for rep, items in by_unit.items():
        servers = list(index.units[rep])
        packed = _pack_greedy(st, servers, items)
        if packed is None:
            hard.append(rep)
            packed = _pack_exact(instance, servers, items)
        if packed is None:
            failed = True
            continue
        for jp, alloc in packed.items():
            for sp, k in alloc.items():
                out.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
    return (None if failed else out), hard


def _pack_greedy(st, servers: list[int], items: list[tuple[int, int, int]]) -> dict[int, dict[int, int]] | None:
    """Greedy packing of ``(job, workers, servers used)`` onto the class's ``servers``,
    taking capacity from the shared state ``st`` (classes share no server, so a class that
    fails leaves nothing behind that another class could see)."""
    sps = np.asarray(servers, dtype=np.int64)
    result: dict[int, dict[int, int]] = {}
    for jp, w, u in sorted(items, key=lambda t: (-math.ceil(t[1] / t[2]), -t[1], t[0])):
        if u > w or u > len(servers):
            return None
        room = st.room(jp, sps)
        order = sorted(range(len(servers)), key=lambda i: (-int(room[i]), i))[:u]
        if room[order[-1]] < 1 or int(room[order].sum()) < w:
            return None
        alloc = {servers[i]: 1 for i in order}
        left = w - u
        for i in order:
            extra = min(left, int(room[i]) - 1)
            alloc[servers[i]] += extra
            left -= extra
        st.take(jp, {**st.release(jp), **alloc})  # the job may hold servers of other classes
        result[jp] = alloc
    return result


def _pack_exact(instance: Instance, servers: list[int], items: list[tuple[int, int, int]], limit_s: float = 2.0) -> dict[int, dict[int, int]] | None:
    """Exact packing of one class by CP-SAT (GPUs, and CPUs/memory at a 1e-6 resolution
    rounded against the packing)."""
    from ortools.sat.python import cp_model

    from placement.formulations.cpsat import add_capacity_rows

    m = cp_model.CpModel()
    n: dict[tuple[int, int], object] = {}
    for jp, w, u in items:
        bs = []
        for sp in servers:
            v = m.NewIntVar(0, w, f"n_{jp}_{sp}")
            b = m.NewBoolVar(f"b_{jp}_{sp}")
            m.Add(v >= 1).OnlyEnforceIf(b)
            m.Add(v == 0).OnlyEnforceIf(b.Not())
            n[(jp, sp)] = v
            bs.append(b)
        m.Add(sum(n[(jp, sp)] for sp in servers) == w)
        m.Add(sum(bs) == u)
    for sp in servers:
        add_capacity_rows(m, instance, sp, [(jp, n[(jp, sp)]) for jp, _, _ in items])
    # servers of a class are interchangeable: loads in non-increasing order
    loads = [sum(n[(jp, sp)] for jp, _, _ in items) for sp in servers]
    for a, b in zip(loads, loads[1:]):
        m.Add(a >= b)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = limit_s
    s.parameters.num_workers = 1
    if s.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    out: dict[int, dict[int, int]] = {}
    for (jp, sp), v in n.items():
        k = int(s.Value(v))
        if k:
            out.setdefault(jp, {})[sp] = k
    return out
