"""Exact CP-SAT model of expected slowest-worker time (OR-Tools).

The same formulation as :mod:`placement.formulations.milp`, in integers.  All scaling
happens in :class:`Scale`, and every rounding goes the way that keeps the integer model a
*relaxation* of the true one, so that CP-SAT's best bound, scaled back, is a valid lower
bound on the true objective:

- times are integers in units of ``time_unit_ms`` (a power of ten with the largest time
  at most 10^6 units); compute-time coefficients are rounded down;
- probabilities are integers in units of ``1/CPSAT_PROB_UNITS``; the product chain
  ``pi_m <= ceil(pi_{m-1} ceil(q R) / R)`` rounds up the probability that the job's
  maximum stays below a point, hence down its complement;
- objective coefficients are rounded down after scaling by ``objective_scale``.

The placement CP-SAT returns is re-evaluated exactly by the wrapper of every backend
(:mod:`placement.methods.exact`); ``optimal`` is claimed only when the exact objective is
within ``CPSAT_OPTIMAL_RTOL`` of the scaled-back bound, and infeasibility only when the
integer capacity rows are exact (:func:`placement.problem.rules.exact_in_units`).  Determinism: one worker by default (``threads=1``), deterministic for
a seed when the run ends before the wall-clock limit; with ``threads > 1`` the workers run
``interleave_search``, CP-SAT's deterministic schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from placement.formulations.congestion import CongIndex
from placement.formulations.index import GpuLevel, JobIndex, ProblemIndex, by_gpu_class, index_instance, start_modes
from placement.formulations.quiet import interruptible_cpsat
from placement.model.records import Assignment, Instance
from placement.model.tolerances import CPSAT_OPTIMAL_RTOL, CPSAT_PROB_UNITS, TIE_RTOL
from placement.problem.gpus import ids_of_counts
from placement.problem.rules import RESOURCES, SHARD_RESOURCES, capacity_units, demand_units, exact_in_units
from placement.problem.shards import complete_shards
from placement.solving.backend import MIN_SOLVE_S, BackendResult, Termination
from placement.solving.budget import Budget

__all__ = ["CpSatBackend", "Scale", "add_capacity_rows", "STATUS_TABLE"]

_MAX_ACTIVITY = 2**61
PENALTY_DEN = 100
"""The locality penalty in CP-SAT's rows: ``PENALTY_DEN pen >= floor(PENALTY_DEN F) total``."""
WALL_SAFETY = 4.0
"""Under a work clock (``solve(..., clock="work")``) CP-SAT stops on its deterministic time
(one worker: repeatable), with this many times as much wall time as a safety."""


@dataclass(frozen=True)
class Scale:
    """The one place where floats become integers."""

    time_unit_ms: float
    objective_scale: float
    """Objective units per (weighted) ms: ``objective_int ~ objective_ms * objective_scale``."""

    @classmethod
    def for_index(cls, index: ProblemIndex) -> Scale:
        top = max([j.upper_ms for j in index.jobs] + [1e-9])
        unit = 10.0 ** math.ceil(math.log10(top / 1e6)) if top > 0 else 1e-6
        # objective: as fine as int64 allows for this many terms
        n_terms = sum(max(1, len(j.servers)) * 8 for j in index.jobs) + 1
        weight = max([j.factor for j in index.jobs] + [1e-12])
        biggest = weight * top * max(1, len(index.jobs))  # objective in ms, upper bound
        pen = index.instance.locality_penalty
        room = PENALTY_DEN * pen if pen != 1.0 else 1.0  # the penalty's rows multiply a job's total
        k = _MAX_ACTIVITY / max(1.0, biggest * n_terms * room)
        scale = 10.0 ** math.floor(math.log10(k)) if k > 0 else 1.0
        return cls(unit, min(scale, 1e12))

    def time_floor(self, ms: float) -> int:
        return int(math.floor(ms / self.time_unit_ms + 1e-9))

    def coef_floor(self, x: float) -> int:
        """``x`` in objective units, rounded down (a negative cost too: a fitted ``gamma``)."""
        return int(math.floor(x * self.objective_scale + 1e-9)) if x != 0 else 0


def _build(
    index: ProblemIndex, scale: Scale, start: Assignment | None, start_shards: Assignment | None = None
) -> tuple[Any, ...]:
    from ortools.sat.python import cp_model

    start_shards = start_shards or {}
    m = cp_model.CpModel()
    inst = index.instance
    R = CPSAT_PROB_UNITS
    x: dict[tuple[int, int], Any] = {}
    placed: dict[int, Any] = {}
    obj_terms: list[tuple[int, Any]] = []
    weight_terms: list[tuple[int, Any]] = []
    per_server: dict[int, list[tuple[int, Any]]] = {}
    shard_pairs: dict[int, list[tuple[int, Any]]] = {}
    modes: dict[int, list[list[Any]]] = {}
    hints: list[tuple[Any, int]] = []
    gpu_x: dict[tuple[int, int, int], Any] = {}
    probs = index.scenario_probs
    for j in index.jobs:
        job = inst.jobs[j.jp]
        tag = f"j{j.jp}"
        start_alloc = None if start is None else start.get(job.id, {})
        if index.best_effort:
            p = m.new_bool_var(f"placed_{tag}")
            if start_alloc is not None:
                hints.append((p, 1 if start_alloc else 0))
        else:
            p = m.new_constant(1)
        placed[j.jp] = p
        if len(j.servers) == 0 or not j.homes:
            m.add(p == 0)
            continue
        xs, ys = [], []
        for i, sp in enumerate(j.servers):
            xv = m.new_int_var(0, int(j.cap[i]), f"x_{tag}_{i}")
            yv = m.new_bool_var(f"y_{tag}_{i}")
            m.add(xv <= int(j.cap[i]) * yv)
            m.add(xv >= yv)
            if j.unit > 1:  # whole groups of a hybrid job
                gv = m.new_int_var(0, int(j.cap[i]) // j.unit, f"g_{tag}_{i}")
                m.add(xv == j.unit * gv)
                if start_alloc is not None:
                    hints.append((gv, int(start_alloc.get(inst.servers[int(sp)].id, 0)) // j.unit))
            xs.append(xv)
            ys.append(yv)
            x[(j.jp, int(sp))] = xv
            per_server.setdefault(int(sp), []).append((j.jp, xv))
            if start_alloc is not None:
                k = int(start_alloc.get(inst.servers[int(sp)].id, 0))
                hints += [(xv, k), (yv, int(k > 0))]
        m.add(sum(xs) == j.workers * p)
        links: list[tuple[GpuLevel, Any]] = []  # the factor levels and their literals
        for e in j.gpus:
            xg = [m.new_int_var(0, n, f"xg_{tag}_{e.i}_{c}") for c, _, n in e.classes]
            m.add(sum(xg) == xs[e.i])
            for cls_i, var in enumerate(xg):
                gpu_x[(j.jp, e.sp, cls_i)] = var
            for lv_i, lv in enumerate(e.levels):
                u = m.new_bool_var(f"ul_{tag}_{e.i}_{lv_i}")
                for cls_i in lv.classes:
                    m.add(xg[cls_i] <= e.classes[cls_i][2] * u)
                links.append((lv, u))
        if job.max_servers is not None:
            m.add(sum(ys) <= job.max_servers)
        zs = [m.new_bool_var(f"z_{tag}_{h}") for h in range(len(j.homes))]
        m.add(sum(zs) == p)
        covers: dict[int, list[Any]] = {}
        for h, home in enumerate(j.homes):
            for i in home.members:
                covers.setdefault(i, []).append(zs[h])
            if home.domain is not None and j.shards is None:
                m.add(sum(ys[i] for i in home.members) >= 2 * zs[h])
                for out in home.outside:  # the smallest domain holding the servers used
                    m.add(zs[h] <= sum(ys[i] for i in out))
        for i, yv in enumerate(ys):
            m.add(yv <= sum(covers.get(i, [])))
        # E[T_j] + C_j in ms, as (ms per unit of the variable, variable)
        exp_terms: list[tuple[float, Any]] = [
            (home.comm_ms, zs[h]) for h, home in enumerate(j.homes) if home.comm_ms > 0
        ]
        groups = j.gamma_groups()
        if groups:  # gamma 2 (k - 1) / k over the k servers used: one literal per count k >= 2
            cs = {k: m.new_bool_var(f"k_{tag}_{k}") for k in range(2, j.most_servers() + 1)}
            single = [zs[h] for h, home in enumerate(j.homes) if home.domain is None]
            m.add(sum(cs.values()) == sum(zs[h] for h, home in enumerate(j.homes) if home.domain is not None))
            m.add(sum(ys) == sum(single) + sum(k * c for k, c in cs.items()))
            for gi, (gamma, hs) in enumerate(sorted(groups.items())):
                zg = sum(zs[h] for h in hs)
                for k, c in cs.items():
                    w = m.new_bool_var(f"gw_{tag}_{gi}_{k}")  # = zg and c
                    m.add(w >= zg + c - 1)
                    m.add(w <= zg)
                    m.add(w <= c)
                    exp_terms.append((gamma * 2.0 * (k - 1) / k, w))
            if start_alloc is not None:
                n_used = sum(1 for v in start_alloc.values() if v > 0)
                hints += [(c, int(n_used == k)) for k, c in cs.items()]
        if probs is not None:
            assert j.scen_time is not None and j.scen_floor is not None
            for s, ps in enumerate(probs):
                top = max([float(j.scen_time[:, s].max())] + [float(lv.scen_time[s]) for lv, _ in links])
                hi = max(scale.time_floor(top), 0)
                tau = m.new_int_var(0, hi, f"tau_{tag}_{s}")
                # the maximum itself, not only above each term: a bound alone leaves CP-SAT
                # free values to step down one unit per solution (see _pinned)
                lows = [scale.time_floor(float(j.scen_floor[s])) * p]
                for i in range(len(ys)):
                    v = float(j.scen_time[i, s])
                    if v > j.scen_floor[s] * (1 + TIE_RTOL):
                        lows.append(scale.time_floor(v) * ys[i])
                for lv, u in links:
                    assert lv.scen_time is not None
                    lows.append(scale.time_floor(float(lv.scen_time[s])) * u)
                m.add_max_equality(tau, lows)
                exp_terms.append((float(ps) * scale.time_unit_ms, tau))
        else:
            assert j.t is not None and j.dt is not None and j.q is not None
            for k in range(len(j.t)):
                qk = j.q[k]
                dt = float(j.dt[k])
                lq = [(float(lv.q[k]), u) for lv, u in links if lv.q is not None]
                if dt <= 0 or (not (qk < 1).any() and all(r >= 1 for r, _ in lq)):
                    continue
                g = m.new_int_var(0, R, f"G_{tag}_{k}")
                lows = [R * ys[i] for i in range(len(ys)) if qk[i] <= 0] + [R * u for r, u in lq if r <= 0]
                chain = [(float(qk[i]), ys[i]) for i in range(len(ys)) if 0 < qk[i] < 1]
                chain += [(r, u) for r, u in lq if 0 < r < 1]
                if chain:
                    prev = m.new_int_var(0, R, f"pi0_{tag}_{k}")
                    m.add(prev == R * p)
                    for mm, (qv, lit) in enumerate(chain):
                        f = int(math.ceil(qv * R))
                        pi = m.new_int_var(0, R, f"pi_{tag}_{k}_{mm}")
                        _pinned(m, pi, prev, f, lit)
                        m.add(pi == prev).only_enforce_if(~lit)
                        prev = pi
                    lows.append(R * p - prev)
                m.add_max_equality(g, lows)  # not empty: some q < 1
                exp_terms.append((dt / R, g))
        if j.cong is not None:  # the congestion of the domains it crosses
            exp_terms += _congestion(m, j, j.cong, tag, p, ys, zs)
        if j.shards is not None:
            chosen = None if start_alloc is None else start_modes(inst, j, start_alloc, start_shards.get(job.id, {}))
            exp_terms += _push_pull(m, scale, j, tag, p, xs, ys, zs, probs, shard_pairs, modes, chosen, hints)
        if j.time_limit_ms is not None:
            # a relaxed deadline row (coefficients down, limit up); the placement is
            # validated exactly afterwards
            D = 1e12 / max(j.time_limit_ms, 1e-9)
            m.add(sum(int(math.floor(c * D)) * v for c, v in exp_terms) <= int(math.ceil(j.time_limit_ms * D)))
        terms = [(scale.coef_floor(j.factor * c), v) for c, v in exp_terms]
        domain = [zs[h] for h, home in enumerate(j.homes) if home.domain is not None]
        if inst.locality_penalty != 1.0 and domain:  # two or more servers: the whole iteration F times
            doms = [list(v.proto.domain) for _, v in terms]  # (no negative index on the proto's field)
            ends = [(c * d[0], c * d[-1]) for (c, _), d in zip(terms, doms)]
            lo = sum(min(e) for e in ends)
            hi = sum(max(e) for e in ends)
            o = m.new_int_var(lo, hi, f"o_{tag}")
            m.add(o == sum(c * v for c, v in terms))
            num = int(math.floor(PENALTY_DEN * inst.locality_penalty))  # rounded down: a relaxation
            pen = m.new_int_var(lo, max(hi, -(-num * hi // PENALTY_DEN)), f"pen_{tag}")
            spread = m.new_bool_var(f"spread_{tag}")
            m.add(spread == sum(domain))
            m.add(pen >= o)
            m.add(PENALTY_DEN * pen >= num * o).only_enforce_if(spread)
            terms = [(1, pen)]
        obj_terms += terms
        weight_terms.append((int(round(j.weight * 1000)), p))
    # symmetry removed: interchangeable servers carry non-increasing loads in their order
    # (any placement can be permuted into this form, so the optimum is kept); CP-SAT proved
    # library/small/calm in 1.8 s with these rows, not in 20 s without
    for group in index.classes:
        if not all(per_server.get(sp) for sp in group):
            continue
        loads = [sum(v for _, v in per_server[sp]) for sp in group]
        for a, b in zip(loads, loads[1:]):
            m.add(a >= b)
    for sp in sorted(set(per_server) | set(shard_pairs)):
        add_capacity_rows(m, inst, sp, per_server.get(sp, []), shard_pairs.get(sp, []))
    for (sp, cls_i), vs in by_gpu_class(gpu_x):  # each class of GPUs holds its own
        m.add(sum(vs) <= len(index.gpu_classes[sp][cls_i]))
    for v, val in hints:
        m.add_hint(v, val)
    return m, x, placed, obj_terms, weight_terms, modes, gpu_x


def _push_pull(
    m: Any,
    scale: Scale,
    j: JobIndex,
    tag: str,
    p: Any,
    xs: list[Any],
    ys: list[Any],
    zs: list[Any],
    probs: Any,
    shard_pairs: dict[int, list[tuple[int, Any]]],
    modes: dict[int, list[list[Any]]],
    chosen: dict[int, int] | None,
    hints: list[tuple[Any, int]],
) -> list[tuple[float, Any]]:
    """A parameter-server job's shards by modes and its push/pull phase's expected maximum
    (as the MILP's, rounded as the compute phase is): ``(ms per unit, variable)`` terms."""
    R = CPSAT_PROB_UNITS
    sh = j.shards
    assert sh is not None
    us_all: list[list[Any]] = []
    count = []
    r: list[list[Any]] = []
    for k, sp in enumerate(sh.servers):
        u = [m.new_bool_var(f"u_{tag}_{k}_{i}") for i in range(len(sh.modes[k]))]
        us_all.append(u)
        if chosen is not None:
            hints += [(uv, int(chosen.get(k) == i)) for i, uv in enumerate(u)]
        m.add(sum(u) <= 1)
        for h in {mode[2] for mode in sh.modes[k]}:
            m.add(sum(uv for uv, mode in zip(u, sh.modes[k]) if mode[2] == h) <= zs[h])
        z = sum(mode[0] * uv for uv, mode in zip(u, sh.modes[k]))
        count.append(z)
        shard_pairs.setdefault(int(sp), []).append((j.jp, z))
        i = int(sh.local[k])
        if i >= 0:
            local = sum(mode[1] * uv for uv, mode in zip(u, sh.modes[k]) if mode[1])
            m.add(xs[i] >= local)
            m.add(xs[i] <= local + int(j.cap[i]) * (1 - sum(u)))
        rk = []
        for c in range(len(sh.values[k])):
            rc = m.new_bool_var(f"r_{tag}_{k}_{c}")
            m.add(rc == sum(uv for uv, mode in zip(u, sh.modes[k]) if mode[3] == c))
            rk.append(rc)
        r.append(rk)
    modes[j.jp] = us_all
    m.add(sum(count) == sh.total * p)
    if j.max_servers is not None:  # over the workers' and the shards' servers together
        union: dict[int, list[Any]] = {}
        for i, sp in enumerate(j.servers):
            union.setdefault(int(sp), []).append(ys[i])
        for k, sp in enumerate(sh.servers):
            union.setdefault(int(sp), []).extend(us_all[k])
        os_ = []
        for sp, parts in union.items():
            o = m.new_bool_var(f"o_{tag}_{sp}")
            for part in parts:
                m.add_implication(part, o)
            os_.append(o)
        m.add(sum(os_) <= j.max_servers)
    terms: list[tuple[float, Any]] = []
    if sh.scen is not None:
        for s, ps in enumerate(probs):
            hi = max(
                [
                    scale.time_floor(float(c) * float(sh.scen[k, s]))
                    for k in range(len(sh.servers))
                    for c in sh.values[k]
                ]
                + [0]
            )
            tau = m.new_int_var(0, hi, f"tau2_{tag}_{s}")
            lows = [0]
            for k in range(len(sh.servers)):
                for c, rc in zip(sh.values[k], r[k]):
                    v = scale.time_floor(float(c) * float(sh.scen[k, s]))
                    if v > 0:
                        lows.append(v * rc)
            m.add_max_equality(tau, lows)
            terms.append((float(ps) * scale.time_unit_ms, tau))
        return terms
    assert sh.t is not None and sh.dt is not None and sh.q is not None
    for t in range(len(sh.t)):
        dt = float(sh.dt[t])
        if dt <= 0:
            continue
        links = [[(float(q), rc) for q, rc in zip(sh.q[k][t], r[k]) if q < 1] for k in range(len(sh.servers))]
        if not any(links):
            continue
        g = m.new_int_var(0, R, f"G2_{tag}_{t}")
        prev = m.new_int_var(0, R, f"pi2_{tag}_{t}")
        m.add(prev == R * p)
        for k, link in enumerate(links):
            if not link:
                continue
            pi = m.new_int_var(0, R, f"pi2_{tag}_{t}_{k}")
            for q, rc in link:
                _pinned(m, pi, prev, int(math.ceil(q * R)), rc)
            # no slow mode of this shard chosen (at most one is): the product goes on
            off = m.new_bool_var(f"off2_{tag}_{t}_{k}")
            m.add(sum(rc for _, rc in link) + off == 1)
            m.add(pi == prev).only_enforce_if(off)
            prev = pi
        m.add(g == R * p - prev)
        terms.append((dt / R, g))
    return terms


def _congestion(
    m: Any, j: JobIndex, c: CongIndex, tag: str, p: Any, ys: list[Any], zs: list[Any]
) -> list[tuple[float, Any]]:
    """Job ``j``'s congestion cost as ``(ms per unit, variable)`` terms: the MILP's rows
    (:mod:`~placement.formulations.congestion`) in units of ``1/R``, every product rounded up
    (so the cost down: a relaxation) and every variable pinned to the value it stands for."""
    R = CPSAT_PROB_UNITS
    v = []
    for di, (units, holders) in enumerate(zip(c.units, c.holders)):
        vd = m.new_bool_var(f"cv_{tag}_{di}")
        zd = sum(zs[h] for h in holders)
        for i in units:
            m.add(vd >= ys[i] + zd - 1)
        m.add(vd <= zd)
        m.add(vd <= sum(ys[i] for i in units))
        v.append(vd)
    homes = sorted({h for hs in c.holders for h in hs if j.homes[h].comm_ms > 0})
    out: list[tuple[float, Any]] = []
    for k in range(len(c.dl)):
        hk = m.new_int_var(0, R, f"cH_{tag}_{k}")
        lows: list[Any] = [R * vd for di, vd in enumerate(v) if c.r[k, di] <= 0]
        chain = [(float(c.r[k, di]), vd) for di, vd in enumerate(v) if 0 < c.r[k, di] < 1]
        if chain:
            prev = m.new_int_var(0, R, f"cpi0_{tag}_{k}")
            m.add(prev == R * p)
            for mm, (rv, lit) in enumerate(chain):
                pi = m.new_int_var(0, R, f"cpi_{tag}_{k}_{mm}")
                _pinned(m, pi, prev, int(math.ceil(rv * R)), lit)
                m.add(pi == prev).only_enforce_if(~lit)
                prev = pi
            lows.append(R * p - prev)
        if not lows:
            continue
        m.add_max_equality(hk, lows)
        for h in homes:
            w = m.new_int_var(0, R, f"cz_{tag}_{k}_{h}")  # = hk where z_h, else 0
            m.add(w >= hk - R * (1 - zs[h]))
            m.add(w <= hk)
            m.add(w <= R * zs[h])
            out.append((j.homes[h].comm_ms * float(c.dl[k]) / R, w))
    return out


def _pinned(m: Any, pi: Any, prev: Any, f: int, lit: Any) -> None:
    """Where ``lit`` holds, ``pi`` is the running product ``prev * f / R`` of a chain of
    no-slowdown probabilities, rounded up in units of ``1/R`` (the caller pins ``pi == prev``
    where no factor applies).  Pinned from both sides: with upper bounds alone the optimum is
    the same (the objective wants every product as large as it may be), but CP-SAT then walks
    to it one unit of ``1/R`` per improving solution, thousands of them on a 3-server
    instance, and proved it only after 4-14 s (hypothesis examples of the parameter-server
    property test, 2026-12-06); the maxima (``tau``, ``G``) are pinned by
    ``add_max_equality`` for the same reason."""
    R = CPSAT_PROB_UNITS
    m.add(pi <= prev)
    m.add(R * pi <= f * prev + (R - 1)).only_enforce_if(lit)
    m.add(R * pi >= f * prev).only_enforce_if(lit)


def add_capacity_rows(
    m: Any, inst: Instance, sp: int, pairs: list[tuple[int, Any]], shard_pairs: list[tuple[int, Any]] | None = None
) -> None:
    """Server ``sp``'s GPU, CPU and memory rows over ``(job position, worker variable)`` and
    ``(job position, shard count)``, in the integer units of
    :func:`placement.problem.rules.demand_units` (exact at the capacity resolution; finer
    values are rounded against the placement)."""
    srv = inst.servers[sp]
    if pairs:
        m.add(sum(v for _, v in pairs) <= srv.free_gpus)
    for (field, per), (_, per_shard) in zip(RESOURCES, SHARD_RESOURCES):
        cap = getattr(srv, field)
        if cap is None:
            continue
        terms = [(getattr(inst.jobs[jp], per), v) for jp, v in pairs if getattr(inst.jobs[jp], per)]
        terms += [
            (getattr(inst.jobs[jp], per_shard), v) for jp, v in shard_pairs or [] if getattr(inst.jobs[jp], per_shard)
        ]
        if terms:
            m.add(sum(demand_units(c) * v for c, v in terms) <= capacity_units(cap))


STATUS_TABLE = {
    "OPTIMAL": Termination.OPTIMAL,
    "FEASIBLE": Termination.FEASIBLE,
    "INFEASIBLE": Termination.INFEASIBLE,
    "UNKNOWN": Termination.NO_SOLUTION,
    "MODEL_INVALID": Termination.ERROR,
}
"""CP-SAT's status names -> :class:`~placement.solving.backend.Termination` (any other: error)."""


class CpSatBackend:
    """CP-SAT on the exact model in integer units: builds, solves (two phases with
    ``best_effort``: most weight, then least objective at that weight) and maps back."""

    name = "cpsat"
    trust_status = False
    optimal_rtol = CPSAT_OPTIMAL_RTOL

    def version(self) -> str:
        return f"ortools {metadata.version('ortools')}"

    def run(
        self,
        instance: Instance,
        *,
        start: Assignment | None,
        cutoff: float | None,
        budget: Budget,
        seed: int,
        threads: int,
    ) -> BackendResult:
        from ortools.sat.python import cp_model

        index = index_instance(instance, cutoff=cutoff)
        path = list(index.notes)
        scale = Scale.for_index(index)
        ps_modelled = any(j.shards is not None for j in index.jobs)
        start_shards = complete_shards(instance, start, None) if start is not None and ps_modelled else None
        m, x, placed, obj_terms, weight_terms, modes, gpu_x = _build(index, scale, start, start_shards or {})
        notes = (
            f"time unit {scale.time_unit_ms:g} ms, probability unit {1 / CPSAT_PROB_UNITS:g}, "
            f"objective scale {scale.objective_scale:g}/ms"
        )
        exact = exact_in_units(instance)

        def solver() -> Any:
            s = cp_model.CpSolver()
            left = max(0.05, budget.left())
            s.parameters.max_time_in_seconds = left
            if budget.clock is not None and threads == 1:  # repeatable: CP-SAT's deterministic time
                s.parameters.max_deterministic_time = left
                s.parameters.max_time_in_seconds = WALL_SAFETY * left
            s.parameters.num_workers = threads
            s.parameters.random_seed = seed
            if threads > 1:
                s.parameters.interleave_search = True
            return s

        def termination(s: Any, code: Any) -> Termination:
            return STATUS_TABLE.get(s.status_name(code), Termination.ERROR)

        proven_w = True
        if budget.left() < MIN_SOLVE_S:  # the build took the limit: starting would overrun it
            path.append("no time left to start CP-SAT")
            return BackendResult(Termination.NO_SOLUTION, path=path, exact=exact, message=notes)
        if index.best_effort:
            m.maximize(sum(c * v for c, v in weight_terms))
            s1 = solver()
            t1 = termination(s1, interruptible_cpsat(s1, m))
            path.append(f"phase1(weight):{t1}")
            if t1 not in (Termination.OPTIMAL, Termination.FEASIBLE):
                return BackendResult(
                    Termination.NO_SOLUTION,
                    path=path,
                    exact=exact,
                    message="CP-SAT found no placement of the most weight",
                )
            best_w = int(round(s1.objective_value))
            proven_w = t1 is Termination.OPTIMAL
            m.clear_objective()
            m.add(sum(c * v for c, v in weight_terms) >= best_w)
            m.clear_hints()
            for v in x.values():
                m.add_hint(v, s1.value(v))
        m.minimize(sum(c * v for c, v in obj_terms))
        s = solver()
        t = termination(s, interruptible_cpsat(s, m))
        path.append(f"solve:{t}")
        if t not in (Termination.OPTIMAL, Termination.FEASIBLE):
            return BackendResult(t, path=path, exact=exact, weight_proven=proven_w, message=notes)
        assignment: dict[str, dict[str, int]] = {}
        for (jp, sp), v in x.items():
            k = int(s.value(v))
            if k > 0:
                assignment.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
        shards: dict[str, dict[str, int]] = {}
        for j in index.jobs:
            if j.shards is None or j.jp not in modes:
                continue
            for k, us in enumerate(modes[j.jp]):
                for mode, uv in zip(j.shards.modes[k], us):
                    if s.value(uv):
                        shards.setdefault(j.job_id, {})[instance.servers[int(j.shards.servers[k])].id] = mode[0]
        bound = float(s.best_objective_bound) / scale.objective_scale
        gpus = ids_of_counts(instance, index.gpu_classes, {key: int(s.value(v)) for key, v in gpu_x.items()})
        return BackendResult(
            t,
            assignment,
            bound=bound,
            weight_proven=proven_w,
            exact=exact,
            path=path,
            message=notes,
            shards=shards,
            gpus=gpus,
        )
