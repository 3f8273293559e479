"""``placement.solve``: run a method, then validate and evaluate what it returns.

Whatever the method, the returned :class:`~placement.model.Solution` holds only numbers
the evaluator computed, a placement the validator accepted, and a bound only when it is
valid for the true objective.  The driver assembles what it is handed (the registry's
method, the options, the budget); no method imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from importlib import metadata

from placement.errors import InvalidInputError, MethodUnavailableError
from placement.evaluation.bounds import lower_bound, reportable_bound
from placement.evaluation.evaluate import evaluate
from placement.evaluation.feasibility import infeasibility_reason
from placement.evaluation.validate import validate
from placement.model.records import Assignment, GpuChoice, Instance, Solution, Stages, Status
from placement.problem.gpus import choose_gpus, improve_gpus
from placement.problem.hybrid import complete_stages
from placement.problem.rules import moves
from placement.problem.shards import complete_shards
from placement.solving.budget import CLOCKS, Budget, WorkClock
from placement.solving.options import Options, Outcome
from placement.solving.registry import REGISTRY, get_method

__all__ = ["solve", "placed", "moved_workers", "SEED_MODULUS"]

SEED_MODULUS = 2**31 - 1
"""Seeds reach the methods reduced modulo this, so every backend (CP-SAT takes a 32-bit
seed) accepts any seed a user gives; the solution's ``stats.seed`` is the seed given."""


@functools.cache
def _version() -> str:
    """The installed package's version (read once: the metadata lookup cost about a
    millisecond per solve, a tenth of a greedy simulation's wall time)."""
    try:
        return metadata.version("placement")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def moved_workers(previous: Assignment, assignment: Assignment) -> int:
    """Workers moved from ``previous`` to ``assignment``, over the jobs in both (finished
    jobs are not in ``assignment``'s instance and are not counted)."""
    return sum(moves(prev, assignment[jid]) for jid, prev in previous.items() if jid in assignment)


def solve(
    instance: Instance,
    method: str = "auto",
    *,
    time_limit_s: float = 10.0,
    seed: int = 0,
    threads: int = 1,
    start: Assignment | None = None,
    previous: Assignment | None = None,
    previous_shards: Assignment | None = None,
    max_moves: int | None = None,
    move_cost: float = 0.0,
    restart_cost: Mapping[str, float] | None = None,
    progress: Callable[[str, float | None, float | None], None] | None = None,
    prove: bool = True,
    clock: str = "wall",
) -> Solution:
    """Place the jobs of ``instance`` with ``method`` and return a checked :class:`Solution`.

    >>> import placement
    >>> sol = placement.solve(placement.load_bundled("tiny"), "greedy", seed=1)
    >>> sol.status.value
    'feasible'

    Re-planning: with ``previous`` (the placement running now), ``auto`` and
    ``local_search`` re-optimise from it moving at most ``max_moves`` workers and/or paying
    ``move_cost`` (objective units) per moved worker and ``restart_cost[job]`` once for each
    running job that moves at all (its restart: with the objective ``weighted_expected_jct``
    and a job's *remaining* iterations, ``weight x restart seconds`` prices a move against the
    time it saves); ``stats.moved_workers`` and ``stats.moved_jobs`` say how many moved.  ``previous_shards``: the running parameter-server jobs' shards, which stay
    where their job's workers stay (a job whose workers move is restarted, shards and all).  New jobs are placed; jobs no longer in the instance are dropped.

    ``progress(step, objective, bound)`` is told where a method that works in steps (``auto``)
    stands: the objective of its best placement so far by the evaluator (``None`` when that
    placement is not valid) and its best bound so far (valid for the true objective).
    ``prove=False``: ``auto`` skips its exact model (whose time buys a proof of optimality)
    and keeps to heuristics and bounds, for decisions that will be revisited (a simulation's).
    ``clock="work"``: ``time_limit_s`` is counted on a :class:`~placement.solving.budget.WorkClock`
    (each budget check of a method is ``WORK_TICK_S`` seconds), not the wall clock, so the
    heuristics stop after the same steps on any machine: with one thread the result is
    repeatable (CP-SAT stops on its deterministic time; a MILP or LP backend that hits its
    limit still stops on the wall clock).

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
    if clock not in CLOCKS:
        raise ValueError(f"The 'clock' parameter of solve must be one of {', '.join(CLOCKS)}. Got {clock!r} instead.")
    if not spec.available:
        raise MethodUnavailableError(f"method {spec.name!r} needs {', '.join(spec.requires)}, which is not installed")
    if previous is not None and not spec.replans:
        replanners = " or ".join(repr(m.name) for m in REGISTRY if m.replans)
        raise ValueError(
            f"The 'previous' parameter of solve (re-planning) needs method {replanners}. Got {spec.name!r} instead."
        )
    if max_moves is not None and (not isinstance(max_moves, int) or isinstance(max_moves, bool) or max_moves < 0):
        raise ValueError(f"The 'max_moves' parameter of solve must be an int >= 0. Got {max_moves!r} instead.")
    if not isinstance(move_cost, (int, float)) or move_cost < 0:
        raise ValueError(f"The 'move_cost' parameter of solve must be a number >= 0. Got {move_cost!r} instead.")
    bad_restart = [
        f"{j!r}: {c!r}"
        for j, c in (restart_cost or {}).items()
        if j not in instance.job_by_id or isinstance(c, bool) or not isinstance(c, (int, float)) or not c >= 0
    ]
    if bad_restart:
        raise ValueError(
            "The 'restart_cost' parameter of solve maps the instance's job ids to numbers >= 0. "
            f"Got {', '.join(bad_restart[:5])} instead."
        )
    if restart_cost and previous is None:
        raise ValueError("The 'restart_cost' parameter of solve prices moves: it needs 'previous'.")
    t0 = time.monotonic()
    opts = Options(
        time_limit_s=float(time_limit_s),
        seed=seed % SEED_MODULUS,
        threads=threads,
        start=start,
        budget=Budget(t0 + float(time_limit_s)) if clock == "wall" else Budget.seconds(time_limit_s, WorkClock()),
        previous=previous,
        previous_shards=previous_shards,
        max_moves=max_moves,
        move_cost=float(move_cost),
        restart_cost=dict(restart_cost) if restart_cost else None,
        progress=None if progress is None else _checked(instance, progress),
        prove=bool(prove),
    )
    outcome = spec.load()(instance, opts)
    sol = _finish(instance, spec.name, outcome, opts, t0, seed)
    if previous is not None and sol.status.has_placement:
        extra = {
            "moved_workers": moved_workers(previous, sol.assignment),
            "moved_jobs": sum(1 for j, a in previous.items() if moved_workers({j: a}, sol.assignment) > 0),
            "max_moves": max_moves,
            "move_cost": move_cost,
        }
        sol = dataclasses.replace(sol, stats={**sol.stats, **extra})
    return sol


def placed(
    instance: Instance,
    assignment: Assignment,
    method: str,
    *,
    message: str | None = None,
    shards: Assignment | None = None,
    stages: Stages | None = None,
    gpus: GpuChoice | None = None,
) -> Solution:
    """A placement made elsewhere (read back from manifests, or a running cluster) as a
    :class:`Solution`: validated and evaluated as every method's answer is; ``error`` with the
    violations when it is not valid.  Its bound is the instance's general lower bound."""
    bad = [
        f"{what}[{j!r}][{s!r}] = {k!r}: counts are integers >= 0"
        for what, doc in (("assignment", assignment), ("shards", shards or {}))
        for j, a in doc.items()
        for s, k in a.items()
        if not isinstance(k, int) or isinstance(k, bool) or k < 0
    ]
    if bad:
        raise InvalidInputError(bad)
    t0 = time.monotonic()
    opts = Options(time_limit_s=0.0, seed=0, threads=1, budget=Budget(t0))
    out = Outcome(dict(assignment), backend="placement", message=message, shards=shards, stages=stages, gpus=gpus)
    return _finish(instance, method, out, opts, t0, 0)


def _checked(
    instance: Instance, tell: Callable[[str, float | None, float | None], None]
) -> Callable[[str, Assignment | None, float | None], None]:
    """The method-side progress callback: a placement is validated and evaluated, and a bound
    kept only where it is valid for that objective, before ``tell`` hears of them."""

    def report(step: str, best: Assignment | None, bound: float | None) -> None:
        objective = None
        shards = complete_shards(instance, best, None) if best is not None else None
        stages = complete_stages(instance, best, None) if best is not None else None
        if best is not None and not validate(instance, best, shards=shards, stages=stages):
            objective = evaluate(instance, best, shards, stages).objective
            bound, _ = reportable_bound(bound, objective)
        tell(step, objective, bound)

    return report


def _finish(instance: Instance, method: str, out: Outcome, opts: Options, t0: float, given_seed: int) -> Solution:
    stats: dict[str, object] = {
        "time_limit_s": opts.time_limit_s,
        "seed": given_seed,
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
        reason = infeasibility_reason(instance)
        if reason is not None:  # say why, whatever the method said
            stats["message"] = reason + (f" ({out.message})" if out.message else "")
            return empty(Status.INFEASIBLE)
        if out.infeasible:
            return empty(Status.INFEASIBLE)
        return empty(Status.NO_SOLUTION)
    assignment = {j: {s: int(k) for s, k in a.items() if k > 0} for j, a in out.assignment.items()}
    assignment = {j: a for j, a in assignment.items() if a}
    # parameter-server jobs the method left without shards get them by the one shard rule;
    # the method's optimality claim then no longer covers the whole placement
    given = {j: a for j, a in (out.shards or {}).items() if any(k > 0 for k in a.values())}
    shards = complete_shards(instance, assignment, given)
    completed = sorted(set(shards) - set(given))
    # hybrid jobs the method left without a stage matrix get the best mapping found
    mapped = {j: m for j, m in (out.stages or {}).items() if m}
    stages = complete_stages(instance, assignment, mapped)
    mapped_here = sorted(set(stages) - set(mapped))
    # GPUs on the servers with per-GPU factors: the method's, else the rule's
    gpus = improve_gpus(instance, assignment, choose_gpus(instance, assignment, out.gpus), frozenset(out.gpus or {}))
    violations = validate(instance, assignment, shards=shards, stages=stages, gpus=gpus)
    if violations:
        stats["message"] = f"method {method!r} returned an invalid placement: " + "; ".join(map(str, violations[:10]))
        return empty(Status.ERROR)
    ev = evaluate(instance, assignment, shards, stages, gpus)
    stats["placed_weight"] = ev.placed_weight
    # the method's bound, or the instance's simple one, whichever is higher (both are valid: an
    # exact model that relaxes a hybrid job's communication can prove less than the simple bound)
    simple = lower_bound(instance)
    method_bound = out.bound
    if method_bound is not None and simple is not None and simple > method_bound:
        method_bound = simple
    bound, note = reportable_bound(method_bound if method_bound is not None else simple, ev.objective)
    if note:
        stats["message"] = note
    optimal = out.optimal
    if completed:
        stats["shards_placed_by"] = "placement.problem.shards.place_shards"
        if optimal:
            optimal = False
            why = (
                f"{method} is optimal for the workers; the shards of {len(completed)} parameter-server job(s) "
                "were placed after it by the shard rule, so the placement is not proven optimal"
            )
            stats["message"] = f"{stats['message']}; {why}" if stats.get("message") else why
    if mapped_here:
        stats["stages_mapped_by"] = "placement.problem.hybrid.best_stages"
        if optimal and not (bound is not None and ev.objective <= bound + 1e-9 * max(1.0, abs(bound))):
            optimal = False
            why = (
                f"{method} is optimal for its model of the servers; the stages of {len(mapped_here)} hybrid job(s) "
                "were mapped after it, so the placement is not proven optimal"
            )
            stats["message"] = f"{stats['message']}; {why}" if stats.get("message") else why
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
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
        shards=shards,
        stages=stages,
        gpus=gpus,
    )
