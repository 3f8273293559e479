"""Local search that improves any placement: hill-climbing over the moves of :data:`MOVES`,
then iterated local search (ruin a few jobs, recreate them greedily, climb again, keep the
result only if it is better), seeded, within the budget.

Every move is priced exactly (``State.costs``) and respects capacity, ``max_servers`` and,
when re-planning, the move budget and price.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from placement.evaluation.bounds import job_lower_bound
from placement.evaluation.ranking import placement_key
from placement.formulations.transport import CLASS_STEP, transport_lp
from placement.methods.greedy import greedy, greedy_job, price_guided_greedy
from placement.methods.replan import start_from_previous
from placement.model.records import Assignment, Instance
from placement.model.tolerances import IMPROVE_RTOL
from placement.problem.state import State
from placement.solving.budget import Budget, checks_margin
from placement.solving.options import Options, Outcome

__all__ = [
    "local_search",
    "bound_then_improve",
    "MOVES",
    "KICK_SIZE",
    "PATIENCE_MIN",
    "PATIENCE_PER_JOB",
    "RELOCATE_TARGETS",
    "SWAP_TARGETS",
]

RELOCATE_TARGETS = 8
"""``relocate`` tries the servers of least expected compute time, this many."""
SWAP_TARGETS = 6
"""``swap`` tries this many best servers and this many random others."""
KICK_SIZE = (2, 4)
"""A kick ruins between this many jobs (inclusive)."""
PATIENCE_MIN = 30
PATIENCE_PER_JOB = 3
"""The iterated local search stops after ``max(PATIENCE_MIN, PATIENCE_PER_JOB * jobs)``
kicks in a row that did not help (or at the end of the budget)."""


def _improve(st: State, rng: np.random.Generator, budget: Budget, jobs: Sequence[int] | None = None) -> int:
    """Hill-climb (over ``jobs``, default all) until a pass makes no move or time runs
    out; returns moves made."""
    inst = st.instance
    moves = 0
    pool = np.arange(len(inst.jobs)) if jobs is None else np.asarray(list(jobs), dtype=np.int64)
    improved = True
    while improved and not budget.expired():
        improved = False
        # best effort: insert what now fits (more weight placed always wins)
        for jp in pool:
            jp = int(jp)
            if jp not in st.x:
                alloc, c = greedy_job(st, jp)
                if alloc is not None:
                    st.take(jp, alloc)
                    moves += 1
                    improved = True
        for jp in rng.permutation(pool):
            jp = int(jp)
            if budget.expired():
                break
            if jp not in st.x:
                continue
            if any(move(st, jp, rng) for _, move in MOVES):
                moves += 1
                improved = True
    return moves


def _better(new: float, old: float) -> bool:
    return new < old - IMPROVE_RTOL * max(1.0, abs(old))


def _reinsert(st: State, jp: int, rng: np.random.Generator) -> bool:
    """Take the job out and put it back where the greedy would now."""
    old_alloc, old_z = st.x[jp], dict(st.z.get(jp, {})) or None
    old = st.priced(jp, old_alloc)
    st.release(jp)
    alloc, c = greedy_job(st, jp)
    st.take(jp, old_alloc, old_z)
    if alloc is not None and _better(st.priced(jp, alloc), old) and st.change_ok({jp: (old_alloc, alloc)}):
        return _replace(st, jp, alloc)
    return False


def _replace(st: State, jp: int, alloc: dict[int, int]) -> bool:
    """Move ``jp`` to ``alloc``; back to where it was (its shards too) if its shards do not
    fit there."""
    old_alloc, old_z = st.x[jp], dict(st.z.get(jp, {})) or None
    st.release(jp)
    if st.take(jp, alloc):
        return True
    st.take(jp, old_alloc, old_z)
    return False


def _relocate(st: State, jp: int, rng: np.random.Generator, top: int = RELOCATE_TARGETS) -> bool:
    """Move all of ``jp``'s workers off one server: onto one new server, or onto the
    job's other servers (fewer servers)."""
    job = st.instance.jobs[jp]
    alloc = st.x[jp]
    old = st.priced(jp, alloc)
    score = st.score(jp)
    allowed = st.allowed(jp)
    used = np.array(sorted(alloc), dtype=np.int64)
    rooms = st.room(jp, allowed)
    free_targets = allowed[(rooms > 0) & ~np.isin(allowed, used)]
    if len(free_targets) > top:
        free_targets = free_targets[np.argsort(score[free_targets], kind="stable")[:top]]
    for n in used[np.argsort(-score[used], kind="stable")]:
        n = int(n)
        k = alloc[n]
        rest = {s: c for s, c in alloc.items() if s != n}
        options: list[dict[int, int]] = []
        # merge into the job's other servers (targets elsewhere that cannot reach the
        # job's other servers cost inf through the all-reduce term)
        if rest:
            room_rest = st.room(jp, list(rest))
            if room_rest.sum() >= k:
                merged = dict(rest)
                need = k
                for s, r in sorted(zip(rest, room_rest), key=lambda t: score[t[0]]):
                    add = int(min(r, need))
                    merged[s] += add
                    need -= add
                    if need == 0:
                        break
                options.append(merged)
        rt = st.room(jp, free_targets) if len(free_targets) else np.zeros(0, dtype=np.int64)
        for m, r in zip(free_targets, rt):
            if r >= k:
                opt = dict(rest)
                opt[int(m)] = k
                if job.max_servers is None or len(opt) <= job.max_servers:
                    options.append(opt)
        options = [o for o in options if st.change_ok({jp: (alloc, o)})]
        if not options:
            continue
        costs = st.alloc_costs(jp, options)
        if st.move_cost or st.restart_price:
            costs = costs + np.array([st.move_price(jp, o) for o in options])
        b = int(np.argmin(costs))
        if _better(float(costs[b]), old) and _replace(st, jp, options[b]):
            return True
    return False


def _swap(st: State, jp: int, rng: np.random.Generator, top: int = SWAP_TARGETS) -> bool:
    """Exchange one of ``jp``'s servers with a server of another job, all workers of
    both jobs on them moving, when capacity allows and the sum of costs drops."""
    inst = st.instance
    alloc = st.x[jp]
    score = st.score(jp)
    order = st.by_score(jp)  # fastest first
    others = order[~np.isin(order, np.fromiter(alloc, dtype=np.int64, count=len(alloc)))]
    if not len(others):
        return False
    targets = [int(s) for s in others[:top]]
    if len(others) > top:
        targets += [int(s) for s in rng.choice(others[top:], size=min(top, len(others) - top), replace=False)]
    holders = st.holders
    gpus = st.gpus
    worst = sorted(alloc, key=lambda s: -score[s])[:2]
    old_j = st.priced(jp, alloc)
    for n in worst:
        for m in targets:
            if score[m] >= score[n]:
                continue
            for ip in sorted(holders.get(m, ())):
                if ip == jp:
                    continue
                a_i = st.x[ip]
                if n in a_i or m in alloc or not inst.jobs[ip].allows(inst.servers[n]):
                    continue
                if gpus[m] + a_i[m] < alloc[n] or gpus[n] + alloc[n] < a_i[m]:
                    continue  # not enough GPUs after the exchange (CPU and memory: the trial below)
                new_j = {s: c for s, c in alloc.items() if s != n}
                new_j[m] = alloc[n]
                new_i = {s: c for s, c in a_i.items() if s != m}
                new_i[n] = a_i[m]
                mj, mi = inst.jobs[jp].max_servers, inst.jobs[ip].max_servers
                if (mj is not None and len(new_j) > mj) or (mi is not None and len(new_i) > mi):
                    continue
                old = old_j + st.priced(ip, a_i)
                new = st.priced(jp, new_j) + st.priced(ip, new_i)
                if not _better(new, old) or not st.change_ok({jp: (alloc, new_j), ip: (a_i, new_i)}):
                    continue
                # capacity (and shards) check by trial; anything short of both: as it was
                # (both released, their old servers and shards fit again)
                old_zj, old_zi = dict(st.z.get(jp, {})) or None, dict(st.z.get(ip, {})) or None
                st.release(jp)
                st.release(ip)
                if st.room(jp, [m])[0] >= new_j[m] and st.take(jp, new_j):
                    if st.room(ip, [n])[0] >= new_i[n] and st.take(ip, new_i):
                        return True
                    st.release(jp)
                st.take(jp, alloc, old_zj)
                st.take(ip, a_i, old_zi)
    return False


Move = Callable[[State, int, np.random.Generator], bool]

MOVES: tuple[tuple[str, Move], ...] = (
    ("reinsert", _reinsert),
    ("relocate", _relocate),
    ("swap", _swap),
)
"""The moves of the hill-climb, tried in this order on each job; the first that improves
is taken.  A new move is a function ``(state, job position, rng) -> bool`` (it applies
itself when it improves) and one line here."""


def _perturb(st: State, rng: np.random.Generator, budget: Budget, jobs: Sequence[int] | None = None) -> tuple[int, int]:
    """Iterated local search: ruin ``KICK_SIZE`` random jobs (of ``jobs``, default all),
    recreate them greedily in random order, hill-climb around them, keep the result only if
    it is better.  Stops at the end of the budget or after the patience runs out."""
    inst = st.instance
    J = len(inst.jobs) if jobs is None else len(jobs)
    if len(inst.jobs) < 2 or J == 0:
        return 0, 0
    pool = None if jobs is None else set(jobs)
    best_rank, best = st.rank(), st.snapshot()
    patience = max(PATIENCE_MIN, PATIENCE_PER_JOB * J)
    kicks = kept = fails = 0
    while fails < patience and not budget.expired():
        kicks += 1
        placed = sorted(st.x) if pool is None else sorted(pool.intersection(st.x))
        k = min(len(placed), int(rng.integers(KICK_SIZE[0], KICK_SIZE[1] + 1)))
        if k == 0:
            break
        victims = [int(v) for v in rng.choice(placed, size=k, replace=False)]
        for jp in victims:
            st.release(jp)
        for jp in rng.permutation(victims):
            alloc, _ = greedy_job(st, int(jp))
            if alloc is not None:
                st.take(int(jp), alloc)
        # climb again around the kick only: the victims and the jobs sharing their servers
        near = set(victims)
        for jp in victims:
            for sp in st.x.get(jp, {}):
                near |= st.holders.get(sp, set())
        _improve(st, rng, budget, sorted(near))
        r = st.rank()
        within = st.move_budget is None or st.moved <= st.move_budget
        if within and (r[0] < best_rank[0] or (r[0] == best_rank[0] and _better(r[1], best_rank[1]))):
            best_rank, best = r, st.snapshot()
            kept += 1
            fails = 0
        else:
            st.restore(best)
            fails += 1
    st.restore(best)
    return kicks, kept


HOPEFUL_FROM = 64
"""Priced re-plans of more jobs than this search around the jobs that could repay a move
(:func:`_hopeful`); smaller ones search around every job.  On the README window (5 seeds,
``auto``/estimated, 256 GPUs, at most about 110 jobs running) searching around the hopeful jobs
always gave 34,307 s mean JCT in 37 s of wall time per run, around every job 34,208 s in 58 s;
on 1,024 GPUs the hopeful ones halve the re-plans' time."""
FREE_SHARE = 0.4
"""Priced re-planning (:func:`_priced_replan`): the share of the time left that the search
with free moves gets, after the priced search from the previous placement had as much."""


def _revert(st: State) -> int:
    """Put moved jobs back on their previous servers, one at a time, where those are free
    and the move did not pay for itself (its cost plus price above staying); returns how
    many went back."""
    back = 0
    changed = True
    while changed:
        changed = False
        for jp in sorted(st.prev):
            alloc, was = st.x.get(jp), st.prev[jp]
            if alloc is None or not was or st.moves_of(jp, alloc) == 0:
                continue
            if not _better(st.cost(jp, was), st.priced(jp, alloc)) or not st.change_ok({jp: (alloc, was)}):
                continue
            old_z = dict(st.z.get(jp, {})) or None
            st.release(jp)
            if all(r >= was[sp] for sp, r in zip(was, st.room(jp, list(was)))) and st.take(jp, was):
                back += 1
                changed = True
            else:
                st.take(jp, alloc, old_z)
    return back


def _hopeful(st: State) -> list[int]:
    """The jobs a priced re-plan searches around: new or unplaced ones, and those whose cost
    where they are exceeds their lower bound (:func:`~placement.evaluation.bounds.job_lower_bound`,
    every free GPU theirs) by more than the price of moving them.  The others could not repay
    a move of their own; they still step aside when a hopeful job's swap or kick asks."""
    inst = st.instance
    out = []
    for jp in range(len(inst.jobs)):
        alloc = st.x.get(jp)
        if jp not in st.prev or alloc is None:
            out.append(jp)
            continue
        price = st.restart_price.get(jp, 0.0) + st.move_cost
        if st.cost(jp, alloc) - job_lower_bound(inst, jp) > price:
            out.append(jp)
    return out


def _priced_replan(instance: Instance, opts: Options, st: State, path: list[str]) -> State:
    """Re-planning with priced moves.  A move that pays only together with others (a job
    steps aside so that a long one can consolidate) is uphill for a priced climb, one job at
    a time.  So: the priced climb from the previous placement (``st``) with a first share of
    the time; a climb with the moves free with :data:`FREE_SHARE` of the rest; from there,
    every move that does not pay on its own goes back (:func:`_revert`) and a priced climb
    follows.  The better of the two priced results is kept (staying put is where both
    start, so the answer never costs more than not moving)."""
    assert opts.previous is not None
    rng = np.random.default_rng(opts.seed)
    pool = _hopeful(st) if len(instance.jobs) > HOPEFUL_FROM else list(range(len(instance.jobs)))
    if not pool:
        path.append("priced_replan(no job could repay its move)")
        return st
    _improve(st, rng, opts.budget.share(FREE_SHARE), pool)
    _perturb(st, rng, opts.budget.share(FREE_SHARE), pool)
    _revert(st)
    free, _ = start_from_previous(instance, opts.previous, opts.max_moves, 0.0, opts.previous_shards)
    part = opts.budget.share(FREE_SHARE)
    _improve(free, rng, part, pool)
    _perturb(free, rng, part, pool)
    alt = State.from_assignment(instance, free.assignment(), free.shard_assignment())
    alt.set_previous(st.prev, st.move_budget, st.move_cost, st.restart_price)
    back = _revert(alt)
    _improve(alt, rng, opts.budget, pool)
    within = alt.move_budget is None or alt.moved <= alt.move_budget
    (wa, ca), (ws, cs) = alt.rank(), st.rank()
    take = alt.complete and within and (wa < ws or (wa == ws and _better(ca, cs)))
    path.append(f"priced_replan(free moves then {back} reverted: {'kept' if take else 'not better'})")
    return alt if take else st


def local_search(instance: Instance, opts: Options) -> Outcome:
    """Local search from ``opts.start`` (or greedy), seeded, within the time limit."""
    path: list[str] = []
    if opts.previous is not None:
        st, note = start_from_previous(
            instance, opts.previous, opts.max_moves, opts.move_cost, opts.previous_shards, opts.restart_cost
        )
        path.append(note)
        if st.restart_price or st.move_cost:
            st = _priced_replan(instance, opts, st, path)
            if not st.complete:
                return Outcome(None, path=path, message="local search could not place every job")
            return Outcome(st.assignment(), path=path, shards=st.shard_assignment())
    elif opts.start is not None:
        st = State.from_assignment(instance, opts.start)
        path.append("start")
    else:
        g = greedy(instance, opts)
        path += g.path
        if g.assignment is None:
            return Outcome(None, path=path + ["local_search"], message=g.message)
        st = State.from_assignment(instance, g.assignment, g.shards)
    rng = np.random.default_rng(opts.seed)
    moves = _improve(st, rng, opts.budget)
    kicks, kept = _perturb(st, rng, opts.budget)
    path.append(f"local_search({moves} moves, {kicks} kicks, {kept} kept)")
    if not st.complete:
        return Outcome(None, path=path, message="local search could not place every job")
    return Outcome(st.assignment(), path=path, shards=st.shard_assignment())


LP_SHARE = 0.7
"""``bound_then_improve`` gives the transportation LP at most this share of the time left
(it stops when solved: about 25 s at 4,278 servers, 6 s at 4,000)."""
PRICED_ROOM = 0.3
"""``bound_then_improve`` runs the price-guided greedy after a start only with at least
this share of the time limit left (a pass takes about 3 s at 4,278 servers)."""


REFINE_ROOM = 2.5
"""See :func:`bound_then_improve`: a coarse LP is solved again with fine classes only when
this many times its time is left for it (fine classes took 1.9x as long on fleet1g-4278)."""


def bound_then_improve(
    instance: Instance,
    opts: Options,
    best: Assignment,
    path: list[str],
    label: str = "",
    shards: Assignment | None = None,
    class_step: float = CLASS_STEP,
    priced_room_s: float | None = None,
) -> tuple[Assignment, Assignment | None, float | None]:
    """The last steps of ``auto`` and ``pop`` from the placement ``best`` (with its
    parameter-server ``shards``): the transportation-LP bound first (admission ``all``; its
    first restricted LP seeded with ``best``, its classes rounded to ``class_step``; at most
    :data:`LP_SHARE` of the time left, at least 0.5 s: it stops when solved, and on large
    fleets a bound is worth more than the last tenths of a percent local search finds); when
    the LP was solved, the greedy guided by its GPU prices (:func:`price_guided_greedy`) if
    at least :data:`PRICED_ROOM` of the time limit is left (``priced_room_s`` seconds, when
    given); then local search from the better placement with the rest of the budget less the
    driver's checks margin; before it, when the LP's classes were coarser than
    :data:`~placement.formulations.transport.CLASS_STEP` and :data:`REFINE_ROOM` times its
    time is left to the LP, the LP again at that step (a tighter bound).  Returns the best
    placement found, its shards and the bound.
    With a ``label``, the steps are named in ``path`` after it."""
    cands: list[tuple[Assignment, Assignment | None]] = []
    keys: list[tuple[float, float]] = []

    def offer(assignment: Assignment | None, its_shards: Assignment | None) -> None:
        if assignment is not None:
            cands.append((assignment, its_shards))
            keys.append(placement_key(instance, assignment, its_shards))

    def leader() -> tuple[Assignment, Assignment | None]:
        return cands[min(range(len(cands)), key=lambda i: (keys[i], i))]

    offer(best, shards)
    bound = None
    if instance.admission == "all":
        began = opts.budget.now()
        lp = transport_lp(
            instance, time_limit_s=max(0.5, LP_SHARE * opts.budget.left()), start=best, class_step=class_step
        )
        took = opts.budget.now() - began
        bound = lp.bound
        if bound is not None and label:
            path.append(f"{label}transport_bound")
        opts.report("bound", best, bound)
        room = PRICED_ROOM * opts.time_limit_s if priced_room_s is None else priced_room_s
        if lp.solved and lp.gpu_price is not None and lp.whole_price is not None and opts.budget.left() >= room:
            st, rounds = price_guided_greedy(instance, (lp.gpu_price, lp.whole_price), opts)
            path.append(f"{label}price_guided_greedy" + (f"({rounds} rounds)" if rounds > 1 else ""))
            if st.complete:
                offer(st.assignment(), st.shard_assignment())
                opts.report("price_guided_greedy", leader()[0], bound)
        if class_step > CLASS_STEP and lp.solved and LP_SHARE * opts.budget.left() >= REFINE_ROOM * took:
            fine = transport_lp(
                instance, time_limit_s=LP_SHARE * opts.budget.left(), start=leader()[0], class_step=CLASS_STEP
            )
            if fine.bound is not None and (bound is None or fine.bound > bound):
                bound = fine.bound
                path.append(f"{label}transport_bound(refined)")
    start = leader()[0]
    end = opts.budget.before(checks_margin(opts.time_limit_s))
    if end.left() > 0.1:
        ls = local_search(instance, opts.but(start=start, budget=end, previous=None))
        path += ([f"{label}local_search"] if label else []) + ls.path
        offer(ls.assignment, ls.shards)
    best, shards = leader()
    return best, shards, bound
