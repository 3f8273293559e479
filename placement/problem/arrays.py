"""The problem's derived arrays: per-server slowdown data, per-job compute times and
expected compute times over every server, and the exact expected-maximum kernel that the
evaluator, the heuristics' pricing and the exact models' indexing all use.

Built once per instance by :func:`arrays_of` and memoised on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from placement.model.records import Assignment, Instance, Slowdown
from placement.model.tolerances import TIE_RTOL

__all__ = ["EvalIndex", "arrays_of", "job_groups"]


def _merged(values: Sequence[float], probs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """A distribution's support, sorted and without repeats or zero-probability values, and
    its probabilities (normalised); read-only arrays, memoised by value: a simulation's
    decisions give a thousand servers the same few forecasts again and again."""
    return _merged_tuples(tuple(values), tuple(probs))


@lru_cache(maxsize=1 << 16)
def _merged_tuples(values: tuple[float, ...], probs: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    p = np.asarray(probs, dtype=float)
    keep = p > 0
    v, p = v[keep], p[keep]
    u, inv = np.unique(v, return_inverse=True)
    q = np.bincount(inv, weights=p, minlength=len(u))
    q = q / q.sum()
    u.flags.writeable = False
    q.flags.writeable = False
    return u, q


_SERVER_ARRAYS = (
    "scenario_probs",
    "table",
    "dists",
    "server_mean",
    "server_survival",
    "gpu_type",
    "type_names",
    "type_codes",
)
"""What :class:`EvalIndex` derives from the servers alone (shared between instances that differ
only in used GPUs and jobs)."""


class EvalIndex:
    """Per-instance arrays the evaluator and the heuristics share (build it with
    :func:`arrays_of`, which memoises it on the instance)."""

    def __init__(self, instance: Instance, like: EvalIndex | None = None) -> None:
        self.instance = instance
        self.scenario_probs: np.ndarray | None = None
        servers = instance.servers
        self.n = len(servers)
        if like is not None:
            # the same servers and slowdowns (see placement.problem.reuse): share their arrays
            for name in _SERVER_ARRAYS:
                if hasattr(like, name):
                    setattr(self, name, getattr(like, name))
        elif instance.scenarios is not None:
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
        if like is None:
            self.gpu_type = [s.gpu_type for s in servers]
            self.type_names = sorted(set(self.gpu_type))
            code = {t: k for k, t in enumerate(self.type_names)}
            self.type_codes = np.array([code[t] for t in self.gpu_type], dtype=np.int64)
        self._job_a: dict[int, np.ndarray] = {}
        self._job_score: dict[int, np.ndarray] = {}
        self._floors: dict[tuple[str, str | None], np.ndarray | None] = {}

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
            floor = self.least_factors(job.app_class)
            if floor is not None:
                a = a * floor
            self._job_a[jp] = a
        return self._job_a[jp]

    def least_factors(self, app_class: str | None) -> np.ndarray | None:
        """Per server, the least per-GPU factor among its free GPUs for ``app_class`` (1 on a
        server without factors or without a free GPU); ``None`` when no server has factors."""
        key = ("least", app_class)
        if key not in self._floors:
            out = None
            if any(s.has_gpu_factors for s in self.instance.servers):
                out = np.ones(self.n)
                for sp, s in enumerate(self.instance.servers):
                    free = s.free_gpu_ids
                    if s.has_gpu_factors and free:
                        f = s.gpu_factors(app_class)
                        out[sp] = min(f[g] for g in free)
            self._floors[key] = out
        return self._floors[key]

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
        out: np.ndarray = self.server_survival[sps].copy()
        own = self.over_servers.get(jp)
        if own:
            for k, sp in enumerate(sps):
                if int(sp) in own:
                    out[k] = self.survival(jp, int(sp))
        return out

    # per-pair data ------------------------------------------------------------
    def a(self, jp: int, sp: int) -> float:
        """The job's compute time on server ``sp`` on its fastest free GPU (``a_n`` times the
        least per-GPU factor there): what no placement beats, which bounds, pricing and the
        exact models' first level use."""
        base = self.base_a(jp, sp)
        floor = self.least_factors(self.instance.jobs[jp].app_class)
        return base if floor is None else base * float(floor[sp])

    def base_a(self, jp: int, sp: int) -> float:
        """``a_n`` = compute time over the GPU type's speed (no per-GPU factor)."""
        job = self.instance.jobs[jp]
        speed = job.speed(self.gpu_type[sp])
        return job.compute_ms / speed if speed else math.inf

    def mean_slowdown(self, jp: int, sp: int) -> float:
        if (jp, sp) in self.over_dist:
            v, p = self.over_dist[(jp, sp)]
            return float(v @ p)
        if (jp, sp) in self.over_row:
            return float(self.over_row[(jp, sp)] @ self.scenario_probs)
        return float(self.server_mean[sp])

    def survival(self, jp: int, sp: int) -> float:
        if (jp, sp) in self.over_dist:
            v, p = self.over_dist[(jp, sp)]
            return float(p[v <= 1.0].sum())
        if (jp, sp) in self.over_row:
            return float((self.over_row[(jp, sp)] <= 1.0) @ self.scenario_probs)  # type: ignore[operator]
        return float(self.server_survival[sp])

    def cdf(self, jp: int, sp: int, x: float) -> np.ndarray | float:
        """``P(S_jn <= x)`` for independent slowdowns; for scenario tables, the indicator of
        ``S_jn <= x`` per scenario (an array)."""
        tol = 1 + TIE_RTOL
        if self.scenario_probs is None:
            v, p = self.over_dist.get((jp, sp)) or self.dists[sp]
            return float(p[v <= x * tol].sum())
        row = self.over_row.get((jp, sp))
        return (self.table[sp] if row is None else row) <= x * tol

    # the expected maximum -------------------------------------------------------
    def expected_max(
        self,
        groups: Sequence[tuple[int, Sequence[int]]],
        coefs: Sequence[Sequence[float]] | None = None,
        shifts: Sequence[Sequence[float]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each ``(job position, server positions)`` group: ``E[max_n a_n S_n + q_n]``
        (``a_n`` is :meth:`a`: on its fastest free GPU; pass ``coefs`` for the GPUs held),
        ``max_n a_n + q_n`` (ideal) and ``P(max_n a_n S_n + q_n > max_n a_n + q_n)``.
        ``coefs[g][k]``, when given, replaces ``a`` of the k-th server of group g (a
        parameter-server job's push/pull times, the same draws of ``S``); ``shifts[g][k]`` is
        its ``q`` (a hybrid job's stage-boundary time; 0 when not given)."""
        if not groups:
            z = np.zeros(0)
            return z, z, z
        if self.scenario_probs is None:
            return self._expected_max_independent(groups, coefs, shifts)
        return self._expected_max_scenarios(groups, coefs, shifts)

    def _coef(self, coefs: Sequence[Sequence[float]] | None, g: int, k: int, jp: int, sp: int) -> float:
        return self.a(jp, sp) if coefs is None else float(coefs[g][k])

    def _expected_max_scenarios(
        self,
        groups: Sequence[tuple[int, Sequence[int]]],
        coefs: Sequence[Sequence[float]] | None = None,
        shifts: Sequence[Sequence[float]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows: list[np.ndarray] = []
        a_all: list[float] = []
        q_all: list[float] = []
        starts: list[int] = []
        for g, (jp, sps) in enumerate(groups):
            starts.append(len(rows))
            for k, sp in enumerate(sps):
                a = self._coef(coefs, g, k, jp, sp)
                row = self.over_row.get((jp, sp))
                rows.append(self.table[sp] if row is None else row)
                a_all.append(a)
                q_all.append(0.0 if shifts is None else float(shifts[g][k]))
        a_arr = np.asarray(a_all)
        q_arr = np.asarray(q_all)
        r = np.asarray(rows) * a_arr[:, None] + q_arr[:, None]
        st = np.asarray(starts)
        m = np.maximum.reduceat(r, st, axis=0)
        ideal = np.maximum.reduceat(a_arr + q_arr, st)
        probs = self.scenario_probs
        e = m @ probs
        strag = (m > ideal[:, None] * (1 + TIE_RTOL)) @ probs  # type: ignore[operator]
        return e, ideal, np.clip(strag, 0.0, 1.0)

    def _expected_max_independent(
        self,
        groups: Sequence[tuple[int, Sequence[int]]],
        coefs: Sequence[Sequence[float]] | None = None,
        shifts: Sequence[Sequence[float]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ts, ps, seg_of_pair, pair_len, a_all = [], [], [], [], []
        for g, (jp, sps) in enumerate(groups):
            for k, sp in enumerate(sps):
                v, p = self.over_dist.get((jp, sp)) or self.dists[sp]
                a = self._coef(coefs, g, k, jp, sp)
                q = 0.0 if shifts is None else float(shifts[g][k])
                ts.append(v * a + q)
                ps.append(p)
                seg_of_pair.append(g)
                pair_len.append(len(v))
                a_all.append(a + q)
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
        e = np.bincount(seg, weights=t * (F - F_prev), minlength=G).astype(float)
        # tail: the last point of a segment has F = 1 in exact arithmetic
        seg_end = seg_start + seg_len - 1
        e += t[seg_end] * (1.0 - F[seg_end])
        ideal = np.maximum.reduceat(a_arr, np.concatenate(([0], np.cumsum(m_pairs)[:-1])))
        at_ideal = np.where(t <= np.repeat(ideal, seg_len) * (1 + TIE_RTOL), F, 0.0)
        f_ideal = np.maximum.reduceat(at_ideal, seg_start)
        return e, ideal, np.clip(1.0 - f_ideal, 0.0, 1.0)


def arrays_of(instance: Instance) -> EvalIndex:
    """The derived arrays of ``instance`` (built on first use, memoised on the instance)."""
    idx = instance.derived.get("arrays")
    if idx is None:
        idx = instance.derived["arrays"] = EvalIndex(instance)
    return idx


def job_groups(instance: Instance, assignment: Assignment) -> list[tuple[int, list[int]]]:
    """``(job position, sorted server positions)`` of every placed job of ``assignment``."""
    groups = []
    for job in instance.jobs:
        a: Mapping[str, int] = assignment.get(job.id) or {}
        sps = [instance.server_pos[s] for s, k in a.items() if k > 0]
        if sps:
            groups.append((instance.job_pos[job.id], sorted(sps)))
    return groups
