"""Exact CP-SAT model of expected slowest-worker time (OR-Tools).

The same formulation as :mod:`placement.formulations.milp`, in integers.  All scaling
happens in :class:`Scale`, and every rounding goes the way that keeps the integer model a
*relaxation* of the true one, so that CP-SAT's best bound, scaled back, is a valid lower
bound on the true objective:

- times are integers in units of ``time_unit_ms`` (a power of ten with the largest time
  at most 10^6 units); compute-time coefficients are rounded down;
- probabilities are integers in units of ``1/PROB_UNITS``; the product chain
  ``pi_m <= ceil(pi_{m-1} ceil(q R) / R)`` rounds up the probability that the job's
  maximum stays below a point, hence down its complement;
- objective coefficients are rounded down after scaling by ``objective_scale``.

The placement CP-SAT returns is re-evaluated exactly; ``optimal`` is claimed only when
CP-SAT proved optimality *and* the exact objective is within ``OPTIMAL_RTOL`` of the
scaled-back bound.  Determinism: one worker by default (``threads=1``), deterministic for
a seed when the run ends before the wall-clock limit; with ``threads > 1`` the workers run
``interleave_search``, CP-SAT's deterministic schedule.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from placement.formulations.index import ProblemIndex, index_instance
from placement.model import Assignment, Instance
from placement.registry import Options, Outcome

__all__ = ["cpsat", "Scale", "PROB_UNITS", "OPTIMAL_RTOL"]

PROB_UNITS = 10**4
"""Probability resolution of the product chain and of ``P(max >= t)``: 1e-4.  Finer units make
the domains too large for CP-SAT to prove optimality (1e-5: 20 s without proof on a
4-server instance that 1e-4 proves in 5 s)."""
OPTIMAL_RTOL = 1e-4
"""Largest relative distance between exact objective and bound for ``optimal``."""
_MAX_ACTIVITY = 2**61


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
        k = _MAX_ACTIVITY / max(1.0, biggest * n_terms)
        scale = 10.0 ** math.floor(math.log10(k)) if k > 0 else 1.0
        return cls(unit, min(scale, 1e12))

    def time_floor(self, ms: float) -> int:
        return int(math.floor(ms / self.time_unit_ms + 1e-9))

    def coef_floor(self, x: float) -> int:
        return int(math.floor(x * self.objective_scale + 1e-9)) if x > 0 else 0


def _build(index: ProblemIndex, scale: Scale, start: Assignment | None):
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    inst = index.instance
    R = PROB_UNITS
    x: dict[tuple[int, int], object] = {}
    placed: dict[int, object] = {}
    obj_terms: list[tuple[int, object]] = []
    weight_terms: list[tuple[int, object]] = []
    per_server: dict[int, list[tuple[int, object]]] = {}
    hints: list[tuple[object, int]] = []
    probs = index.scenario_probs
    for j in index.jobs:
        job = inst.jobs[j.jp]
        tag = f"j{j.jp}"
        start_alloc = None if start is None else start.get(job.id, {})
        if index.best_effort:
            p = m.NewBoolVar(f"placed_{tag}")
            if start_alloc is not None:
                hints.append((p, 1 if start_alloc else 0))
        else:
            p = m.NewConstant(1)
        placed[j.jp] = p
        if len(j.servers) == 0 or not j.homes:
            m.Add(p == 0)
            continue
        xs, ys = [], []
        for i, sp in enumerate(j.servers):
            xv = m.NewIntVar(0, int(j.cap[i]), f"x_{tag}_{i}")
            yv = m.NewBoolVar(f"y_{tag}_{i}")
            m.Add(xv <= int(j.cap[i]) * yv)
            m.Add(xv >= yv)
            xs.append(xv)
            ys.append(yv)
            x[(j.jp, int(sp))] = xv
            per_server.setdefault(int(sp), []).append((j.jp, xv))
            if start_alloc is not None:
                k = int(start_alloc.get(inst.servers[int(sp)].id, 0))
                hints += [(xv, k), (yv, int(k > 0))]
        m.Add(sum(xs) == j.workers * p)
        if job.max_servers is not None:
            m.Add(sum(ys) <= job.max_servers)
        zs = [m.NewBoolVar(f"z_{tag}_{h}") for h in range(len(j.homes))]
        m.Add(sum(zs) == p)
        covers: dict[int, list[object]] = {}
        for h, home in enumerate(j.homes):
            for i in home.members:
                covers.setdefault(i, []).append(zs[h])
            if home.domain is not None:
                m.Add(sum(ys[i] for i in home.members) >= 2 * zs[h])
        for i, yv in enumerate(ys):
            m.Add(yv <= sum(covers.get(i, [])))
        # E[T_j] + C_j in ms, as (ms per unit of the variable, variable)
        exp_terms: list[tuple[float, object]] = [(home.comm_ms, zs[h]) for h, home in enumerate(j.homes) if home.comm_ms > 0]
        if probs is not None:
            assert j.scen_time is not None and j.scen_floor is not None
            for s, ps in enumerate(probs):
                hi = max(scale.time_floor(float(j.scen_time[:, s].max())), 0)
                tau = m.NewIntVar(0, hi, f"tau_{tag}_{s}")
                m.Add(tau >= scale.time_floor(float(j.scen_floor[s])) * p)
                for i in range(len(ys)):
                    v = float(j.scen_time[i, s])
                    if v > j.scen_floor[s] * (1 + 1e-12):
                        m.Add(tau >= scale.time_floor(v) * ys[i])
                exp_terms.append((float(ps) * scale.time_unit_ms, tau))
        else:
            assert j.t is not None and j.dt is not None and j.q is not None
            for k in range(len(j.t)):
                qk = j.q[k]
                dt = float(j.dt[k])
                if dt <= 0 or not (qk < 1).any():
                    continue
                g = m.NewIntVar(0, R, f"G_{tag}_{k}")
                for i in range(len(ys)):
                    if qk[i] <= 0:
                        m.Add(g >= R * ys[i])
                chain = [i for i in range(len(ys)) if 0 < qk[i] < 1]
                if chain:
                    prev = m.NewIntVar(0, R, f"pi0_{tag}_{k}")
                    m.Add(prev == R * p)
                    for mm, i in enumerate(chain):
                        f = int(math.ceil(float(qk[i]) * R))
                        pi = m.NewIntVar(0, R, f"pi_{tag}_{k}_{mm}")
                        m.Add(pi <= prev)
                        m.Add(R * pi <= f * prev + (R - 1)).OnlyEnforceIf(ys[i])
                        prev = pi
                    m.Add(g >= R * p - prev)
                exp_terms.append((dt / R, g))
        if j.time_limit_ms is not None:
            # a relaxed deadline row (coefficients down, limit up); the placement is
            # validated exactly afterwards
            D = 1e12 / max(j.time_limit_ms, 1e-9)
            m.Add(sum(int(math.floor(c * D)) * v for c, v in exp_terms) <= int(math.ceil(j.time_limit_ms * D)))
        terms = [(scale.coef_floor(j.factor * c), v) for c, v in exp_terms]
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
            m.Add(a >= b)
    for sp, pairs in per_server.items():
        add_capacity_rows(m, inst, sp, pairs)
    for v, val in hints:
        m.AddHint(v, val)
    return m, x, placed, obj_terms, weight_terms


def add_capacity_rows(m: Any, inst: Instance, sp: int, pairs: list[tuple[int, Any]]) -> None:
    """Server ``sp``'s GPU, CPU and memory rows over ``(job position, worker variable)``:
    exact at a resolution of 1e-6 (values with more decimals are rounded against the
    placement: demand up, capacity down)."""
    srv = inst.servers[sp]
    m.Add(sum(v for _, v in pairs) <= srv.free_gpus)
    S = 10**6
    for cap, attr in ((srv.cpus, "cpus_per_worker"), (srv.memory_gb, "memory_gb_per_worker")):
        if cap is None:
            continue
        terms = [(getattr(inst.jobs[jp], attr), v) for jp, v in pairs if getattr(inst.jobs[jp], attr)]
        if terms:
            m.Add(sum(int(math.ceil(c * S - 1e-6)) * v for c, v in terms) <= int(math.floor(cap * S + 1e-6)))


def _micro(x: float | None) -> bool:
    return x is None or abs(x * 10**6 - round(x * 10**6)) <= 1e-6


def _exact_capacities(instance: Instance) -> bool:
    """CPU and memory rows are exact when every value has at most 6 decimals."""
    return all(_micro(s.cpus) and _micro(s.memory_gb) for s in instance.servers) and all(
        _micro(j.cpus_per_worker) and _micro(j.memory_gb_per_worker) for j in instance.jobs
    )


def cpsat(instance: Instance, opts: Options) -> Outcome:
    from ortools import __version__ as ortools_version
    from ortools.sat.python import cp_model

    t_end = opts.deadline if opts.deadline else time.monotonic() + opts.time_limit_s
    start = opts.start
    path = ["cpsat"]
    if start is None:
        from placement.heuristics import greedy

        g = greedy(instance, opts)
        start = g.assignment
        path.append("hint:greedy" if start is not None else "hint:none")
    from placement.evaluate import evaluate

    # candidates that cannot beat the hint are pruned; the hint itself stays feasible
    cutoff = evaluate(instance, start).objective if start is not None and instance.admission == "all" else None
    index = index_instance(instance, cutoff=cutoff)
    path += index.notes
    scale = Scale.for_index(index)
    m, x, placed, obj_terms, weight_terms = _build(index, scale, start)
    version = f"ortools {ortools_version}"
    notes = f"time unit {scale.time_unit_ms:g} ms, probability unit 1e-4, objective scale {scale.objective_scale:g}/ms"

    def solver(left: float):
        s = cp_model.CpSolver()
        s.parameters.max_time_in_seconds = max(0.05, left)
        s.parameters.num_workers = opts.threads
        s.parameters.random_seed = opts.seed
        if opts.threads > 1:
            s.parameters.interleave_search = True
        return s

    if index.best_effort:
        m.Maximize(sum(c * v for c, v in weight_terms))
        s1 = solver(t_end - time.monotonic())
        st1 = s1.Solve(m)
        path.append(f"phase1(weight):{s1.StatusName(st1)}")
        if st1 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Outcome(start, path=path, backend="cpsat", backend_version=version,
                           message="CP-SAT found no placement; returned the hint" if start else "no placement found")
        best_w = int(round(s1.ObjectiveValue()))
        proven_w = st1 == cp_model.OPTIMAL
        m.ClearObjective()
        m.Add(sum(c * v for c, v in weight_terms) >= best_w)
        m.ClearHints()
        for v in x.values():
            m.AddHint(v, s1.Value(v))
    m.Minimize(sum(c * v for c, v in obj_terms))
    s = solver(t_end - time.monotonic())
    st = s.Solve(m)
    path.append(f"solve:{s.StatusName(st)}")
    if st == cp_model.INFEASIBLE and cutoff is not None:
        # the hint lies in the pruned model; only the rounding of a deadline row gets here
        return Outcome(start, path=path + ["returned hint"], backend="cpsat", backend_version=version,
                       message="the pruned model was reported infeasible; returned the hint")
    if st == cp_model.INFEASIBLE:
        # the integer model only relaxes the objective; capacities are exact or stricter
        return Outcome(None, infeasible=_exact_capacities(instance) and not index.best_effort, path=path,
                       backend="cpsat", backend_version=version)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Outcome(start, path=path + (["returned hint"] if start else []), backend="cpsat", backend_version=version,
                       message=f"CP-SAT ended {s.StatusName(st)}" + ("; returned the hint" if start else ""))
    assignment: dict[str, dict[str, int]] = {}
    for (jp, sp), v in x.items():
        k = int(s.Value(v))
        if k > 0:
            assignment.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
    bound = float(s.BestObjectiveBound()) / scale.objective_scale
    if cutoff is not None:
        bound = min(bound, cutoff)  # pruned placements are no better than the hint
    from placement.validate import validate

    if validate(instance, assignment):
        # only a relaxed deadline row can let this happen: fall back to the hint
        path.append("invalid after rounding: returned hint")
        return Outcome(start, bound=bound if not index.best_effort else None, path=path, backend="cpsat",
                       backend_version=version, message=notes)
    from placement.solve import best_placement

    if best_placement(instance, assignment, start)[0] == 1:
        path.append("hint better than incumbent: returned hint")
        assignment = {j: dict(a) for j, a in start.items()}  # type: ignore[union-attr]
    true = evaluate(instance, assignment).objective
    optimal = (st == cp_model.OPTIMAL and true - bound <= OPTIMAL_RTOL * max(1.0, abs(true))
               and _exact_capacities(instance))
    if index.best_effort:
        optimal = optimal and proven_w
        bound = bound if optimal else None
    msg = notes
    if st == cp_model.OPTIMAL and not optimal and not index.best_effort:
        msg += f"; CP-SAT optimal for the integer model, exact gap {true - bound:.3g} above tolerance"
    return Outcome(assignment, optimal=optimal, bound=bound, path=path, backend="cpsat", backend_version=version, message=msg)
