"""Exact MILP of expected slowest-worker time, through PuLP, with HiGHS (highspy) or CBC.

Per job: integer workers ``x`` and use indicators ``y`` on its servers, one *home*
``z`` (a server, or a bandwidth domain holding at least two of the job's servers) whose
all-reduce time is paid, and the expected maximum:

- scenario tables: ``tau_s >= a_n S_ns y_n`` only where ``a_n S_ns`` exceeds the job's
  floor in scenario ``s`` (sparse, no big-M); ``E = sum_s p_s tau_s``;
- independent distributions: ``E = sum_k dt_k G_k`` with ``G_k >= 1 - prod_{n used} q_nk``,
  the product written as an exact chain ``pi_m = pi_{m-1} - (1 - q_m) w_m``,
  ``w_m >= pi_{m-1} + y_m - 1`` (the McCormick envelope, exact for binary ``y``), and
  ``G_k >= y_n`` where ``q_nk = 0``.

Both are exact, so the solver's dual bound is a bound on the true objective up to the
solver's tolerances (HiGHS/CBC feasibility 1e-6, stopping gap ``MILP_GAP_REL``).  Admission
``best_effort`` is solved in two phases: most weight, then least objective at that weight.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from placement.formulations.chain import product_chain
from placement.formulations.congestion import milp_congestion
from placement.formulations.index import GpuLevel, ProblemIndex, by_gpu_class, index_instance, start_modes
from placement.formulations.milp_push_pull import push_pull
from placement.formulations.milp_solvers import pulp_solver
from placement.formulations.packing import disaggregate
from placement.formulations.quiet import native_stdout_silenced
from placement.model.records import Assignment, GpuChoice, Instance
from placement.model.tolerances import MILP_GAP_REL, SOLVER_FEASIBILITY_TOL, TIE_RTOL
from placement.problem.gpus import choose_gpus, counts_of_ids, ids_of_counts
from placement.problem.rules import RESOURCES, SHARD_RESOURCES
from placement.problem.shards import complete_shards
from placement.problem.topology import cluster_of
from placement.solving.backend import MIN_SOLVE_S, BackendResult, Termination
from placement.solving.budget import Budget

__all__ = ["MilpBackend", "build", "STATUS_TABLE", "HIGHS_START_WITH_MODES"]

HIGHS_START_WITH_MODES = False
"""Whether HiGHS gets the start on a model with shard modes (off: see :func:`_solve`)."""


@dataclass
class Built:
    prob: Any
    index: ProblemIndex
    x: dict[tuple[int, int], Any]
    placed: dict[int, Any]
    objective: Any
    weight: Any
    used: dict[tuple[int, int], Any]
    """Servers used per (job, unit): a binary, or for an aggregated class an expression."""
    ints: dict[int, tuple[list[Any], list[list[tuple[int, Any]]], list[Any]]]
    """Per job its integer decisions besides ``x``: use binaries, bits of servers used per
    unit, home binaries (to hand the solver a complete integer start)."""
    modes: dict[int, list[list[Any]]] = field(default_factory=dict)
    """Per parameter-server job modelled exactly: per shard server, its mode binaries."""
    counts: dict[int, dict[int, Any]] = field(default_factory=dict)
    """Per job with a fitted ``gamma``: one binary per count ``k >= 2`` of servers used."""
    gpus: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    """GPUs of each class a job holds on a server with per-GPU factors, by (job, server, class)."""
    levels: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    """Per (job, server) with per-GPU factors, its level binaries (:class:`GpuLevel`)."""


def build(index: ProblemIndex, name: str = "placement") -> Built:
    """The PuLP model of ``index`` (objective not yet set)."""
    import pulp

    prob = pulp.LpProblem(re.sub(r"\W", "_", name)[:40] or "placement", pulp.LpMinimize)
    inst = index.instance
    x: dict[tuple[int, int], Any] = {}
    used: dict[tuple[int, int], Any] = {}
    ints: dict[int, tuple[list[Any], list[list[tuple[int, Any]]], list[Any]]] = {}
    counts: dict[int, dict[int, Any]] = {}
    placed: dict[int, Any] = {}
    obj_terms: list[Any] = []
    weight_terms: list[Any] = []
    per_server: dict[int, list[tuple[int, Any]]] = {}
    shard_terms: dict[int, list[tuple[int, Any]]] = {}
    b_modes: dict[int, list[list[Any]]] = {}
    gpu_x: dict[tuple[int, int, int], Any] = {}
    gpu_levels: dict[tuple[int, int], list[Any]] = {}
    probs = index.scenario_probs
    for j in index.jobs:
        job = inst.jobs[j.jp]
        tag = f"j{j.jp}"
        p = pulp.LpVariable(f"placed_{tag}", cat="Binary") if index.best_effort else 1
        placed[j.jp] = p
        if len(j.servers) == 0 or not j.homes:
            if not index.best_effort:
                prob += pulp.LpConstraint(0, rhs=1, name=f"unplaceable_{tag}")
            else:
                prob += p == 0
            continue
        xs, ys, us = [], [], []
        bits: list[list[tuple[int, Any]]] = []
        for i, sp in enumerate(j.servers):
            xv = pulp.LpVariable(f"x_{tag}_{i}", 0, int(j.cap[i]) * j.umax(i), cat="Integer")
            yv = pulp.LpVariable(f"y_{tag}_{i}", cat="Binary")
            umax = j.umax(i)
            if umax == 1:
                uv: Any = yv
                bits.append([(1, yv)])
            else:
                # servers of the class used, in binary: the product of q over them is
                # the product of q^(2^l) over the bits set (exact)
                bl = [(2**l, pulp.LpVariable(f"b_{tag}_{i}_{l}", cat="Binary")) for l in range(umax.bit_length())]  # noqa: E741
                uv = pulp.lpSum(c * b for c, b in bl)
                prob += uv <= umax
                for _, b in bl:
                    prob += yv >= b
                prob += yv <= pulp.lpSum(b for _, b in bl)
                bits.append(bl)
            prob += xv <= int(j.cap[i]) * uv
            prob += xv >= uv
            if j.unit > 1:  # whole groups of a hybrid job
                gv = pulp.LpVariable(f"g_{tag}_{i}", 0, int(j.cap[i]) * umax // j.unit, cat="Integer")
                prob += xv == j.unit * gv
            xs.append(xv)
            ys.append(yv)
            us.append(uv)
            x[(j.jp, int(sp))] = xv
            used[(j.jp, int(sp))] = uv
            per_server.setdefault(int(sp), []).append((j.jp, xv))
        prob += pulp.lpSum(xs) == j.workers * p
        links: list[tuple[GpuLevel, Any]] = []  # the factor levels and their binaries
        for e in j.gpus:
            xg = [pulp.LpVariable(f"xg_{tag}_{e.i}_{c}", 0, n, cat="Integer") for c, _, n in e.classes]
            prob += pulp.lpSum(xg) == xs[e.i]
            for c, v in enumerate(xg):
                gpu_x[(j.jp, e.sp, c)] = v
            lvs = []
            for lv_i, lv in enumerate(e.levels):
                u = pulp.LpVariable(f"ul_{tag}_{e.i}_{lv_i}", cat="Binary")
                for c in lv.classes:
                    prob += xg[c] <= e.classes[c][2] * u
                links.append((lv, u))
                lvs.append(u)
            gpu_levels[(j.jp, e.sp)] = lvs
        if job.max_servers is not None:
            prob += pulp.lpSum(us) <= job.max_servers
        zs = [pulp.LpVariable(f"z_{tag}_{h}", cat="Binary") for h in range(len(j.homes))]
        ints[j.jp] = (ys, bits, zs)
        prob += pulp.lpSum(zs) == p
        covers: dict[int, list[Any]] = {}
        for h, home in enumerate(j.homes):
            for i in home.members:
                covers.setdefault(i, []).append(zs[h])
            if home.domain is not None and j.shards is None:
                prob += pulp.lpSum(us[i] for i in home.members) >= 2 * zs[h]
                for out in home.outside:  # the smallest domain holding the servers used
                    prob += zs[h] <= pulp.lpSum(ys[i] for i in out)
            elif home.domain is None and j.umax(home.members[0]) > 1:
                i = home.members[0]
                prob += us[i] <= 1 + (j.umax(i) - 1) * (1 - zs[h])
        for i, yv in enumerate(ys):
            prob += yv <= pulp.lpSum(covers.get(i, []))
        comm = pulp.lpSum(home.comm_ms * zs[h] for h, home in enumerate(j.homes) if home.comm_ms > 0)
        groups = j.gamma_groups()
        if groups:  # gamma 2 (k - 1) / k over the k servers used: one binary per count k >= 2
            cs = {k: pulp.LpVariable(f"k_{tag}_{k}", cat="Binary") for k in range(2, j.most_servers() + 1)}
            counts[j.jp] = cs
            single = [zs[h] for h, home in enumerate(j.homes) if home.domain is None]
            prob += pulp.lpSum(cs.values()) == pulp.lpSum(
                zs[h] for h, home in enumerate(j.homes) if home.domain is not None
            )
            prob += pulp.lpSum(us) == pulp.lpSum(single) + pulp.lpSum(k * c for k, c in cs.items())
            for gi, (gamma, hs) in enumerate(sorted(groups.items())):
                zg = pulp.lpSum(zs[h] for h in hs)
                for k, c in cs.items():
                    w = pulp.LpVariable(f"gw_{tag}_{gi}_{k}", 0, 1)  # = zg and c (exact for binaries)
                    prob += w >= zg + c - 1
                    prob += w <= zg
                    prob += w <= c
                    comm = comm + gamma * 2.0 * (k - 1) / k * w
        if j.cong is not None:  # the congestion of the domains it crosses, exact
            comm = comm + milp_congestion(prob, j, j.cong, tag, p, ys, zs)
        if probs is not None:
            assert j.scen_time is not None and j.scen_floor is not None
            taus = []
            for s, ps in enumerate(probs):
                tau = pulp.LpVariable(f"tau_{tag}_{s}", 0)
                prob += tau >= float(j.scen_floor[s]) * p
                for i in range(len(ys)):
                    v = float(j.scen_time[i, s])
                    if v > j.scen_floor[s] * (1 + TIE_RTOL):
                        prob += tau >= v * ys[i]
                for lv, u in links:
                    assert lv.scen_time is not None
                    prob += tau >= float(lv.scen_time[s]) * u
                taus.append(float(ps) * tau)
            expected = pulp.lpSum(taus)
        else:
            assert j.t is not None and j.dt is not None and j.q is not None
            terms = []
            for k in range(len(j.t)):
                qk = j.q[k]
                dt = float(j.dt[k])
                if dt <= 0:
                    continue
                lq = [(float(lv.q[k]), u) for lv, u in links if lv.q is not None]
                if not (qk < 1).any() and all(r >= 1 for r, _ in lq):
                    continue  # no used server can reach t_k: P(X >= t_k) = 0
                g = pulp.LpVariable(f"G_{tag}_{k}", 0, 1)
                for i in range(len(ys)):
                    if qk[i] <= 0:
                        prob += g >= ys[i]
                for r, u in lq:
                    if r <= 0:
                        prob += g >= u
                chain = [(float(qk[i]) ** c, b) for i in range(len(ys)) if 0 < qk[i] < 1 for c, b in bits[i]]
                chain += [(r, u) for r, u in lq if 0 < r < 1]
                if chain:
                    prob += g >= p - product_chain(prob, p, chain, f"_{tag}_{k}")
                terms.append(dt * g)
            expected = pulp.lpSum(terms)
        # valid rows that tighten the relaxation (the transportation LP's, per job): the
        # expected maximum is at least the workers' average, each used server's expectation,
        # and on a domain home (two or more servers) the spread bound
        score = [float(v) for v in j.score]
        prob += expected >= pulp.lpSum(score[i] / j.workers * xs[i] for i in range(len(xs)))
        for i, yv in enumerate(ys):
            prob += expected >= score[i] * yv
        if j.shards is None and j.spread_ms > 0:
            domain = [zs[h] for h, home in enumerate(j.homes) if home.domain is not None]
            if domain:
                prob += expected >= j.spread_ms * pulp.lpSum(domain)
        if j.shards is not None:
            expected = expected + push_pull(prob, j, tag, p, xs, ys, zs, probs, shard_terms, b_modes)
        total = expected + comm
        domain = [zs[h] for h, home in enumerate(j.homes) if home.domain is not None]
        if inst.locality_penalty != 1.0 and domain:  # two or more servers: the whole iteration F times
            pen = pulp.LpVariable(f"pen_{tag}", 0)
            big = inst.locality_penalty * j.upper_ms
            prob += pen >= total
            prob += pen >= inst.locality_penalty * total - big * (1 - pulp.lpSum(domain))
            total = pen
        if j.time_limit_ms is not None:
            prob += total <= j.time_limit_ms
        obj_terms.append(j.factor * total)
        weight_terms.append(j.weight * p)
    for (sp, cls_i), vs in by_gpu_class(gpu_x):  # each class of GPUs holds its own
        prob += pulp.lpSum(vs) <= len(index.gpu_classes[sp][cls_i])
    # no symmetry rows here: HiGHS detects the symmetry itself and proved library/small/calm in
    # 0.7 s without them, 1.5 s with them (CP-SAT, which gains from them, has them)
    for sp in sorted(set(per_server) | set(shard_terms)):
        srv = inst.servers[sp]
        pairs = per_server.get(sp, [])
        n = len(index.units.get(sp, (sp,)))  # an aggregated class pools its capacity
        if pairs:
            prob += pulp.lpSum(v for _, v in pairs) <= n * srv.free_gpus
        for (res, per), (_, per_shard) in zip(RESOURCES, SHARD_RESOURCES):
            cap = getattr(srv, res)
            terms = [getattr(inst.jobs[jp], per) * v for jp, v in pairs if getattr(inst.jobs[jp], per)]
            terms += [
                getattr(inst.jobs[jp], per_shard) * v
                for jp, v in shard_terms.get(sp, [])
                if getattr(inst.jobs[jp], per_shard)
            ]
            if cap is not None and terms:
                prob += pulp.lpSum(terms) <= n * cap
    return Built(
        prob,
        index,
        x,
        placed,
        pulp.lpSum(obj_terms),
        pulp.lpSum(weight_terms),
        used,
        ints,
        b_modes,
        counts,
        gpu_x,
        gpu_levels,
    )


STATUS_TABLE: dict[tuple[int, int], Termination] = {
    (1, 1): Termination.OPTIMAL,  # LpStatusOptimal, LpSolutionOptimal
    (1, 2): Termination.FEASIBLE,  # LpStatusOptimal, LpSolutionIntegerFeasible: stopped on a limit
    (-1, -1): Termination.INFEASIBLE,
    (-1, 0): Termination.INFEASIBLE,
    (0, 0): Termination.NO_SOLUTION,  # not solved (time limit, no incumbent)
    (-2, -2): Termination.ERROR,  # unbounded: a modelling error, never expected
    (-3, 0): Termination.ERROR,
}
"""PuLP's ``(status, sol_status)`` -> :class:`~placement.solving.backend.Termination` (any
other pair: error).  ``sol_status`` is the one that tells "integer feasible"."""


class _NoTimeLeft(Exception):
    """The build left less than :data:`MIN_SOLVE_S` of the limit."""


def _bound(backend: str, b: Built, log: str | None, status: Termination) -> float | None:
    if backend == "highs":
        try:
            v = float(b.prob.solverModel.getInfo().mip_dual_bound)
        except Exception:  # pragma: no cover - depends on the highspy build
            return None
        return v if math.isfinite(v) else None
    if log is None or not os.path.exists(log):
        return None
    text = Path(log).read_text(encoding="utf-8", errors="replace")
    m = re.findall(r"Lower bound:\s*([-+0-9.eE]+)", text)
    if m:
        return float(m[-1])
    if status is Termination.OPTIMAL:
        m = re.findall(r"Objective value:\s*([-+0-9.eE]+)", text)
        if m:
            return float(m[-1])
    return None


def _agrees(backend: str, b: Built, holds: float, path: list[str]) -> bool:
    """Whether the solver's incumbent objective is that of the solution it returned,
    ``holds`` (HiGHS 1.16 handed a start has reported one below it; CBC: not checked)."""
    if backend != "highs":
        return True
    said = float(b.prob.solverModel.getInfo().objective_function_value)
    if abs(said - holds) <= MILP_GAP_REL * max(1.0, abs(holds)) + SOLVER_FEASIBILITY_TOL:
        return True
    path.append(f"HiGHS reported {said:.9g} for a solution worth {holds:.9g}")
    return False


def _solve(
    index: ProblemIndex, backend: str, t_end: float, threads: int, start: Assignment | None, path: list[str]
) -> tuple[Termination, Built, float | None, bool]:
    """Build and solve ``index``: (termination, model, solver bound, weight proven)."""
    import pulp

    t0 = time.monotonic()
    b = build(index, index.instance.name)
    # HiGHS 1.16 handed a start on a model with shard modes has reported an incumbent
    # objective below the model's optimum for the start's own columns (found on random tiny
    # parameter-server instances), and on models with GPU classes (random tiny instances with
    # per-GPU factors, best-effort: weight 5 said for a start worth 3): such models are solved
    # without a start by HiGHS
    warm = backend != "highs" or ((not b.modes or HIGHS_START_WITH_MODES) and not b.gpus)
    if start is not None and warm:
        _warm(b, index.instance, start, complete_shards(index.instance, start, None) if b.modes else None)
    # PuLP hands the model to the solver (and reads the solution back) after the solver's
    # clock is set: about 0.5x our build time on large models, kept off the solver's limit
    overhead = 0.6 * (time.monotonic() - t0)
    t_end -= overhead
    log = None
    if backend == "cbc":
        fd, log = tempfile.mkstemp(prefix="placement-cbc-", suffix=".log")
        os.close(fd)

    def termination() -> Termination:
        return STATUS_TABLE.get((b.prob.status, b.prob.sol_status), Termination.ERROR)

    def run(with_start: bool) -> None:
        """Solve; CBC 2.10 has crashed (SIGSEGV) on a time limit with a start: then once
        more without the start.  With less than :data:`MIN_SOLVE_S` left (the build took
        the limit) the solver is not started: its start-up alone would overrun the limit."""
        if t_end - time.monotonic() < MIN_SOLVE_S:
            raise _NoTimeLeft
        try:
            with native_stdout_silenced():
                b.prob.solve(pulp_solver(backend, t_end - time.monotonic(), threads, log, with_start))
        except pulp.PulpSolverError:
            if not with_start or time.monotonic() > t_end - 0.1:
                raise
            path.append(f"{backend} failed with the start: again without it")
            with native_stdout_silenced():
                b.prob.solve(pulp_solver(backend, t_end - time.monotonic(), threads, log, False))

    try:
        proven_w = True
        if index.best_effort:
            b.prob.setObjective(-1 * b.weight)
            run(warm and start is not None)
            st = termination()
            path.append(f"phase1(weight):{st}")
            if st not in (Termination.OPTIMAL, Termination.FEASIBLE):
                return st, b, None, False
            w_star = float(pulp.value(b.weight) or 0.0)
            proven_w = st is Termination.OPTIMAL and _agrees(backend, b, -w_star, path)
            b.prob += b.weight >= w_star - SOLVER_FEASIBILITY_TOL, "keep_weight"
        b.prob.setObjective(b.objective)
        for attempt in (warm, False):
            run(attempt)
            st = termination()
            path.append(f"{'phase2(objective)' if index.best_effort else 'solve'}:{st}")
            if backend != "highs" or st not in (Termination.OPTIMAL, Termination.FEASIBLE):
                break
            if _agrees(backend, b, float(pulp.value(b.objective) or 0.0), path):
                break
            # a solver whose incumbent is not the solution it returns proves nothing: once
            # more without a start, else the solution without status or bound
            if not attempt or time.monotonic() > t_end - 0.1:
                path.append("status and bound dropped")
                return Termination.FEASIBLE, b, None, False
        return st, b, (None if st is Termination.INFEASIBLE else _bound(backend, b, log, st)), proven_w
    except pulp.PulpSolverError as e:
        path.append(f"{backend} failed: {e}")
        return Termination.ERROR, b, None, False
    except _NoTimeLeft:
        path.append(f"no time left to start {backend}")
        return Termination.NO_SOLUTION, b, None, False
    finally:
        if log and os.path.exists(log):
            os.unlink(log)


class MilpBackend:
    """The exact MILP through PuLP, solved by HiGHS (``"highs"``) or CBC (``"cbc"``).

    Aggregates interchangeable servers into classes (``aggregate``), hands the solver the
    start as its first incumbent (``warm``), solves, and maps back to servers, falling back
    on the unaggregated model when a class cannot be packed.  ``aggregate``/``warm`` off
    give the plain model (for ``placement.bench reductions``)."""

    trust_status = True
    optimal_rtol = MILP_GAP_REL

    def __init__(self, solver: str, *, aggregate: bool = True, warm: bool = True) -> None:
        if solver not in ("highs", "cbc"):
            raise ValueError(f"The 'solver' parameter of MilpBackend must be 'highs' or 'cbc'. Got {solver!r} instead.")
        self.solver, self.aggregate, self.warm = solver, aggregate, warm
        self.name = f"milp_{solver}"

    def version(self) -> str:
        import pulp

        return f"pulp {pulp.__version__}, " + (
            f"highspy {metadata.version('highspy')}" if self.solver == "highs" else "CBC (bundled with PuLP)"
        )

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
        index = index_instance(instance, cutoff=cutoff, aggregate=self.aggregate)
        path = list(index.notes)
        bound: float | None = None
        assignment = None
        shards: Assignment | None = None
        gpus: GpuChoice | None = None
        while True:
            st, b, solver_bound, proven_w = _solve(
                index, self.solver, time.monotonic() + budget.left(), threads, start if self.warm else None, path
            )
            if solver_bound is not None:
                bound = solver_bound if bound is None else max(bound, solver_bound)
            if st not in (Termination.OPTIMAL, Termination.FEASIBLE):
                break
            assignment, hard = _extract(b, instance)
            shards = _shards(b, instance) if assignment is not None else None
            gpus = _gpus(b, instance) if assignment is not None else None
            if hard:
                path.append(f"{len(hard)} class(es) packed by CP-SAT")
            if assignment is not None or not index.units or budget.left() < 0.5:
                break
            path.append("a class could not be packed: unaggregated model")
            index = index_instance(instance, cutoff=cutoff, aggregate=False)
        return BackendResult(st, assignment, bound=bound, weight_proven=proven_w, path=path, shards=shards, gpus=gpus)


def _warm(b: Built, instance: Instance, start: Assignment, shards: Assignment | None) -> None:
    """Initial values of every integer variable from ``start`` and its ``shards`` (workers,
    use, bits of the servers used per class, home, shard modes); the solver completes the
    continuous ones."""
    units = b.index.units
    cl = cluster_of(instance)
    # the start's GPUs on the factored servers, chosen for the whole start (the rule's)
    held = counts_of_ids(instance, b.index.gpu_classes, choose_gpus(instance, start)) if b.gpus else {}
    for j in b.index.jobs:
        alloc = start.get(j.job_id, {})
        if j.jp not in b.ints:
            continue
        ys, bits, zs = b.ints[j.jp]
        if b.index.best_effort:
            b.placed[j.jp].setInitialValue(1 if alloc else 0)
        for i, sp in enumerate(j.servers):
            members = units.get(int(sp), (int(sp),))
            ks = [int(alloc.get(instance.servers[m].id, 0)) for m in members]
            b.x[(j.jp, int(sp))].setInitialValue(sum(ks))
            u = sum(1 for k in ks if k > 0)
            ys[i].setInitialValue(1 if u else 0)
            if len(bits[i]) > 1 or bits[i][0][1] is not ys[i]:
                for c, bv in bits[i]:
                    bv.setInitialValue(1 if u & c else 0)
        for (jp, sp, c), v in b.gpus.items():
            if jp == j.jp:
                v.setInitialValue(held.get((jp, sp, c), 0))
        for (jp, sp), lvs in b.levels.items():
            if jp != j.jp:
                continue
            e = next(e for e in j.gpus if e.sp == sp)
            for lv, u in zip(e.levels, lvs):
                u.setInitialValue(int(any(held.get((jp, sp, c), 0) > 0 for c in lv.classes)))
        if not alloc or not zs:
            continue
        zalloc = {instance.server_pos[sid]: k for sid, k in (shards or {}).get(j.job_id, {}).items() if k > 0}
        every = set(alloc) | {instance.servers[sp].id for sp in zalloc}
        if len(every) == 1:
            sp = instance.server_pos[next(iter(every))]
            rep = next((int(r) for r in j.servers if sp in units.get(int(r), (int(r),))), None)
            want = [
                h
                for h, home in enumerate(j.homes)
                if home.domain is None and rep is not None and int(j.servers[home.members[0]]) == rep
            ]
        else:
            d = cl.domain_of(sorted(every))
            want = [h for h, home in enumerate(j.homes) if d is not None and home.domain == d.index]
        for h, zv in enumerate(zs):
            zv.setInitialValue(1 if want and h == want[0] else 0)
        for k, cv in b.counts.get(j.jp, {}).items():
            used_servers = sum(1 for v in alloc.values() if v > 0)
            cv.setInitialValue(1 if used_servers == k and want and j.homes[want[0]].domain is not None else 0)
        if j.jp in b.modes:
            chosen = start_modes(instance, j, alloc, (shards or {}).get(j.job_id, {}))
            for m, us in enumerate(b.modes[j.jp]):
                for k, uv in enumerate(us):
                    uv.setInitialValue(1 if chosen.get(m) == k else 0)


def _shards(b: Built, instance: Instance) -> Assignment:
    """The shards of the parameter-server jobs the model placed, from their modes."""
    out: dict[str, dict[str, int]] = {}
    for j in b.index.jobs:
        if j.jp not in b.modes or j.shards is None:
            continue
        for m, us in enumerate(b.modes[j.jp]):
            for mode, uv in zip(j.shards.modes[m], us):
                if (uv.varValue or 0.0) > 0.5:
                    out.setdefault(j.job_id, {})[instance.servers[int(j.shards.servers[m])].id] = mode[0]
    return out


def _gpus(b: Built, instance: Instance) -> GpuChoice:
    """The GPUs the model chose on the servers with per-GPU factors."""
    counts = {key: int(round(v.varValue or 0.0)) for key, v in b.gpus.items()}
    return ids_of_counts(instance, b.index.gpu_classes, counts)


def _extract(b: Built, instance: Instance) -> tuple[dict[str, dict[str, int]] | None, list[int]]:
    """The solution on servers (``None`` if an aggregated class cannot be packed) and the
    classes that needed the exact packing."""
    import pulp

    units = b.index.units
    plain: dict[tuple[int, int], int] = {}
    counts: dict[tuple[int, int], tuple[int, int]] = {}
    for key, v in b.x.items():
        k = int(round(v.varValue or 0.0))
        if key[1] in units:
            counts[key] = (k, int(round(pulp.value(b.used[key]) or 0.0)))
        else:
            plain[key] = k
    return disaggregate(instance, b.index, counts, plain)
