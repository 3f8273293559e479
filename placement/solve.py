"""``placement.solve``: run a method, then validate and evaluate what it returns.

Whatever the method, the returned :class:`~placement.model.Solution` holds only numbers
the evaluator computed, a placement the validator accepted, and a bound only when it is
valid for the true objective.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from importlib import metadata

import numpy as np

from placement.errors import MethodUnavailableError
from placement.evaluate import evaluate, job_lower_bound, lower_bound
from placement.model import Assignment, Instance, Solution, Status
from placement.registry import Options, Outcome, get_method
from placement.validate import validate

__all__ = ["solve", "infeasibility_reason", "auto_method", "AUTO_BRUTE_FORCE_SIZE"]

BOUND_RTOL = 1e-6
"""A backend's bound above the exact objective by at most this (relative) is the
solvers' tolerance (HiGHS/CBC gap and feasibility 1e-6) and is clipped to the objective;
further above, it is dropped as not a bound."""

AUTO_BRUTE_FORCE_SIZE = 20_000
"""``auto`` enumerates when the search space (product of per-job allocation counts) is below this."""


def _version() -> str:
    try:
        return metadata.version("placement")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def infeasibility_reason(instance: Instance) -> str | None:
    """A short proof that no placement places every job, or ``None`` if none is found.

    Necessary conditions only (admission ``all``): a job with no usable server set
    (allowed servers, one connected component, ``max_servers``), total GPU/CPU/memory
    demand above supply, or a deadline that even the job's lower bound misses.
    """
    if instance.admission != "all" or not instance.jobs:
        return None
    from placement.state import State

    st = State(instance)
    for jp, job in enumerate(instance.jobs):
        allowed = st.allowed(jp)
        rooms = st.room(jp, allowed) if len(allowed) else np.zeros(0, dtype=np.int64)
        best = 0
        for comp in set(st.component[allowed].tolist()):
            r = np.sort(rooms[st.component[allowed] == comp])[::-1]
            if job.max_servers is not None:
                r = r[: job.max_servers]
            best = max(best, int(r.sum()))
        if best < job.workers:
            return (
                f"job {job.id!r} needs {job.workers} GPUs but at most {best} fit on the servers it may use "
                "together (allowed types/servers, one connected component, max_servers, CPU/memory)"
            )
        if job.deadline_s is not None:
            lb = job_lower_bound(instance, jp) * (job.iterations or 0) / 1000.0
            if lb > job.deadline_s * (1 + 1e-9):
                return f"job {job.id!r} cannot meet its deadline {job.deadline_s:g} s: even its lower bound takes {lb:.6g} s"
    need = sum(j.workers for j in instance.jobs)
    have = int(st.gpus.sum())
    if need > have:
        return f"the jobs need {need} GPUs, the cluster has {have} free"
    for attr, per, cap in (("CPUs", "cpus_per_worker", st.cpus), ("GB of memory", "memory_gb_per_worker", st.mem)):
        demand = sum(j.workers * (getattr(j, per) or 0.0) for j in instance.jobs)
        supply = float(cap.sum())
        if math.isfinite(supply) and demand > supply * (1 + 1e-9):
            return f"the jobs need {demand:g} {attr}, the cluster has {supply:g}"
    return None


def _objective(instance: Instance, assignment: Assignment | None) -> tuple[float, float]:
    """Lexicographic key (smaller is better): (-weight placed, objective); invalid: inf."""
    if assignment is None or validate(instance, assignment):
        return (math.inf, math.inf)
    ev = evaluate(instance, assignment)
    return (-ev.placed_weight, ev.objective)


def best_placement(instance: Instance, *candidates: Assignment | None) -> tuple[int, Assignment | None]:
    """Index and value of the best valid candidate (most weight, then least objective,
    by the evaluator); ``(-1, None)`` if none is valid.  Earlier candidates win ties."""
    keys = [_objective(instance, c) for c in candidates]
    best = min(range(len(candidates)), key=lambda i: (keys[i], i), default=-1)
    if best < 0 or not math.isfinite(keys[best][1]):
        return -1, None
    return best, candidates[best]


def auto_method(instance: Instance, opts: Options) -> Outcome:
    """Enumerate tiny instances to proven optimality.  Otherwise: greedy; then, where the
    exact model is small enough, the first available exact backend warm-started from
    greedy with most of the time; then local search from the best placement so far with
    the time left.  Falls back to what it has when a backend fails or times out."""
    from placement.bruteforce import brute_force, estimate_size
    from placement.heuristics import greedy, local_search

    path: list[str] = []
    if estimate_size(instance) <= AUTO_BRUTE_FORCE_SIZE:
        out = brute_force(instance, opts)
        out.path = ["auto:brute_force"] + out.path
        if out.assignment is not None or out.infeasible:
            return out
        path += out.path
    g = greedy(instance, opts)
    path += ["auto:greedy"] + g.path
    best, bound = g.assignment, None
    exact = _exact_step(instance, opts, best, path)
    if exact is not None:
        if exact.optimal or exact.infeasible:
            exact.path = list(path)
            return exact
        bound = exact.bound
        best = best_placement(instance, best, exact.assignment)[1]
    if best is None:
        return Outcome(None, path=path, message=g.message)
    if instance.admission == "all":
        # the bound first, so that the local search can use all the time that is left
        from placement.formulations.transport import transport_lower_bound

        tb = transport_lower_bound(instance, time_limit_s=max(0.5, 0.3 * (opts.deadline - time.monotonic())))
        if tb is not None:
            path.append("auto:transport_bound")
            bound = tb if bound is None else max(bound, tb)
    margin = 0.2 + min(1.0, 0.02 * opts.time_limit_s)  # for the final validation and evaluation
    if time.monotonic() < opts.deadline - margin - 0.1:
        ls = local_search(instance, Options(opts.time_limit_s, opts.seed, opts.threads, best, opts.deadline - margin))
        path += ["auto:local_search"] + ls.path
        best = best_placement(instance, best, ls.assignment)[1]
    return Outcome(best, bound=bound, path=path)


AUTO_EXACT_SIZE = 6_000
"""``auto`` runs an exact backend when the model has at most about this many variables."""


def _exact_step(instance: Instance, opts: Options, start: Assignment | None, path: list[str]) -> Outcome | None:
    from placement.formulations.index import index_instance
    from placement.formulations.oblivious import EXACT_PREFERENCE

    idx = instance.eval_index
    free = instance.cluster.free_gpus > 0
    rough = sum(2 * int((np.isfinite(idx.job_a(jp)) & free).sum()) for jp in range(len(instance.jobs)))
    size = rough
    if rough <= 4 * AUTO_EXACT_SIZE:
        # the size of the model the MILP backends build: classes aggregated, pruned against the start
        cutoff = evaluate(instance, start).objective if start is not None and instance.admission == "all" else None
        size = index_instance(instance, cutoff=cutoff, aggregate=True).size
    if size > AUTO_EXACT_SIZE:
        path.append(f"auto:exact skipped ({size} variables > {AUTO_EXACT_SIZE})")
        return None
    left = opts.deadline - time.monotonic()
    for name in EXACT_PREFERENCE:
        spec = get_method(name)
        if not spec.available:
            continue
        budget = 0.7 * left if start is not None else left
        sub = Options(budget, opts.seed, opts.threads, start, time.monotonic() + budget)
        try:
            out = spec.load()(instance, sub)
        except Exception as e:  # a failing backend must not take auto down: record and fall back
            path.append(f"auto:{name} failed ({type(e).__name__}: {e})")
            continue
        path += [f"auto:{name}", *out.path]
        if out.assignment is not None or out.infeasible:
            return out
    return None


def solve(
    instance: Instance,
    method: str = "auto",
    *,
    time_limit_s: float = 10.0,
    seed: int = 0,
    threads: int = 1,
    start: Assignment | None = None,
    previous: Assignment | None = None,
    max_moves: int | None = None,
    move_cost: float = 0.0,
) -> Solution:
    """Place the jobs of ``instance`` with ``method`` and return a checked :class:`Solution`.

    >>> import placement
    >>> sol = placement.solve(placement.load_bundled("tiny"), "greedy", seed=1)
    >>> sol.status.value
    'feasible'

    Re-planning: with ``previous`` (the placement running now), ``auto`` and
    ``local_search`` re-optimise from it moving at most ``max_moves`` workers and/or paying
    ``move_cost`` (objective units) per moved worker; ``stats.moved_workers`` says how
    many moved.  New jobs are placed; jobs no longer in the instance are dropped.

    Raises :class:`~placement.errors.UnknownMethodError` (listing the valid names) or
    :class:`~placement.errors.MethodUnavailableError`; outcomes such as infeasibility are
    statuses of the returned solution.
    """
    spec = get_method(method)
    for name, value, ok in (
        ("time_limit_s", time_limit_s, isinstance(time_limit_s, (int, float)) and time_limit_s > 0),
        ("seed", seed, isinstance(seed, int) and seed >= 0),
        ("threads", threads, isinstance(threads, int) and threads >= 1),
    ):
        if not ok or isinstance(value, bool):
            raise ValueError(f"The {name!r} parameter of solve must be positive. Got {value!r} instead.")
    if not spec.available:
        raise MethodUnavailableError(f"method {spec.name!r} needs {', '.join(spec.requires)}, which is not installed")
    if previous is not None and spec.name not in ("auto", "local_search"):
        raise ValueError(f"The 'previous' parameter of solve (re-planning) needs method 'auto' or 'local_search'. Got {spec.name!r} instead.")
    if max_moves is not None and (not isinstance(max_moves, int) or isinstance(max_moves, bool) or max_moves < 0):
        raise ValueError(f"The 'max_moves' parameter of solve must be an int >= 0. Got {max_moves!r} instead.")
    if not isinstance(move_cost, (int, float)) or move_cost < 0:
        raise ValueError(f"The 'move_cost' parameter of solve must be a number >= 0. Got {move_cost!r} instead.")
    t0 = time.monotonic()
    opts = Options(float(time_limit_s), seed, threads, start, t0 + float(time_limit_s), previous, max_moves, float(move_cost))
    fn: Callable[[Instance, Options], Outcome] = spec.load() if previous is None else _replan_method
    outcome = fn(instance, opts)
    sol = _finish(instance, spec.name, outcome, opts, t0)
    if previous is not None and sol.status.has_placement:
        from placement.replan import moved_workers

        extra = {"moved_workers": moved_workers(previous, sol.assignment), "max_moves": max_moves, "move_cost": move_cost}
        sol = dataclasses.replace(sol, stats={**sol.stats, **extra})
    return sol


def _replan_method(instance: Instance, opts: Options) -> Outcome:
    """Re-planning runs the local search from the previous placement (both ``auto`` and
    ``local_search``): the exact and constructive methods have no move budget."""
    from placement.heuristics import local_search

    return local_search(instance, opts)


def _finish(instance: Instance, method: str, out: Outcome, opts: Options, t0: float) -> Solution:
    stats: dict[str, object] = {
        "time_limit_s": opts.time_limit_s,
        "seed": opts.seed,
        "threads": opts.threads,
        "backend": out.backend or "placement",
        "backend_version": out.backend_version or _version(),
        "path": list(out.path),
    }
    if out.message:
        stats["message"] = out.message
    all_jobs = tuple(j.id for j in instance.jobs)

    def empty(status: Status) -> Solution:
        stats["wall_s"] = time.monotonic() - t0
        return Solution(instance.name, method, status, None, None, {}, all_jobs, {}, stats)

    if out.assignment is None:
        if out.infeasible:
            return empty(Status.INFEASIBLE)
        reason = infeasibility_reason(instance)
        if reason is not None:
            stats["message"] = reason
            return empty(Status.INFEASIBLE)
        return empty(Status.NO_SOLUTION)
    assignment = {j: {s: int(k) for s, k in a.items() if k > 0} for j, a in out.assignment.items()}
    assignment = {j: a for j, a in assignment.items() if a}
    violations = validate(instance, assignment)
    if violations:
        stats["message"] = f"method {method!r} returned an invalid placement: " + "; ".join(map(str, violations[:10]))
        return empty(Status.ERROR)
    ev = evaluate(instance, assignment)
    stats["placed_weight"] = ev.placed_weight
    bound = out.bound
    if bound is None:
        bound = lower_bound(instance)
    if bound is not None and ev.objective < bound <= ev.objective * (1 + BOUND_RTOL) + 1e-9:
        bound = ev.objective  # within the solvers' stated tolerance
    if bound is not None and bound > ev.objective:
        # a bound above the true objective is not a bound: never report it
        stats["message"] = f"dropped bound {bound:.9g} above the true objective {ev.objective:.9g}"
        bound = None
    status = Status.OPTIMAL if out.optimal else Status.FEASIBLE
    stats["wall_s"] = time.monotonic() - t0
    return Solution(
        instance=instance.name,
        method=method,
        status=status,
        objective=ev.objective,
        bound=bound,
        assignment=assignment,
        unplaced=ev.unplaced,
        jobs=ev.jobs,
        stats=stats,
    )
