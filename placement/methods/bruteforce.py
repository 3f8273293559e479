"""Exhaustive enumeration of placements for tiny instances: the oracle of the tests.

Every allocation of every job (all worker counts on all allowed servers) is priced with
the evaluator's kernel, then a depth-first search over jobs with capacity checks and
cost pruning finds the optimum.  Admission ``best_effort`` is lexicographic: most weight
placed, then least objective.  A parameter-server job's allocations come with every placement
of its shards, and a hybrid job's (whole groups on each server) with every stage matrix
(every distinct arrangement of its groups over (stage, replica)).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from placement.errors import MethodUnavailableError
from placement.evaluation.evaluate import evaluate
from placement.model.records import Instance
from placement.model.tolerances import TIE_RTOL
from placement.problem.gpus import factored_servers, gpu_classes, ids_of_counts, is_factored
from placement.problem.hybrid import PosMatrix, all_stages, count_stages, group_counts, hybrid_phase, matrix_ids
from placement.problem.rules import meets_deadline, weight_factor
from placement.problem.shards import ps_phase, shard_room
from placement.problem.state import State
from placement.solving.budget import Budget
from placement.solving.options import Options, Outcome

__all__ = ["brute_force", "job_allocations", "MAX_ALLOCATIONS", "MAX_SEARCH", "estimate_size"]

MAX_ALLOCATIONS = 20_000
"""Most allocations enumerated for one job."""
MAX_SEARCH = 2_000_000
"""Refuse when the product of per-job allocation counts exceeds this."""
MAX_WALK = 10 * MAX_ALLOCATIONS
"""Most stage arrangements walked for one hybrid job (each matrix is walked up to ``dp!``
times; 1.8 million took 13 s where 15,844 matrices were distinct)."""
COST_CHUNK = 2_000
"""Options costed at a time between checks of the time limit (a job may have 20,000)."""


def _compositions(rooms: list[int], need: int, i: int = 0) -> Iterator[tuple[int, ...]]:
    if i == len(rooms):
        if need == 0:
            yield ()
        return
    rest_cap = sum(rooms[i + 1 :])
    for k in range(max(0, need - rest_cap), min(rooms[i], need) + 1):
        for tail in _compositions(rooms, need - k, i + 1):
            yield (k,) + tail


MAX_SERVERS = 64
"""Most candidate servers of one job the enumeration takes on."""


def _count(rooms: list[int], need: int) -> int:
    """Number of allocations of ``need`` workers within ``rooms`` (dynamic programming)."""
    ways = [1] + [0] * need
    for r in rooms:
        nxt = [0] * (need + 1)
        for have, w in enumerate(ways):
            if w:
                for k in range(0, min(r, need - have) + 1):
                    nxt[have + k] += w
        ways = nxt
    return ways[need]


def job_allocations(st: State, jp: int, limit: int = MAX_ALLOCATIONS) -> list[dict[int, int]] | None:
    """Every allocation of ``jp`` on empty capacity (``None`` if more than ``limit``)."""
    job = st.instance.jobs[jp]
    allowed = st.allowed(jp)
    unit = job.unit  # a hybrid job's groups are whole: count in groups
    rooms = st.room(jp, allowed) // unit
    keep = rooms > 0
    sps, rs = [int(s) for s in allowed[keep]], [int(r) for r in rooms[keep]]
    if len(sps) > MAX_SERVERS or _count(rs, job.workers // unit) > limit:
        return None
    out: list[dict[int, int]] = []
    for comp in _compositions(rs, job.workers // unit):
        alloc = {sp: k * unit for sp, k in zip(sps, comp) if k > 0}
        if job.max_servers is not None and len(alloc) > job.max_servers:
            continue
        if len({int(st.component[s]) for s in alloc}) > 1:
            continue
        out.append(alloc)
        if len(out) > limit:
            return None
    return out


def shard_placements(
    st: State, jp: int, alloc: dict[int, int], limit: int = MAX_ALLOCATIONS
) -> list[dict[int, int]] | None:
    """Every placement of parameter-server job ``jp``'s shards beside its workers ``alloc``
    (on empty capacity, within ``max_servers`` and the workers' component); ``None`` if
    more than ``limit``."""
    inst = st.instance
    job = inst.jobs[jp]
    n = len(inst.servers)
    allowed = range(n) if job.allowed_servers is None else sorted(inst.server_pos[s] for s in job.allowed_servers)
    comp = int(st.component[next(iter(alloc))])
    sps = [sp for sp in allowed if int(st.component[sp]) == comp]
    full_c = np.array([math.inf if s.cpus is None else s.cpus for s in inst.servers])
    full_m = np.array([math.inf if s.memory_gb is None else s.memory_gb for s in inst.servers])
    rooms = []
    for sp in sps:
        c, m = full_c.copy(), full_m.copy()
        c[sp] -= alloc.get(sp, 0) * (job.cpus_per_worker or 0.0)
        m[sp] -= alloc.get(sp, 0) * (job.memory_gb_per_worker or 0.0)
        rooms.append(int(min(job.shards, shard_room(job, sp, c, m))))
    keep = [(sp, r) for sp, r in zip(sps, rooms) if r > 0]
    if len(keep) > MAX_SERVERS or _count([r for _, r in keep], job.shards) > limit:
        return None
    out = []
    for comp_z in _compositions([r for _, r in keep], job.shards):
        z = {sp: k for (sp, _), k in zip(keep, comp_z) if k > 0}
        if job.max_servers is not None and len(set(alloc) | set(z)) > job.max_servers:
            continue
        out.append(z)
    return out


def estimate_size(instance: Instance) -> float:
    """Product over jobs of their allocation counts (inf when one job alone is too many); a
    parameter-server job's counted with every way to put its shards on the servers its
    component holds (an upper estimate)."""
    st = State(instance)
    total = 1.0
    for jp in range(len(instance.jobs)):
        a = job_allocations(st, jp)
        if a is None:
            return math.inf
        job = instance.jobs[jp]
        n = len(a)
        if job.is_ps and a:
            servers = int((st.component == st.component[next(iter(a[0]))]).sum())
            n *= math.comb(servers + job.shards - 1, job.shards)
        if job.is_hybrid and a:
            # replicas' order does not matter: about a dp-factorial-th of the matrices
            f = math.factorial(int(job.dp or 1))
            n = sum(-(-count_stages(job, group_counts(job, alloc)) // f) for alloc in a)
        total *= max(1, n + (instance.admission == "best_effort"))
    return total


def brute_force(instance: Instance, opts: Options) -> Outcome:
    st = State(instance)
    J = len(instance.jobs)
    factored = is_factored(instance)
    classes = {sp: gpu_classes(instance, sp) for sp in factored_servers(instance)}
    options: list[list[tuple[float, dict[int, int], Any]]] = []
    size = 1.0
    for jp in range(J):
        allocs = job_allocations(st, jp)
        if allocs is None:
            raise MethodUnavailableError(
                f"brute_force: job {instance.jobs[jp].id!r} alone has more than {MAX_ALLOCATIONS} allocations"
            )
        job = instance.jobs[jp]
        if job.is_ps:
            opts_j = _ps_options(instance, st, jp, allocs, opts.budget)
        elif job.is_hybrid:
            opts_j = _hybrid_options(instance, jp, allocs, opts.budget)
        else:
            costs = st.costs(jp, [list(a) for a in allocs]) if allocs else np.zeros(0)
            opts_j = sorted(
                ((float(c), a, None) for c, a in zip(costs, allocs) if math.isfinite(c)), key=lambda t: t[0]
            )
        if factored and opts_j:  # which GPUs, on the servers with per-GPU factors: every choice
            opts_j = _gpu_options(instance, jp, opts_j)
        if opts.budget.expired():  # costing the options took the limit
            return Outcome(None, path=["brute_force"], message="time limit reached while costing the jobs' options")
        options.append(opts_j)
        size *= max(1, len(opts_j) + (instance.admission == "best_effort"))
    if size > MAX_SEARCH:
        raise MethodUnavailableError(
            f"brute_force: {size:.3g} combinations exceed its limit of {MAX_SEARCH:g}; use another method"
        )
    best_cost = [math.inf]
    best_w = [-1.0]
    best_sol: list[dict[int, dict[int, int]] | None] = [None]
    min_rest = np.zeros(J + 1)
    w_rest = np.zeros(J + 1)
    order = sorted(range(J), key=lambda jp: len(options[jp]))
    for i in range(J - 1, -1, -1):
        jp = order[i]
        min_rest[i] = min_rest[i + 1] + (options[jp][0][0] if options[jp] else 0.0)
        w_rest[i] = w_rest[i + 1] + instance.jobs[jp].weight
    best_effort = instance.admission == "best_effort"
    cur: dict[int, dict[int, int]] = {}
    class_left = {(sp, c): len(ids) for sp, cls in classes.items() for c, (ids, _) in enumerate(cls)}
    variant_of: dict[int, Any] = {}
    best_variants: list[dict[int, Any]] = [{}]
    shards_of: dict[int, dict[int, int] | None] = {}
    best_shards: list[dict[int, dict[int, int] | None]] = [{}]
    timed_out = [False]

    def dfs(i: int, cost: float, w: float) -> None:
        if timed_out[0]:
            return
        if i == J:
            if w > best_w[0] + TIE_RTOL or (abs(w - best_w[0]) <= TIE_RTOL and cost < best_cost[0]):
                best_w[0], best_cost[0] = w, cost
                best_sol[0] = {k: dict(v) for k, v in cur.items()}
                best_shards[0] = dict(shards_of)
                best_variants[0] = dict(variant_of)
            return
        if opts.budget.expired():
            timed_out[0] = True
            return
        if best_effort:
            if w + w_rest[i] < best_w[0] - TIE_RTOL:
                return
        elif cost + min_rest[i] >= best_cost[0]:
            return
        jp = order[i]
        job = instance.jobs[jp]
        for c, alloc, z in options[jp]:
            if not best_effort and cost + c + min_rest[i + 1] >= best_cost[0]:
                break
            gv = None
            if factored:  # a GPU choice: the classes' GPUs left
                z, gv = z
                if any(class_left[key] < n for key, n in gv.items()):
                    continue
            # a parameter-server job's shards exactly as enumerated, or not at all
            shards = z if job.is_ps else None
            if all(st.room(jp, [sp])[0] >= k for sp, k in alloc.items()) and st.take(jp, alloc, shards):
                cur[jp] = alloc
                shards_of[jp] = z
                for key, n in (gv or {}).items():
                    class_left[key] -= n
                variant_of[jp] = gv
                dfs(i + 1, cost + c, w + job.weight)
                del cur[jp]
                shards_of.pop(jp, None)
                variant_of.pop(jp, None)
                for key, n in (gv or {}).items():
                    class_left[key] += n
                st.release(jp)
        if best_effort:
            dfs(i + 1, cost, w)

    dfs(0, 0.0, 0.0)
    path = ["brute_force"]
    if best_sol[0] is None:
        if timed_out[0]:
            return Outcome(None, path=path, message="time limit reached before any complete placement")
        return Outcome(None, infeasible=True, path=path, message="enumeration found no placement of every job")
    out = State(instance)
    stages = {}
    for jp, alloc in best_sol[0].items():
        if instance.jobs[jp].is_hybrid:
            stages[instance.jobs[jp].id] = matrix_ids(instance, best_shards[0][jp])  # type: ignore[arg-type]
            out.take(jp, alloc)
        else:
            out.take(jp, alloc, best_shards[0].get(jp))
    gpus = None
    if factored:
        counts = {(jp, sp, c): n for jp, gv in best_variants[0].items() for (sp, c), n in (gv or {}).items()}
        gpus = ids_of_counts(instance, _class_ids(instance), counts)
    proven = not timed_out[0]
    bound = None
    if proven:
        bound = evaluate(instance, out.assignment(), out.shard_assignment(), stages, gpus).objective
    return Outcome(
        out.assignment(),
        optimal=proven,
        bound=bound,
        path=path,
        message=None if proven else "time limit reached: best placement found, not proven",
        shards=out.shard_assignment(),
        stages=stages,
        gpus=gpus,
    )


def _gpu_variants(instance: Instance, alloc: dict[int, int]) -> list[dict[tuple[int, int], int]]:
    """Every choice of GPU classes for ``alloc`` on its factored servers: per (server, class)
    the workers there."""
    per: list[list[dict[tuple[int, int], int]]] = []
    fac = factored_servers(instance)
    for sp, k in sorted(alloc.items()):
        if sp not in fac:
            continue
        sizes = [len(ids) for ids, _ in gpu_classes(instance, sp)]
        per.append([{(sp, c): n for c, n in enumerate(comp) if n} for comp in _compositions(sizes, k)])
    out: list[dict[tuple[int, int], int]] = [{}]
    for choices in per:
        out = [{**a, **b} for a in out for b in choices]
        if len(out) > MAX_ALLOCATIONS:
            raise MethodUnavailableError(f"brute_force: more than {MAX_ALLOCATIONS} choices of GPUs for one allocation")
    return out


def _gpu_options(
    instance: Instance, jp: int, options: list[tuple[float, dict[int, int], Any]]
) -> list[tuple[float, dict[int, int], Any]]:
    """Each option of job ``jp`` with every choice of GPU classes, costed by the evaluator on the
    job alone (the objective is a sum over jobs, each job's term its own placement's)."""
    job = instance.jobs[jp]
    wf = weight_factor(instance, job)
    out = []
    for _, alloc, z in options:
        for gv in _gpu_variants(instance, alloc):
            x = {instance.servers[sp].id: k for sp, k in alloc.items()}
            shards = {job.id: {instance.servers[sp].id: k for sp, k in z.items()}} if job.is_ps and z else None
            stages = {job.id: matrix_ids(instance, z)} if job.is_hybrid else None
            ids = ids_of_counts(instance, _class_ids(instance), {(jp, sp, c): n for (sp, c), n in gv.items()})
            with np.errstate(invalid="ignore", divide="ignore"):
                t = evaluate(instance, {job.id: x}, shards, stages, ids).jobs[job.id].expected_iteration_ms
            if math.isfinite(t) and meets_deadline(job, t):
                out.append((wf * t, alloc, (z, gv)))
        if len(out) > MAX_ALLOCATIONS:
            raise MethodUnavailableError(f"brute_force: job {job.id!r} has more than {MAX_ALLOCATIONS} GPU choices")
    return sorted(out, key=lambda o: o[0])


def _chunked(items: list[Any], cost: Any, budget: Budget) -> list[Any]:
    """``cost(chunk)`` of ``items`` in chunks of :data:`COST_CHUNK`, concatenated; stops
    early (fewer results than items) once ``budget`` expires: the caller then has no time
    left to enumerate anyway."""
    out: list[Any] = []
    for a in range(0, len(items), COST_CHUNK):
        if a and budget.expired():
            break
        out += list(cost(items[a : a + COST_CHUNK]))
    return out


def _hybrid_options(
    instance: Instance, jp: int, allocs: list[dict[int, int]], budget: Budget
) -> list[tuple[float, dict[int, int], Any]]:
    """Every (workers, stage matrix) of a hybrid job with its exact cost, cheapest first.
    Matrices that differ only in the order of their replicas (columns) have the same iteration
    time (the same stage boundaries, the same servers per stage): one of each is evaluated."""
    job = instance.jobs[jp]
    dp = int(job.dp or 1)
    items: list[tuple[dict[int, int], PosMatrix]] = []
    walk = 0
    for alloc in allocs:
        counts = group_counts(job, alloc)
        n = count_stages(job, counts)
        walk += n
        if len(items) + n // math.factorial(dp) > MAX_ALLOCATIONS or walk > MAX_WALK:
            raise MethodUnavailableError(
                f"brute_force: job {job.id!r} has more than {MAX_ALLOCATIONS} placements of its groups"
                + (f" ({walk:,} arrangements to walk)" if walk > MAX_WALK else "")
            )
        items += [(alloc, m) for m in all_stages(job, counts, budget.expired)]
        if budget.expired():
            return []
    if not items:
        return []
    e = _chunked(items, lambda chunk: hybrid_phase(instance, [(jp, m) for _, m in chunk])[0], budget)
    wf = weight_factor(instance, job)
    out = []
    for (alloc, m), ek in zip(items, e):
        t = float(ek)
        if math.isfinite(t) and meets_deadline(job, t):
            out.append((wf * t, alloc, m))
    return sorted(out, key=lambda o: o[0])


def _ps_options(
    instance: Instance, st: State, jp: int, allocs: list[dict[int, int]], budget: Budget
) -> list[tuple[float, dict[int, int], dict[int, int] | None]]:
    """Every (workers, shards) of a parameter-server job with its exact cost, cheapest first."""
    job = instance.jobs[jp]
    pairs = []
    for alloc in allocs:
        zs = shard_placements(st, jp, alloc)
        if zs is None:
            raise MethodUnavailableError(
                f"brute_force: job {job.id!r} has more than {MAX_ALLOCATIONS} shard placements"
            )
        pairs += [(alloc, z) for z in zs]
        if len(pairs) > MAX_ALLOCATIONS:
            raise MethodUnavailableError(
                f"brute_force: job {job.id!r} has more than {MAX_ALLOCATIONS} placements of workers and shards"
            )
    if not pairs:
        return []
    e = _chunked(pairs, lambda chunk: st.idx.expected_max([(jp, sorted(a)) for a, _ in chunk])[0], budget)
    comm = _chunked(pairs, lambda chunk: ps_phase(instance, [(jp, a, z) for a, z in chunk])[0], budget)
    wf = weight_factor(instance, job)
    out = []
    for (alloc, z), ek, ck in zip(pairs, e, comm):
        t = float(ek) + float(ck)
        if math.isfinite(t) and meets_deadline(job, t):
            out.append((wf * t, alloc, z))
    return sorted(out, key=lambda o: o[0])


def _class_ids(instance: Instance) -> dict[int, list[tuple[int, ...]]]:
    """Each factored server's GPU classes (their indices)."""
    return {sp: [ids for ids, _ in gpu_classes(instance, sp)] for sp in factored_servers(instance)}
