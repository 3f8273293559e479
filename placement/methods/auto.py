"""``auto``: picks a way by size and time limit, falls back when a backend fails or times
out, and never returns an invalid placement (the driver checks what it returns).

Tiny instances are enumerated to proven optimality.  Otherwise: greedy; then, where the
exact model is small enough, the first available exact backend (:data:`EXACT_PREFERENCE`)
warm-started from greedy with most of the time; then the transportation-LP bound, the greedy
guided by its GPU prices and local search from the best placement so far with the time
left.  Far too large for the exact model and with at least :data:`AUTO_LP_FIRST_LIMIT`
seconds, the LP comes first, and the plain greedy only if the guided one leaves a job out
or the LP is cut short.  With a ``previous`` placement (re-planning), the local search
re-optimises from it within the move budget.
"""

from __future__ import annotations

import numpy as np

from placement.errors import MethodUnavailableError
from placement.evaluation.evaluate import evaluate
from placement.evaluation.ranking import best_placement
from placement.formulations.index import index_instance
from placement.methods.bruteforce import brute_force, estimate_size
from placement.methods.greedy import greedy
from placement.methods.local_search import bound_then_improve, local_search
from placement.model.records import Assignment, Instance
from placement.problem.arrays import arrays_of
from placement.problem.shards import complete_shards
from placement.problem.topology import cluster_of
from placement.solving.options import Options, Outcome
from placement.solving.registry import EXACT_PREFERENCE, get_method

__all__ = ["auto", "AUTO_BRUTE_FORCE_SIZE", "AUTO_EXACT_SIZE", "AUTO_EXACT_SHARE", "AUTO_LP_FIRST_LIMIT"]

AUTO_BRUTE_FORCE_SIZE = 20_000
"""``auto`` enumerates when the search space (product of per-job allocation counts) is below this."""
AUTO_EXACT_SIZE = 10_000
"""``auto`` runs an exact backend when the model has at most about this many variables."""
AUTO_EXACT_SHARE = 0.7
"""Share of the time left that the exact backend gets when a start is known."""
AUTO_LP_FIRST_LIMIT = 30.0
"""With a time limit of at least this many seconds, an instance far too large for the exact
model (over four times :data:`AUTO_EXACT_SIZE` before reductions) gets the transportation LP
first and the greedy guided by its prices, without the plain greedy's pass before (about
7 s at 4,000 servers, left to local search)."""


def auto(instance: Instance, opts: Options) -> Outcome:
    if opts.previous is not None:
        return local_search(instance, opts)
    path: list[str] = []
    if estimate_size(instance) <= AUTO_BRUTE_FORCE_SIZE:
        try:
            out = brute_force(instance, opts)
        except MethodUnavailableError as e:  # more shard placements than the estimate saw
            path.append(f"auto:brute_force skipped ({e})")
        else:
            out.path = ["auto:brute_force"] + out.path
            if out.assignment is not None or out.infeasible:
                return out
            path += out.path
    rough = _rough_size(instance)
    if instance.admission == "all" and rough > 4 * AUTO_EXACT_SIZE and opts.time_limit_s >= AUTO_LP_FIRST_LIMIT:
        # far too large for the exact model, and time for the LP: its prices guide the first
        # greedy (the plain greedy only if that leaves a job out)
        path.append(f"auto:exact skipped ({rough} variables > {AUTO_EXACT_SIZE})")
        found, shards, bound = bound_then_improve(instance, opts, None, path, label="auto:")
        if found is None:
            return Outcome(None, path=path, message="no placement of every job found (greedy and price-guided)")
        return Outcome(found, bound=bound, path=path, shards=shards)
    g = greedy(instance, opts)
    path += ["auto:greedy"] + g.path
    best, shards, bound = g.assignment, g.shards, None
    opts.report("greedy", best)
    exact = _exact_step(instance, opts, best, path, rough)
    if exact is not None:
        # an exact model's optimum covers a parameter-server job's workers only (its shards
        # are placed after): then local search goes on from it
        whole = exact.shards is not None or not any(j.is_ps for j in instance.jobs)
        if exact.infeasible or (exact.optimal and whole):
            exact.path = list(path)
            return exact
        bound = exact.bound
        k, best = best_placement(instance, best, exact.assignment)
        shards = exact.shards if k == 1 else shards
        opts.report("exact", best, bound)
    if best is None:
        return Outcome(None, path=path, message=g.message)
    found, shards, tb = bound_then_improve(instance, opts, best, path, label="auto:", shards=shards)
    best = found if found is not None else best
    if tb is not None:
        bound = tb if bound is None else max(bound, tb)
    return Outcome(best, bound=bound, path=path, shards=shards)


def _rough_size(instance: Instance) -> int:
    """Two variables per usable job-server pair: the exact model's size before reductions."""
    idx = arrays_of(instance)
    free = cluster_of(instance).free_gpus > 0
    return sum(2 * int((np.isfinite(idx.job_a(jp)) & free).sum()) for jp in range(len(instance.jobs)))


def _exact_step(
    instance: Instance, opts: Options, start: Assignment | None, path: list[str], rough: int
) -> Outcome | None:
    size = rough
    if rough <= 4 * AUTO_EXACT_SIZE:
        # the size of the model the MILP backends build: classes aggregated, pruned against the start
        cutoff = (
            evaluate(instance, start, complete_shards(instance, start, None)).objective
            if start is not None and instance.admission == "all"
            else None
        )
        size = index_instance(instance, cutoff=cutoff, aggregate=True).size
    if size > AUTO_EXACT_SIZE:
        path.append(f"auto:exact skipped ({size} variables > {AUTO_EXACT_SIZE})")
        return None
    for name in EXACT_PREFERENCE:
        spec = get_method(name)
        if not spec.available:
            continue
        budget = opts.budget.share(AUTO_EXACT_SHARE) if start is not None else opts.budget
        sub = opts.but(time_limit_s=budget.left(), start=start, budget=budget)
        try:
            out = spec.load()(instance, sub)
        except Exception as e:  # a failing backend must not take auto down: record and fall back
            path.append(f"auto:{name} failed ({type(e).__name__}: {e})")
            continue
        path += [f"auto:{name}", *out.path]
        if out.assignment is not None or out.infeasible:
            return out
    return None
