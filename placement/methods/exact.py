"""The one wrapper of the exact backends (cvxpy's ``Solver`` split): what every backend
needs done is done here, so that a backend only builds its model, solves it and maps the
answer back to servers (:class:`~placement.solving.backend.Backend`).

1. **start**: ``options.start``, else the greedy placement;
2. **cutoff**: the start's exact objective (admission ``all``): the backend prunes the
   job-server pairs that cannot beat it, and its bound is capped by it;
3. **fallback**: no incumbent, an incumbent the validator refuses, or a pruned model
   reported infeasible: the start is returned (with the bound, when valid);
4. **start beats incumbent**: the better of the two by the evaluator is returned;
5. **claims**: ``optimal`` when the backend proved it (or its bound proves the returned
   placement within its tolerance), ``infeasible`` only when its model is exact and
   unpruned; with ``best_effort``, a bound only with a proof.

Parameter-server jobs: a model prices their push/pull phase exactly and returns their
shards (:attr:`BackendResult.shards`) when the modes stay small
(``formulations.index.PS_EXACT_TERMS``); otherwise it prices that phase by a floor, which
keeps its bound valid, the shard rule places their shards, and the model's own optimum is no
longer trusted: ``optimal`` then needs the exact objective within tolerance of the bound.
"""

from __future__ import annotations

from placement.evaluation.evaluate import evaluate
from placement.evaluation.ranking import placement_key
from placement.evaluation.validate import validate
from placement.formulations.congestion import unmodelled_jobs
from placement.formulations.cpsat import CpSatBackend
from placement.formulations.milp import MilpBackend
from placement.methods.greedy import greedy
from placement.model.records import Assignment, GpuChoice, Instance
from placement.problem.hybrid import complete_stages
from placement.problem.shards import complete_shards
from placement.solving.backend import Backend, Termination
from placement.solving.options import Options, Outcome

__all__ = ["run_exact", "cpsat", "milp_highs", "milp_cbc"]


def run_exact(instance: Instance, opts: Options, backend: Backend, *, prune: bool = True) -> Outcome:
    """Run ``backend`` on ``instance`` with the steps above (``prune=False``: no cutoff,
    for ``placement.bench reductions``)."""
    path = [backend.name]
    start = opts.start
    if start is None:
        start = greedy(instance, opts).assignment
        path.append("start:greedy" if start is not None else "start:none")
    cutoff = None
    if prune and start is not None and instance.admission == "all":
        # the start's true objective (a parameter-server job's shards by the shard rule): the
        # models price at most that, so no pair of a better placement is pruned
        cutoff = evaluate(instance, start, complete_shards(instance, start, None)).objective
    res = backend.run(instance, start=start, cutoff=cutoff, budget=opts.budget, seed=opts.seed, threads=opts.threads)
    path += res.path
    best_effort = instance.admission == "best_effort"

    def done(
        assignment: Assignment | None,
        *,
        optimal: bool = False,
        infeasible: bool = False,
        bound: float | None = None,
        message: str | None = None,
        shards: Assignment | None = None,
        gpus: GpuChoice | None = None,
    ) -> Outcome:
        return Outcome(
            assignment,
            optimal=optimal,
            infeasible=infeasible,
            bound=bound,
            path=path,
            backend=backend.name,
            backend_version=backend.version(),
            message=message,
            shards=shards,
            gpus=gpus,
        )

    bound = res.bound
    if cutoff is not None and bound is not None:
        bound = min(bound, cutoff)  # pruned placements are no better than the start
    if res.termination is Termination.INFEASIBLE:
        if cutoff is not None:
            # the start lies in the pruned model, so only numerical trouble gets here
            path.append("returned start")
            return done(start, message="the pruned model was reported infeasible; returned the start")
        return done(None, infeasible=res.exact and not best_effort, message=res.message)
    assignment = res.assignment
    shards = complete_shards(instance, assignment, res.shards) if assignment is not None else None
    gpus = res.gpus
    if assignment is not None and validate(
        instance, assignment, shards=shards, stages=complete_stages(instance, assignment, None), gpus=gpus
    ):
        # only a relaxed row (CP-SAT's rounded deadline) can let this happen
        path.append("invalid after rounding")
        assignment = None
    if assignment is None:
        if start is not None:
            path.append("returned start")
        why = f"{backend.name} ended {res.termination} without a usable placement" + (
            f"; {res.message}" if res.message else ""
        )
        return done(start, bound=None if best_effort else bound, message=why)
    # the shards the model did not price exactly are the shard rule's: its optimum is then
    # only a bound for them
    ruled = sorted(set(shards or {}) - set(res.shards or {}))
    if ruled:
        path.append(f"shards of {len(ruled)} parameter-server job(s) by the shard rule")
    if placement_key(instance, start) < placement_key(instance, assignment, shards, gpus):
        path.append("start better than incumbent: returned start")
        assignment = {j: dict(a) for j, a in start.items()}  # type: ignore[union-attr]
        shards = complete_shards(instance, assignment, None)
        gpus = None  # the rule's, as the start was costed
        # a start better than the model's optimum: the model was not the true objective here, so
        # its status proves nothing; only the gap of the start to the model's bound can
        ruled = sorted(shards) + ["(start)"]
    # hybrid jobs' communication is not in the model (their stages are mapped after it): its
    # status proves nothing for them, only the gap to its bound does
    ruled += sorted(j for j in assignment if instance.job_by_id[j].is_hybrid)
    # congestion the model does not price (parameter-server, hybrid, fitted gamma): the same
    ruled += unmodelled_jobs(instance, assignment)
    true = evaluate(instance, assignment, shards, None, gpus).objective
    gap_ok = bound is not None and true - bound <= backend.optimal_rtol * max(1.0, abs(true))
    proven = res.termination is Termination.OPTIMAL and ((backend.trust_status and not ruled) or gap_ok)
    optimal = res.exact and res.weight_proven and (proven or (cutoff is not None and gap_ok))
    message = res.message
    if res.termination is Termination.OPTIMAL and not optimal and bound is not None:
        message = (message + "; " if message else "") + (
            f"optimal for the backend's model, exact gap {true - bound:.3g} above tolerance"
        )
    if best_effort and not optimal:
        bound = None  # a bound at a fixed weight is no bound of the lexicographic problem
    return done(assignment, optimal=optimal, bound=bound, message=message, shards=shards, gpus=gpus)


def cpsat(instance: Instance, opts: Options) -> Outcome:
    """CP-SAT (OR-Tools) on the exact model in integer units."""
    return run_exact(instance, opts, CpSatBackend())


def milp_highs(instance: Instance, opts: Options) -> Outcome:
    """The exact MILP solved by HiGHS through PuLP, warm-started from the start."""
    return run_exact(instance, opts, MilpBackend("highs"))


def milp_cbc(instance: Instance, opts: Options) -> Outcome:
    """The exact MILP solved by CBC through PuLP, warm-started from the start."""
    return run_exact(instance, opts, MilpBackend("cbc"))
