"""``auto``: picks a way by size and time limit, falls back when a backend fails or times
out, and never returns an invalid placement (the driver checks what it returns).

Tiny instances are enumerated to proven optimality.  Otherwise: greedy; then, where the
exact model is small enough, the first available exact backend (:data:`EXACT_PREFERENCE`)
warm-started from greedy with most of the time; then the transportation-LP bound (its first
restricted LP seeded with the best placement so far), the greedy guided by its GPU prices
and local search from the best placement so far with the time left.  Far too large for the
exact model, the first placement is :func:`quick_greedy`'s (the plain greedy only if it
leaves a job out): the LP, whose bound the gap needs, gets the time.  With a ``previous``
placement (re-planning), the local search re-optimises from it within the move budget.
With ``prove=False`` the exact step is skipped.
"""

from __future__ import annotations

import numpy as np

from placement.errors import MethodUnavailableError
from placement.evaluation.bounds import bound_placing_all
from placement.evaluation.evaluate import evaluate
from placement.evaluation.ranking import best_placement, placement_key
from placement.formulations.index import index_instance
from placement.formulations.transport import transport_lp
from placement.methods.bruteforce import brute_force, estimate_size
from placement.methods.gpu_search import gpu_search
from placement.methods.greedy import greedy, price_guided_greedy, quick_greedy
from placement.methods.local_search import LP_SHARE, bound_then_improve, local_search
from placement.model.records import Assignment, Instance
from placement.model.tolerances import IMPROVE_RTOL
from placement.problem.arrays import arrays_of
from placement.problem.gpus import is_factored
from placement.problem.shards import complete_shards
from placement.problem.topology import cluster_of
from placement.solving.budget import checks_margin
from placement.solving.options import Options, Outcome
from placement.solving.registry import EXACT_PREFERENCE, get_method

__all__ = [
    "auto",
    "AUTO_BRUTE_FORCE_SIZE",
    "AUTO_CLASS_STEPS",
    "AUTO_EXACT_SIZE",
    "AUTO_EXACT_SHARE",
    "AUTO_GPU_SHARE",
    "AUTO_QUICK_SIZE",
]

AUTO_BRUTE_FORCE_SIZE = 20_000
"""``auto`` enumerates when the search space (product of per-job allocation counts) is below this."""
AUTO_EXACT_SIZE = 10_000
"""``auto`` runs an exact backend when the model has at most about this many variables."""
AUTO_EXACT_SHARE = 0.7
"""Share of the time left that the exact backend gets when a start is known."""
AUTO_GPU_SHARE = 0.5
"""On an instance with per-GPU factors, the share of the time left after the exact step that
the GPU-level search (:func:`~placement.methods.gpu_search.gpu_search`) gets."""
AUTO_QUICK_SIZE = 4 * AUTO_EXACT_SIZE
"""An instance with over this many variables before reductions (far too large for the exact
model) starts from :func:`quick_greedy`: at 10 s on fleet1g-4278 the plain greedy's pass
(3.5 s) left the LP too little time for a bound."""
AUTO_CLASS_STEPS = ((20.0, 0.01), (8.0, 0.02), (0.0, 0.05))
"""On a fleet past :data:`AUTO_QUICK_SIZE`: the LP's class step by the seconds it may take
(at least the first of each pair; fleet1g-4278's LP: 6.9 s at 0.01, 5.1 s at 0.02, 3.6 s at
0.05, each coarser step 0.6% and 1.4% lower); a price-guided pass follows when 1.5
times the quick greedy's time is left."""


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
    quick, took = None, 0.0
    if instance.admission == "all" and rough > AUTO_QUICK_SIZE:
        began = opts.budget.now()
        st, rounds = quick_greedy(instance, opts)
        took = opts.budget.now() - began
        path.append("auto:quick_greedy" + (f"({rounds} rounds)" if rounds > 1 else ""))
        quick = Outcome(st.assignment(), shards=st.shard_assignment()) if st.complete else None
    g = quick or greedy(instance, opts)
    if quick is None:
        path += ["auto:greedy"] + g.path
    best, shards, bound = g.assignment, g.shards, None
    opts.report("greedy", best)
    met = None if quick is not None else _meets_the_bound(instance, best, shards)
    if met is not None:  # e.g. one job with a server of its own: nothing left to prove
        path.append("auto:greedy meets the simple bound")
        return Outcome(best, bound=met, path=path, shards=shards, optimal=True)
    if opts.prove:
        exact = _exact_step(instance, opts, best, path, rough)
    else:
        exact = None
        path.append("auto:exact skipped (prove=False)")
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
    if best is None and instance.admission == "all":
        best, shards = _guided_rescue(instance, opts, path)
    if best is None:
        return Outcome(None, path=path, message=g.message)
    gpu_level = is_factored(instance) and not any(j.is_ps or j.is_hybrid for j in instance.jobs)
    tail = opts
    if gpu_level:  # the GPU-level search gets its share of what is left
        tail = opts.but(time_limit_s=opts.time_limit_s, budget=opts.budget.share(1.0 - AUTO_GPU_SHARE))
    fast = {}
    if quick is not None:  # a large fleet: classes as fine as the LP's time allows; a guided pass if one fits
        lp_s = LP_SHARE * opts.budget.left()
        fast = {"class_step": next(step for s, step in AUTO_CLASS_STEPS if lp_s >= s), "priced_room_s": 1.5 * took}
    found, shards, tb = bound_then_improve(instance, tail, best, path, label="auto:", shards=shards, **fast)
    best = found if found is not None else best
    if tb is not None:
        bound = tb if bound is None else max(bound, tb)
    gpus = None
    if gpu_level:
        end = opts.budget.before(checks_margin(opts.time_limit_s))
        moved, chosen = gpu_search(instance, best, None, end.expired)
        if placement_key(instance, moved, shards, chosen) < placement_key(instance, best, shards):
            best, gpus = moved, chosen
            path.append("auto:gpu_search")
    return Outcome(best, bound=bound, path=path, shards=shards, gpus=gpus)


def _meets_the_bound(instance: Instance, best: Assignment | None, shards: Assignment | None) -> float | None:
    """The simple bound (:func:`~placement.evaluation.bounds.bound_placing_all`) when ``best``
    places every job and its objective meets it (within the evaluator's tolerance), else
    ``None``."""
    if best is None or len(best) < len(instance.jobs):
        return None
    floor = bound_placing_all(instance)
    if floor is None:
        return None
    objective = evaluate(instance, best, complete_shards(instance, best, shards)).objective
    return floor if objective <= floor * (1.0 + IMPROVE_RTOL) + 1e-9 else None


def _guided_rescue(instance: Instance, opts: Options, path: list[str]) -> tuple[Assignment | None, Assignment | None]:
    """When no greedy places every job (and no exact model ran): the transportation LP alone,
    then the greedy guided by its prices, whose other order of candidates may fit what the
    plain one could not.  Its placement and shards, or ``None``."""
    lp = transport_lp(instance, time_limit_s=max(0.5, LP_SHARE * opts.budget.left()))
    if not (lp.solved and lp.gpu_price is not None and lp.whole_price is not None):
        return None, None
    st, rounds = price_guided_greedy(instance, (lp.gpu_price, lp.whole_price), opts)
    path.append("auto:price_guided_rescue" + (f"({rounds} rounds)" if rounds > 1 else ""))
    return (st.assignment(), st.shard_assignment()) if st.complete else (None, None)


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
