"""The one evaluator: every reported number is computed here from (instance, assignment).

Exact expected slowest-worker iteration time for independent discrete slowdowns (product of
CDFs over the merged support points) and for scenario tables, with per-job overrides, fully
vectorised with numpy over all jobs of a placement.  :func:`monte_carlo` simulates the same
model with a seed, to cross-check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from placement.model import Assignment, Instance, Job, JobReport, Slowdown

__all__ = [
    "Evaluation",
    "EvalIndex",
    "evaluate",
    "comm_ms",
    "job_lower_bound",
    "lower_bound",
    "MonteCarloResult",
    "monte_carlo",
    "TIE_RTOL",
]

TIE_RTOL = 1e-12
"""Relative tolerance under which a time counts as equal to the ideal time (straggler probability)."""


def comm_ms(job: Job, bandwidth_gbps: float) -> float:
    """Ring all-reduce time ``2 (W-1)/W * 8 G / B`` in ms (0 for one worker, inf when B=0)."""
    if job.workers == 1:
        return 0.0
    if bandwidth_gbps <= 0:
        return math.inf
    return 2.0 * (job.workers - 1) / job.workers * 8.0 * job.gradient_mb / bandwidth_gbps


def _merged(values: Sequence[float], probs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    p = np.asarray(probs, dtype=float)
    keep = p > 0
    v, p = v[keep], p[keep]
    u, inv = np.unique(v, return_inverse=True)
    q = np.bincount(inv, weights=p, minlength=len(u))
    return u, q / q.sum()


class EvalIndex:
    """Per-instance arrays the evaluator and the heuristics share (built once, cached on
    the instance as ``instance.eval_index``)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.scenario_probs: np.ndarray | None = None
        servers = instance.servers
        self.n = len(servers)
        if instance.scenarios is not None:
            sc = instance.scenarios
            self.scenario_probs = np.asarray(sc.probs, dtype=float)
            self.scenario_probs = self.scenario_probs / self.scenario_probs.sum()
            table = np.ones((self.n, sc.count))
            for sid, row in sc.slowdowns.items():
                table[instance.server_pos[sid]] = row
            self.table = table
            self.server_mean = table @ self.scenario_probs
            self.server_survival = (table <= 1.0) @ self.scenario_probs
        else:
            self.dists = [_merged(s.slowdown.values, s.slowdown.probs) for s in servers]
            self.server_mean = np.array([float(v @ p) for v, p in self.dists])
            self.server_survival = np.array([float(p[v <= 1.0].sum()) for v, p in self.dists])
        # job overrides, by (job position, server position)
        self.over_dist: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self.over_row: dict[tuple[int, int], np.ndarray] = {}
        for jp, job in enumerate(instance.jobs):
            for sid, o in job.slowdown.items():
                key = (jp, instance.server_pos[sid])
                if isinstance(o, Slowdown):
                    self.over_dist[key] = _merged(o.values, o.probs)
                else:
                    self.over_row[key] = np.asarray(o, dtype=float)
        self.over_servers: dict[int, set[int]] = {}
        """Job position -> server positions where the job has its own estimate."""
        for jp, sp in list(self.over_dist) + list(self.over_row):
            self.over_servers.setdefault(jp, set()).add(sp)
        self.gpu_type = [s.gpu_type for s in servers]
        self.type_names = sorted(set(self.gpu_type))
        code = {t: k for k, t in enumerate(self.type_names)}
        self.type_codes = np.array([code[t] for t in self.gpu_type], dtype=np.int64)
        self._job_a: dict[int, np.ndarray] = {}
        self._job_score: dict[int, np.ndarray] = {}

    # per-job vectors over all servers (cached) ----------------------------------
    def job_a(self, jp: int) -> np.ndarray:
        """``a[j][n]`` for every server: inf where the GPU type or ``allowed_servers``
        forbids it."""
        if jp not in self._job_a:
            job = self.instance.jobs[jp]
            speeds = np.array([job.speed(t) or 0.0 for t in self.type_names])
            sp = speeds[self.type_codes]
            with np.errstate(divide="ignore"):
                a = np.where(sp > 0, job.compute_ms / np.where(sp > 0, sp, 1.0), math.inf)
            if job.allowed_servers is not None:
                ok = np.zeros(self.n, dtype=bool)
                ok[[self.instance.server_pos[s] for s in job.allowed_servers]] = True
                a = np.where(ok, a, math.inf)
            self._job_a[jp] = a
        return self._job_a[jp]

    def job_score(self, jp: int) -> np.ndarray:
        """``a[j][n] E[S_jn]`` for every server (the job's overrides patched in)."""
        if jp not in self._job_score:
            mean = self.server_mean.copy()
            for sp in self.over_servers.get(jp, ()):
                mean[sp] = self.mean_slowdown(jp, sp)
            self._job_score[jp] = self.job_a(jp) * mean
        return self._job_score[jp]

    def job_survival(self, jp: int, sps: np.ndarray) -> np.ndarray:
        """``P(S_jn <= 1)`` on the servers ``sps``."""
        out = self.server_survival[sps].copy()
        own = self.over_servers.get(jp)
        if own:
            for k, sp in enumerate(sps):
                if int(sp) in own:
                    out[k] = self.survival(jp, int(sp))
        return out

    # per-pair data ------------------------------------------------------------
    def a(self, jp: int, sp: int) -> float:
        job = self.instance.jobs[jp]
        speed = job.speed(self.gpu_type[sp])
        return job.compute_ms / speed if speed else math.inf

    def mean_slowdown(self, jp: int, sp: int) -> float:
        if (jp, sp) in self.over_dist:
            v, p = self.over_dist[(jp, sp)]
            return float(v @ p)
        if (jp, sp) in self.over_row:
            return float(self.over_row[(jp, sp)] @ self.scenario_probs)  # type: ignore[operator]
        return float(self.server_mean[sp])

    def survival(self, jp: int, sp: int) -> float:
        if (jp, sp) in self.over_dist:
            v, p = self.over_dist[(jp, sp)]
            return float(p[v <= 1.0].sum())
        if (jp, sp) in self.over_row:
            return float((self.over_row[(jp, sp)] <= 1.0) @ self.scenario_probs)  # type: ignore[operator]
        return float(self.server_survival[sp])

    # the expected maximum -------------------------------------------------------
    def expected_max(self, groups: Sequence[tuple[int, Sequence[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each ``(job position, server positions)`` group: ``E[max_n a_n S_n]``,
        ``max_n a_n`` (ideal) and ``P(max_n a_n S_n > max_n a_n)``."""
        if not groups:
            z = np.zeros(0)
            return z, z, z
        if self.scenario_probs is None:
            return self._expected_max_independent(groups)
        return self._expected_max_scenarios(groups)

    def _expected_max_scenarios(self, groups: Sequence[tuple[int, Sequence[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, a_all, starts = [], [], []
        for jp, sps in groups:
            starts.append(len(rows))
            for sp in sps:
                a = self.a(jp, sp)
                row = self.over_row.get((jp, sp))
                rows.append(self.table[sp] if row is None else row)
                a_all.append(a)
        a_arr = np.asarray(a_all)
        r = np.asarray(rows) * a_arr[:, None]
        st = np.asarray(starts)
        m = np.maximum.reduceat(r, st, axis=0)
        ideal = np.maximum.reduceat(a_arr, st)
        probs = self.scenario_probs
        e = m @ probs  # type: ignore[operator]
        strag = (m > ideal[:, None] * (1 + TIE_RTOL)) @ probs  # type: ignore[operator]
        return e, ideal, np.clip(strag, 0.0, 1.0)

    def _expected_max_independent(self, groups: Sequence[tuple[int, Sequence[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ts, ps, seg_of_pair, pair_len, a_all = [], [], [], [], []
        for g, (jp, sps) in enumerate(groups):
            for sp in sps:
                v, p = self.over_dist.get((jp, sp)) or self.dists[sp]
                a = self.a(jp, sp)
                ts.append(v * a)
                ps.append(p)
                seg_of_pair.append(g)
                pair_len.append(len(v))
                a_all.append(a)
        G = len(groups)
        pair_len_a = np.asarray(pair_len)
        t = np.concatenate(ts)
        p = np.concatenate(ps)
        seg_pair = np.asarray(seg_of_pair)
        seg = np.repeat(seg_pair, pair_len_a)
        a_arr = np.asarray(a_all)
        # CDF of each pair after each of its own support points (pairs are sorted by value)
        pair_start = np.concatenate(([0], np.cumsum(pair_len_a)[:-1]))
        cp = np.cumsum(p)
        cdf_after = cp - np.repeat(cp[pair_start] - p[pair_start], pair_len_a)
        cdf_after = np.minimum(cdf_after, 1.0)
        first = np.zeros(len(t), dtype=bool)
        first[pair_start] = True
        last = np.zeros(len(t), dtype=bool)
        last[pair_start + pair_len_a - 1] = True
        cdf_after[last] = 1.0
        cdf_before = np.where(first, 1.0, cdf_after - p)
        cdf_before = np.maximum(cdf_before, 1e-300)
        delta = np.log(cdf_after) - np.where(first, 0.0, np.log(cdf_before))
        # sweep each job's support points in increasing time
        order = np.lexsort((t, seg))
        t, seg, delta, first = t[order], seg[order], delta[order], first[order]
        seg_len = np.bincount(seg, minlength=G)
        seg_start = np.concatenate(([0], np.cumsum(seg_len)[:-1]))
        cl = np.cumsum(delta)
        cl = cl - np.repeat(cl[seg_start] - delta[seg_start], seg_len)
        cz = np.cumsum(first.astype(np.int64))
        cz = cz - np.repeat(cz[seg_start] - first[seg_start], seg_len)
        m_pairs = np.bincount(seg_pair, minlength=G)
        F = np.where(cz == np.repeat(m_pairs, seg_len), np.exp(np.minimum(cl, 0.0)), 0.0)
        F_prev = np.concatenate(([0.0], F[:-1]))
        F_prev[seg_start] = 0.0
        e = np.bincount(seg, weights=t * (F - F_prev), minlength=G)
        # tail: the last point of a segment has F = 1 in exact arithmetic
        seg_end = seg_start + seg_len - 1
        e += t[seg_end] * (1.0 - F[seg_end])
        ideal = np.maximum.reduceat(a_arr, np.concatenate(([0], np.cumsum(m_pairs)[:-1])))
        at_ideal = np.where(t <= np.repeat(ideal, seg_len) * (1 + TIE_RTOL), F, 0.0)
        f_ideal = np.maximum.reduceat(at_ideal, seg_start)
        return e, ideal, np.clip(1.0 - f_ideal, 0.0, 1.0)


def _index(instance: Instance) -> EvalIndex:
    return instance.eval_index  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Evaluation:
    """The evaluator's figures for one placement.  ``objective`` is over placed jobs."""

    objective: float
    placed_weight: float
    total_weight: float
    jobs: Mapping[str, JobReport]
    unplaced: tuple[str, ...]


def _job_servers(instance: Instance, assignment: Assignment) -> list[tuple[int, list[int]]]:
    groups = []
    for job in instance.jobs:
        a = assignment.get(job.id) or {}
        sps = [instance.server_pos[s] for s, k in a.items() if k > 0]
        if sps:
            groups.append((instance.job_pos[job.id], sorted(sps)))
    return groups


def job_weight_factor(instance: Instance, job: Job) -> float:
    """The objective's coefficient on ``E[T_j]`` (ms): ``w_j``, or ``w_j iterations_j / 1000``."""
    if instance.objective == "weighted_expected_jct":
        return job.weight * (job.iterations or 0) / 1000.0
    return job.weight


def evaluate(instance: Instance, assignment: Assignment) -> Evaluation:
    """Exact figures of ``assignment`` (which the validator should have accepted).

    >>> from placement.instances import load_bundled
    >>> inst = load_bundled("tiny")
    >>> ev = evaluate(inst, {j.id: {inst.servers[0].id: j.workers} for j in inst.jobs[:1]})
    >>> ev.jobs[inst.jobs[0].id].expected_iteration_ms >= ev.jobs[inst.jobs[0].id].ideal_iteration_ms
    True
    """
    idx = _index(instance)
    groups = _job_servers(instance, assignment)
    e, ideal, strag = idx.expected_max(groups)
    cluster = instance.cluster
    reports: dict[str, JobReport] = {}
    objective = 0.0
    placed_w = 0.0
    for g, (jp, sps) in enumerate(groups):
        job = instance.jobs[jp]
        ids = [instance.servers[sp].id for sp in sps]
        bw = cluster.bandwidth(ids)
        c = comm_ms(job, bw)
        exp_t = float(e[g]) + c
        reports[job.id] = JobReport(
            expected_iteration_ms=exp_t,
            ideal_iteration_ms=float(ideal[g]) + c,
            straggler_probability=float(strag[g]),
            bandwidth_gbps=float(bw),
            servers=len(sps),
        )
        objective += job_weight_factor(instance, job) * exp_t
        placed_w += job.weight
    unplaced = tuple(j.id for j in instance.jobs if j.id not in reports)
    return Evaluation(
        objective=objective,
        placed_weight=placed_w,
        total_weight=float(sum(j.weight for j in instance.jobs)),
        jobs=MappingProxyType(reports),
        unplaced=unplaced,
    )


# ------------------------------------------------------------- lower bounds
def job_lower_bound(instance: Instance, jp: int) -> float:
    """A valid lower bound on ``E[T_j]`` over every feasible placement of job ``jp``:
    ``max_n E[a_n S_n] >= min_n E[a_n S_n]`` over allowed servers, plus the all-reduce time
    at the widest bandwidth any server set able to hold the gang offers."""
    idx = _index(instance)
    job = instance.jobs[jp]
    cl = instance.cluster
    free = np.where(np.isfinite(idx.job_a(jp)), cl.free_gpus, 0)
    if not free.any():
        return math.inf
    best_compute = float(idx.job_score(jp)[free > 0].min())
    if job.workers == 1:
        return best_compute
    bws = list(cl.intra_bandwidth[free >= job.workers])
    if cl.domains:
        concat, offsets = cl.domain_concat
        room = np.add.reduceat(free[concat], offsets)
        bws += [d.bandwidth_gbps for d, r in zip(cl.domains, room) if r >= job.workers]
    return best_compute + comm_ms(job, max(bws, default=0.0))


def lower_bound(instance: Instance) -> float | None:
    """A valid lower bound on the objective of any placement that places every job
    (admission ``all``); ``None`` for ``best_effort``, where the objective counts only the
    jobs placed."""
    if instance.admission != "all":
        return None
    total = 0.0
    for jp, job in enumerate(instance.jobs):
        total += job_weight_factor(instance, job) * job_lower_bound(instance, jp)
    return total if math.isfinite(total) else None


# ---------------------------------------------------------------- Monte Carlo
@dataclass(frozen=True)
class MonteCarloResult:
    """Sample means with 95% normal confidence half-widths."""

    samples: int
    seed: int
    objective: float
    objective_ci: float
    jobs: Mapping[str, tuple[float, float]]


def monte_carlo(instance: Instance, assignment: Assignment, *, samples: int = 10_000, seed: int = 0) -> MonteCarloResult:
    """Simulate ``samples`` iterations of the whole cluster (one slowdown draw per server,
    or one scenario, per iteration) and average each job's slowest-worker time."""
    if samples < 2:
        raise ValueError(f"The 'samples' parameter of monte_carlo must be an int >= 2. Got {samples!r} instead.")
    rng = np.random.default_rng(seed)
    idx = _index(instance)
    groups = _job_servers(instance, assignment)
    used = sorted({sp for _, sps in groups for sp in sps})

    def draw(v: np.ndarray, p: np.ndarray) -> np.ndarray:
        return v[np.minimum(np.searchsorted(np.cumsum(p), rng.random(samples), side="right"), len(v) - 1)]

    if idx.scenario_probs is None:
        S = {sp: draw(*idx.dists[sp]) for sp in used}
        scen = None
    else:
        scen = draw(np.arange(len(idx.scenario_probs)), idx.scenario_probs).astype(int)
        S = {sp: idx.table[sp][scen] for sp in used}
    total = np.zeros(samples)
    jobs: dict[str, tuple[float, float]] = {}
    for jp, sps in groups:
        job = instance.jobs[jp]
        ids = [instance.servers[sp].id for sp in sps]
        c = comm_ms(job, instance.cluster.bandwidth(ids))
        t = np.zeros(samples)
        for sp in sps:
            if (jp, sp) in idx.over_dist:
                s = draw(*idx.over_dist[(jp, sp)])
            elif (jp, sp) in idx.over_row:
                s = idx.over_row[(jp, sp)][scen]
            else:
                s = S[sp]
            t = np.maximum(t, idx.a(jp, sp) * s)
        t = t + c
        jobs[job.id] = (float(t.mean()), float(1.96 * t.std(ddof=1) / math.sqrt(samples)))
        total += job_weight_factor(instance, job) * t
    return MonteCarloResult(
        samples=samples,
        seed=seed,
        objective=float(total.mean()),
        objective_ci=float(1.96 * total.std(ddof=1) / math.sqrt(samples)),
        jobs=MappingProxyType(jobs),
    )
