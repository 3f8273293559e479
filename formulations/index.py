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

Parameter-server jobs (:class:`ShardIndex`): the push/pull phase is a second expected
maximum over the servers that may hold shards.  Its cost on server ``m`` depends on the
shards there, the job's workers there and the home's bandwidth, so each server chooses one
*mode* ``(shards, workers there, home)`` of cost ``c`` (``rules.ps_comm_ms``) or none, and
``P(c_m S_m < t) = 1 - sum_c r_mc (1 - F_m(t / c))`` is linear in the one-hot ``r``: the same
tail sum and product chain as the compute phase, exact.  When the modes of all jobs would
make more than :data:`PS_EXACT_TERMS` chain terms, the phase is priced by its floor
(``bounds.ps_floor_of``, a valid bound) and the shards are left to the shard rule.

Two reductions (``index_instance(cutoff=..., aggregate=...)``): job-server pairs that cannot
be part of a placement better than a known one are pruned, and classes of interchangeable
servers can be aggregated into *units* of ``mult`` servers (a relaxation whose solutions
:func:`placement.formulations.packing.disaggregate` maps back to servers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from placement.evaluation.bounds import ps_floor_of, spread_lower_bound
from placement.formulations.congestion import CongIndex, cong_index
from placement.formulations.gpu_levels import (
    GpuEntry,
    GpuLevel,
    by_gpu_class,
    cdf_below,
    chain_level_links,
    gpu_entry,
    scenario_level_times,
)
from placement.formulations.reductions import prune_thresholds, server_classes
from placement.model.records import Instance, Job
from placement.model.tolerances import PRUNE_RTOL
from placement.problem.arrays import EvalIndex, arrays_of
from placement.problem.gpus import factored_servers, gpu_classes
from placement.problem.hybrid import pipeline_slots
from placement.problem.rules import (
    comm_ms,
    deadline_limit_ms,
    ps_comm_ms,
    weight_factor,
)
from placement.problem.shards import shard_room
from placement.problem.state import State
from placement.problem.topology import Cluster, cluster_of

__all__ = [
    "GpuEntry",
    "GpuLevel",
    "Home",
    "JobIndex",
    "ShardIndex",
    "ProblemIndex",
    "index_instance",
    "PS_EXACT_TERMS",
    "by_gpu_class",
    "start_modes",
]

PS_EXACT_TERMS = 20_000
"""Most product-chain terms (thresholds x server modes, summed over parameter-server jobs)
for which the models price the push/pull phase exactly (an estimate made before building)."""


@dataclass(frozen=True)
class Home:
    """Where a job's servers all lie: one server (``domain is None``) or a domain."""

    domain: int | None
    members: tuple[int, ...]
    """Server positions (within the job's own server list) inside this home."""
    comm_ms: float
    """The all-reduce's part that does not depend on the server count: the ring and the level's
    ``alpha`` term (a parameter-server job: its push/pull floor)."""
    bandwidth_gbps: float
    gamma_ms: float = 0.0
    """A domain home's fitted ``gamma``: the all-reduce adds ``gamma 2 (k - 1) / k`` on the
    ``k >= 2`` servers the job uses (the models count them); negative where the fit says a
    spread job communicates less than its ring (at least ``-8 G / B``: never below zero)."""

    outside: tuple[tuple[int, ...], ...] = ()
    """A domain home under fitted terms: for each child domain holding some of the job's servers,
    the home's members outside it.  The all-reduce is then not monotone in the bandwidth, so the
    home must be the smallest domain holding the servers used: a used server outside every
    child (``z_h <= sum of y over each tuple``)."""

    @property
    def comm_floor_ms(self) -> float:
        """The least all-reduce time of the home over every server count."""
        return self.comm_ms + min(0.0, 2.0 * self.gamma_ms)

    def comm_on(self, servers: int) -> float:
        """The home's all-reduce time on ``servers`` servers."""
        return self.comm_ms + (self.gamma_ms * 2.0 * (servers - 1) / servers if servers > 1 else 0.0)


@dataclass
class ShardIndex:
    """A parameter-server job's push/pull phase, exactly (see the module's docstring)."""

    total: int
    """Shards to place (``ps_shards``)."""
    servers: np.ndarray
    """Positions (in the instance) of the servers that may hold its shards."""
    local: np.ndarray
    """Position of each of them in the job's worker servers (``JobIndex.servers``), or -1."""
    zcap: np.ndarray
    """Most shards each can hold (``ps_shards``, CPU, memory)."""
    modes: list[list[tuple[int, int, int, int]]]
    """Per server: ``(shards, workers there, home, value index)``."""
    values: list[np.ndarray]
    """Per server: its distinct push/pull times ``c`` in ms at S = 1."""
    t: np.ndarray | None = None
    dt: np.ndarray | None = None
    q: list[np.ndarray] | None = None
    """Independent slowdowns: ``q[m][k, v] = P(values[m][v] S_m < t_k)``."""
    scen: np.ndarray | None = None
    """Scenario tables: ``scen[m, s]`` = the slowdown of server ``m`` in scenario ``s``."""
    terms: int = 0
    """Product-chain terms (or scenario rows) its push/pull phase takes in a model."""


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

    def gamma_groups(self) -> dict[float, list[int]]:
        """The domain homes with a fitted ``gamma`` (the all-reduce's term that changes with the
        servers used), by its value."""
        out: dict[float, list[int]] = {}
        for h, home in enumerate(self.homes):
            if home.domain is not None and home.gamma_ms != 0:
                out.setdefault(home.gamma_ms, []).append(h)
        return out

    def most_servers(self) -> int:
        """Most servers a placement of the job can use."""
        n = len(self.servers) if self.mult is None else int(self.mult.sum())
        return min(self.workers, n, self.max_servers if self.max_servers is not None else n)

    def umax(self, i: int) -> int:
        """Most servers of unit ``i`` the job can use."""
        m = 1 if self.mult is None else int(self.mult[i])
        job_cap = self.workers if self.max_servers is None else min(self.workers, self.max_servers)
        return max(1, min(m, job_cap))

    max_servers: int | None = None
    unit: int = 1
    """Workers that go to a server together (a hybrid job's ``tp``): counts are multiples."""
    shards: ShardIndex | None = None
    """A parameter-server job's push/pull phase when it is modelled exactly."""
    score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """``E[a S]`` on each of those servers (the expected maximum is at least each used one's,
    and at least the workers' average)."""
    spread_ms: float = 0.0
    """A lower bound on the expected maximum over two or more of its servers
    (:func:`placement.evaluation.bounds.spread_lower_bound`, at least the least ``score``)."""
    gpus: list[GpuEntry] = field(default_factory=list)
    """Its GPU choices on the servers with per-GPU factors (``a`` there is on the least)."""
    cong: CongIndex | None = None
    """Its congested domains, when the models price them (:mod:`~placement.formulations.congestion`)."""


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
    gpu_classes: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    """Per server with per-GPU factors, its classes of interchangeable free GPUs (indices)."""

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
            for e in j.gpus:  # class counts, level binaries and their chain links
                total += len(e.classes) + len(e.levels)
                total += sum(int((lv.q < 1).sum()) if lv.q is not None else 1 for lv in e.levels)
            if j.shards is not None:
                sh = j.shards
                total += sum(len(m) for m in sh.modes)
                if sh.q is not None:
                    total += sum(int((q < 1).sum()) for q in sh.q)
                elif sh.scen is not None:
                    total += sh.scen.size
        return total


def _homes(
    job: Job,
    cl: Cluster,
    instance: Instance,
    sps: np.ndarray,
    cap: np.ndarray,
    mult: np.ndarray,
    zroom: np.ndarray | None = None,
) -> list[Home]:
    """The job's homes over its units ``sps`` (a unit is a server, or a class of ``mult``
    interchangeable servers represented by its first).  ``zroom``: a parameter-server job's
    shards each server can hold when its push/pull phase is modelled exactly (its homes
    must hold the shards too, and a domain home two servers of workers or shards);
    otherwise that phase is priced by its floor (a valid bound)."""
    local = {int(sp): i for i, sp in enumerate(sps)}
    homes: list[Home] = []
    floor = 0.0
    if zroom is None:
        floor = ps_floor_of(instance, instance.job_pos[job.id])

    terms = instance.terms_by_bandwidth

    def comm(bw: float) -> float:  # on one server: the ring and alpha (gamma's factor is 0)
        return comm_ms(job, bw, 1, terms) + floor

    def gamma(bw: float) -> float:
        t = terms.get(bw)  # a job that all-reduces (its ring time is positive) pays the level's gamma
        return t.gamma_ms if t is not None and comm_ms(job, bw, 1, {}) > 0 else 0.0

    for i, sp in enumerate(sps):
        if cap[i] >= job.workers and (zroom is None or zroom[int(sp)] >= job.shards):
            bw = instance.servers[int(sp)].intra_bandwidth_gbps
            homes.append(Home(None, (i,), comm(bw), bw))
    if job.workers > 1 or zroom is not None:
        for d, members in enumerate(cl.domain_members):
            mem = tuple(local[int(m)] for m in members if int(m) in local)
            if not mem:
                continue
            if zroom is None:
                if int(mult[list(mem)].sum()) < 2:
                    continue
            else:  # room for every shard, and two servers of workers or shards
                holders = {int(m) for m in members if zroom[int(m)] > 0} | {int(sps[i]) for i in mem}
                if int(zroom[members].sum()) < job.shards or len(holders) < 2:
                    continue
            caps = np.repeat(cap[list(mem)], mult[list(mem)])
            if int(caps.sum()) < job.workers:
                continue
            if job.max_servers is not None and int(np.sort(caps)[::-1][: job.max_servers].sum()) < job.workers:
                continue
            bw = cl.domains[d].bandwidth_gbps
            outside: list[tuple[int, ...]] = []
            if terms and zroom is None and comm_ms(job, bw, 1, {}) > 0:
                for c in cl.domains[d].children:
                    inner = {local[int(m)] for m in cl.domain_members[c] if int(m) in local}
                    if inner:
                        outside.append(tuple(i for i in mem if i not in inner))
            homes.append(Home(d, mem, comm(bw), bw, gamma(bw), tuple(outside)))
    return homes


def index_instance(instance: Instance, *, cutoff: float | None = None, aggregate: bool = False) -> ProblemIndex:
    """Index ``instance`` for an exact model.

    ``cutoff``: the true objective of a known placement (admission ``all`` only).  A server
    is dropped from a job's candidates when using it at all would make the objective at
    least ``cutoff`` even with every other job at its own lower bound: its ``E[a S]`` plus
    the cheapest all-reduce of a home holding it exceeds the job's slack.  No placement
    better than the known one is lost, so the model's optimum, taken together with the
    known placement, is the true optimum (see :func:`~placement.formulations.reductions.prune_thresholds`).

    ``aggregate``: each class of interchangeable servers (:func:`~placement.formulations.reductions.server_classes`) becomes
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
    notes: list[str] = []
    zrooms: dict[int, np.ndarray] = {}
    if any(j.is_ps for j in instance.jobs):
        zrooms, notes = _shard_rooms(instance, st)
    if zrooms and aggregate:
        aggregate = False
        notes.append("no classes aggregated: parameter-server shards are placed server by server")
    members: dict[int, tuple[int, ...]] = {}
    hidden: set[int] = set()
    if aggregate:
        for g in classes:
            members[g[0]] = tuple(g)
            hidden.update(g[1:])
    thresholds = prune_thresholds(instance, cutoff) if cutoff is not None and instance.admission == "all" else None
    gclasses = {sp: gpu_classes(instance, sp) for sp in sorted(factored_servers(instance))}
    pruned = total = 0
    jobs: list[JobIndex] = []
    for jp, job in enumerate(instance.jobs):
        zroom = zrooms.get(jp)
        allowed = st.allowed(jp)
        if hidden:
            allowed = allowed[~np.isin(allowed, list(hidden))]
        cap = np.minimum(st.room(jp, allowed), job.workers) if len(allowed) else np.zeros(0, dtype=np.int64)
        keep = cap > 0
        sps, cap = allowed[keep], cap[keep]
        mult = np.array([len(members.get(int(sp), (0,))) for sp in sps], dtype=np.int64)
        homes = _homes(job, cl, instance, sps, cap, mult, zroom)
        if thresholds is not None and len(sps):
            total += int(mult.sum())
            cheapest = np.full(len(sps), math.inf)
            for h in homes:
                for i in h.members:
                    cheapest[i] = min(cheapest[i], h.comm_floor_ms)
            score = ev.job_score(jp)[sps]
            ok = score + cheapest <= thresholds[jp] * (1 + PRUNE_RTOL) + PRUNE_RTOL
            if not ok.all():
                pruned += int(mult[~ok].sum())
                sps, cap, mult = sps[ok], cap[ok], mult[ok]
                homes = _homes(job, cl, instance, sps, cap, mult, zroom)
        a = np.array([ev.a(jp, int(sp)) for sp in sps])
        hybrid_slots = pipeline_slots(job) if job.is_hybrid else 1
        limit = deadline_limit_ms(job)
        ji = JobIndex(
            jp=jp,
            job_id=job.id,
            workers=job.workers,
            weight=job.weight,
            # a hybrid job: E[T] >= its slots times E[max a S] (its communication, >= 0, is not
            # modelled: the mapping is made after, and the model is a relaxation for it)
            factor=weight_factor(instance, job) * hybrid_slots,
            servers=sps,
            cap=cap,
            a=a,
            homes=homes,
            time_limit_ms=None if limit is None else limit / hybrid_slots,
            mult=mult,
            max_servers=job.max_servers,
            unit=job.unit,
            score=ev.job_score(jp)[sps],
        )
        if len(sps) >= 2 and job.workers >= 2:
            ji.spread_ms = max(spread_lower_bound(instance, jp, 2), float(ji.score.min()))
        if len(sps) == 0:
            jobs.append(ji)
            continue
        ji.gpus = [
            gpu_entry(instance, jp, i, int(sp), int(cap[i]), gclasses)
            for i, sp in enumerate(sps)
            if int(sp) in gclasses
        ]
        tops = [(e.i, ev.base_a(jp, e.sp) * lv.factor) for e in ji.gpus for lv in e.levels]
        if probs is not None:
            rows = [_row(ev, jp, int(sp)) for sp in sps]
            ji.scen_time = a[:, None] * np.asarray(rows)
            ji.scen_floor = ji.scen_time.min(axis=0)
            ji.upper_ms = float(ji.scen_time.max(axis=0) @ probs)
            scenario_level_times(ji.gpus, ev, jp, rows)
            if tops:
                top = np.max([np.asarray(lv.scen_time) for e in ji.gpus for lv in e.levels], axis=0)
                ji.upper_ms = float(np.maximum(ji.scen_time.max(axis=0), top) @ probs)
        else:
            dists = [_dist(ev, jp, int(sp)) for sp in sps]
            points = [a[i] * v for i, (v, _) in enumerate(dists)] + [c * dists[i][0] for i, c in tops]
            t = np.unique(np.concatenate(points))
            q = np.empty((len(t), len(sps)))
            for i, (v, p) in enumerate(dists):
                q[:, i] = cdf_below(v, p, float(a[i]), t)
            chain_level_links(ji.gpus, ev, jp, dists, q, t)
            ji.t = t
            ji.dt = np.diff(np.concatenate(([0.0], t)))
            ji.q = q
            ji.upper_ms = float(t[-1])
        ji.cong = cong_index(instance, ji)
        worst_l = 1.0 if ji.cong is None else ji.cong.upper()
        ji.upper_ms += max((worst_l * h.comm_ms + max(0.0, 2.0 * h.gamma_ms) for h in homes), default=0.0)
        if zroom is not None and homes:
            ji.shards = _shard_index(instance, jp, sps, cap, homes, zroom, probs)
            ji.upper_ms += _shard_upper(ji.shards, probs)
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
        gpu_classes={sp: [ids for ids, _ in cls] for sp, cls in gclasses.items()},
    )


def _row(ev: EvalIndex, jp: int, sp: int) -> np.ndarray:
    """Server ``sp``'s slowdown in each scenario, for job ``jp`` (its override, if any)."""
    r = ev.over_row.get((jp, sp))
    return ev.table[sp] if r is None else r


def _dist(ev: EvalIndex, jp: int, sp: int) -> tuple[np.ndarray, np.ndarray]:
    """Server ``sp``'s slowdown distribution (values, probs) for job ``jp``."""
    return ev.over_dist.get((jp, sp)) or ev.dists[sp]


def _shard_rooms(instance: Instance, st: State) -> tuple[dict[int, np.ndarray], list[str]]:
    """Per parameter-server job, the shards each server can hold (0 where its shards are not
    allowed), when the push/pull phases of all of them together take at most
    :data:`PS_EXACT_TERMS` chain terms (:attr:`ShardIndex.terms`, before pruning); else none
    is modelled exactly (and classes of servers can still be aggregated)."""
    cl = cluster_of(instance)
    ev = arrays_of(instance)
    probs = None if ev.scenario_probs is None else np.asarray(ev.scenario_probs)
    n = len(instance.servers)
    rooms: dict[int, np.ndarray] = {}
    terms = 0
    for jp, job in enumerate(instance.jobs):
        if not job.is_ps:
            continue
        z = np.zeros(n, dtype=np.int64)
        cand = range(n) if job.allowed_servers is None else [instance.server_pos[s] for s in job.allowed_servers]
        for sp in cand:
            z[sp] = min(job.shards, shard_room(job, sp, st.cpus, st.mem))
        sps = st.allowed(jp)
        cap = np.minimum(st.room(jp, sps), job.workers) if len(sps) else np.zeros(0, dtype=np.int64)
        sps, cap = sps[cap > 0], cap[cap > 0]
        homes = _homes(job, cl, instance, sps, cap, np.ones(len(sps), dtype=np.int64), z)
        terms += _shard_index(instance, jp, sps, cap, homes, z, probs, data=False).terms
        rooms[jp] = z
        if terms > PS_EXACT_TERMS:
            note = (
                f"push/pull phases priced by their floor (over {PS_EXACT_TERMS} chain terms): "
                "the shards by the shard rule"
            )
            return {}, [note]
    return rooms, []


def _shard_index(
    instance: Instance,
    jp: int,
    sps: np.ndarray,
    cap: np.ndarray,
    homes: list[Home],
    zroom: np.ndarray,
    probs: np.ndarray | None,
    *,
    data: bool = True,
) -> ShardIndex:
    """The modes of a parameter-server job's shard servers over its homes (workers' servers
    ``sps`` taking at most ``cap``), and with ``data`` the data of its push/pull phase's
    expected maximum."""
    job = instance.jobs[jp]
    cl = cluster_of(instance)
    ev = arrays_of(instance)
    local = {int(sp): i for i, sp in enumerate(sps)}
    per: dict[int, list[tuple[int, int, int, float]]] = {}
    for h, home in enumerate(homes):
        if home.domain is None:  # one server: every worker and every shard on it
            sp = int(sps[home.members[0]])
            intra = instance.servers[sp].intra_bandwidth_gbps
            c = ps_comm_ms(job, job.shards, job.workers, home.bandwidth_gbps, intra)
            per.setdefault(sp, []).append((job.shards, job.workers, h, c))
            continue
        for m in cl.domain_members[home.domain]:
            sp = int(m)
            if zroom[sp] <= 0:
                continue
            i = local.get(sp, -1)
            top = 0 if i < 0 else int(min(cap[i], job.workers))
            intra = instance.servers[sp].intra_bandwidth_gbps
            for zv in range(1, int(zroom[sp]) + 1):
                for xv in range(top + 1):
                    c = ps_comm_ms(job, zv, xv, home.bandwidth_gbps, intra)
                    per.setdefault(sp, []).append((zv, xv, h, c))
    servers = sorted(per)
    values = [np.unique([c for *_, c in per[sp]]) for sp in servers]
    modes = [[(zv, xv, h, int(np.searchsorted(cs, c))) for zv, xv, h, c in per[sp]] for sp, cs in zip(servers, values)]
    sh = ShardIndex(
        total=job.shards,
        servers=np.array(servers, dtype=np.int64),
        local=np.array([local.get(sp, -1) for sp in servers], dtype=np.int64),
        zcap=np.array([zroom[sp] for sp in servers], dtype=np.int64),
        modes=modes,
        values=values,
    )
    if probs is not None:
        sh.scen = np.array([_row(ev, jp, sp) for sp in servers], dtype=float).reshape(len(servers), len(probs))
        sh.terms = sum(len(cs) for cs in values) * (1 + len(probs))
    else:
        dists = [_dist(ev, jp, sp) for sp in servers]
        t = np.unique(np.concatenate([np.outer(cs, v).ravel() for cs, (v, _) in zip(values, dists)] + [np.zeros(0)]))
        sh.terms = len(t) * sum(len(cs) for cs in values)
        if not data:
            return sh
        sh.t = t
        sh.dt = np.diff(np.concatenate(([0.0], t)))
        sh.q = [np.stack([cdf_below(v, p, float(c), t) for c in cs], axis=1) for cs, (v, p) in zip(values, dists)]
    return sh


def start_modes(
    instance: Instance, ji: JobIndex, alloc: Mapping[str, int], shards: Mapping[str, int]
) -> dict[int, int]:
    """The mode (index in ``ji.shards.modes[m]``) each shard server ``m`` takes in a start
    whose workers are ``alloc`` and shards ``shards`` (server ids); empty when the start
    is not one of the model's placements."""
    sh = ji.shards
    every = sorted({s for s, k in alloc.items() if k > 0} | {s for s, k in shards.items() if k > 0})
    if sh is None or not every or not any(shards.values()):
        return {}
    pos = [instance.server_pos[s] for s in every]
    if len(pos) == 1:
        homes = [
            h for h, home in enumerate(ji.homes) if home.domain is None and int(ji.servers[home.members[0]]) == pos[0]
        ]
    else:
        d = cluster_of(instance).domain_of(every)
        homes = [h for h, home in enumerate(ji.homes) if d is not None and home.domain == d.index]
    if not homes:
        return {}
    out: dict[int, int] = {}
    for m, sp in enumerate(sh.servers):
        sid = instance.servers[int(sp)].id
        key = (int(shards.get(sid, 0)), int(alloc.get(sid, 0)), homes[0])
        if key[0] > 0:
            k = next((k for k, mode in enumerate(sh.modes[m]) if mode[:3] == key), None)
            if k is None:
                return {}
            out[m] = k
    return out


def _shard_upper(sh: ShardIndex, probs: np.ndarray | None) -> float:
    """An upper bound on the push/pull phase's expected maximum over every placement."""
    if not sh.servers.size:
        return 0.0
    if sh.scen is not None and probs is not None:
        top = np.array([cs.max() for cs in sh.values])
        return float((top[:, None] * sh.scen).max(axis=0) @ probs)
    assert sh.t is not None
    return float(sh.t[-1]) if sh.t.size else 0.0
