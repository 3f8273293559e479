"""Straggler-aware heuristics: a greedy construction and a local search.

Both price every candidate with the evaluator's exact kernel (``State.costs``), so they
trade the expected slowest-worker time against the all-reduce cost of the candidate's
actual bottleneck bandwidth.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from placement.model import Instance
from placement.registry import Options, Outcome
from placement.state import State

__all__ = ["greedy", "local_search", "greedy_job", "job_order", "greedy_state"]

IMPROVE_RTOL = 1e-9
"""A move must lower the cost by more than this relative amount to be taken."""


def job_order(instance: Instance) -> list[int]:
    """Least flexible first: jobs whose allowed servers offer few GPUs per worker needed
    (restricted GPU types or servers) come first, by powers of two of that ratio; within
    a class, largest gangs first (hardest to fit), then heaviest per-iteration cost."""
    idx = instance.eval_index
    free = instance.cluster.free_gpus

    def flex(jp: int) -> int:
        usable = int(free[np.isfinite(idx.job_a(jp))].sum())
        return int(math.floor(math.log2(max(usable, 1) / instance.jobs[jp].workers))) if usable else -1

    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (min(flex(jp), 6), -instance.jobs[jp].workers,
                        -instance.jobs[jp].weight * instance.jobs[jp].compute_ms, jp),
    )


def density_order(instance: Instance) -> list[int]:
    """Most weight per GPU first, smaller gangs first among equals (best-effort admission:
    the knapsack greedy for the weight placed)."""
    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (-instance.jobs[jp].weight / instance.jobs[jp].workers, instance.jobs[jp].workers, jp),
    )


def rank(st: State) -> tuple[float, float]:
    """Lexicographic key of a state, smaller is better: (-weight placed, objective plus
    the price of moved workers when re-planning)."""
    w = sum(st.instance.jobs[jp].weight for jp in st.x)
    return (-w, sum(st.cost(jp, a) for jp, a in st.x.items()) + st.move_cost * st.moved)


def _fill(members: np.ndarray, rooms: np.ndarray, order: np.ndarray, W: int) -> dict[int, int]:
    need = W
    alloc: dict[int, int] = {}
    for sp, rr in zip(members[order], rooms[order]):
        k = int(min(rr, need))
        alloc[int(sp)] = k
        need -= k
        if need == 0:
            break
    return alloc


def greedy_job(st: State, jp: int) -> tuple[dict[int, int] | None, float]:
    """The cheapest candidate allocation of ``jp`` on the current free capacity, and its
    cost (inf: none fits).

    Candidates: the best single servers; and inside each bandwidth domain able to hold the
    gang, fills in three orders (expected compute time; fewest servers; probability of no
    slowdown).  Domains are visited by increasing optimistic cost (their best server's
    expected compute time plus the all-reduce time at their bandwidth) and skipped once that
    cannot beat the best candidate found, which keeps the work per job near-linear in the
    number of servers.
    """
    from placement.evaluate import comm_ms, job_weight_factor

    inst = st.instance
    job = inst.jobs[jp]
    W = job.workers
    allowed = st.allowed(jp)
    if len(allowed) == 0:
        return None, math.inf
    rooms = st.room(jp, allowed)
    ok = rooms > 0
    cand, crooms = allowed[ok], rooms[ok]
    if crooms.sum() < W:
        return None, math.inf
    score = st.score(jp)
    best_alloc: dict[int, int] | None = None
    best = math.inf
    single = cand[crooms >= W]
    if len(single):
        c = np.array([comm_ms(job, b) for b in st.cluster.intra_bandwidth[single]]) if W > 1 else 0.0
        top = single[np.argsort(score[single] + c, kind="stable")[:3]]
        singles = [{int(sp): W} for sp in top]
        costs = st.costs(jp, [list(o) for o in singles])
        k = int(np.argmin(costs))
        if math.isfinite(costs[k]):
            best_alloc, best = singles[k], float(costs[k])
    if W == 1 or job.max_servers == 1:
        return best_alloc, best
    cl = st.cluster
    if not cl.domains:
        return best_alloc, best
    room_full = np.zeros(st.n, dtype=np.int64)
    room_full[cand] = crooms
    concat, offsets = cl.domain_concat
    dom_room = np.add.reduceat(room_full[concat], offsets)
    dom_maxroom = np.maximum.reduceat(room_full[concat], offsets)
    # a set of k >= 2 servers of D has E[max] >= its largest E[a S] >= D's k-th smallest
    masked = np.where(room_full > 0, score, math.inf)[concat]
    seg = np.repeat(np.arange(len(offsets)), np.diff(np.append(offsets, len(concat))))
    sorted_scores = masked[np.lexsort((masked, seg))]
    lens = np.diff(np.append(offsets, len(concat)))
    k = np.maximum(2, -(-W // np.maximum(dom_maxroom, 1)))
    kth = sorted_scores[offsets + np.minimum(k, lens) - 1]
    wf = job_weight_factor(inst, job)
    lb = np.array([wf * (m + comm_ms(job, d.bandwidth_gbps)) if r >= W else math.inf
                   for m, d, r in zip(kth, cl.domains, dom_room)])
    order = np.argsort(lb, kind="stable")
    pos = 0
    while pos < len(order) and lb[order[pos]] < best * (1 - IMPROVE_RTOL):
        # a chunk of domains at a time: one call of the exact kernel, then prune again
        opts: list[dict[int, int]] = []
        while pos < len(order) and len(opts) < 24 and lb[order[pos]] < best * (1 - IMPROVE_RTOL):
            members = cl.domain_members[order[pos]]
            pos += 1
            m = members[room_full[members] > 0]
            r, sc = room_full[m], score[m]
            sv = st.idx.job_survival(jp, m)
            for o in (np.lexsort((-r, sc)), np.lexsort((sc, -r)), np.lexsort((-r, sc, -sv))):
                alloc = _fill(m, r, o, W)
                if job.max_servers is None or len(alloc) <= job.max_servers:
                    opts.append(alloc)
        if not opts:
            continue
        costs = st.costs(jp, [list(o) for o in opts])
        k = int(np.argmin(costs))
        if costs[k] < best:
            best_alloc, best = opts[k], float(costs[k])
    return best_alloc, best


def greedy_state(instance: Instance, order: Sequence[int] | None = None) -> State:
    st = State(instance)
    for jp in order if order is not None else job_order(instance):
        alloc, _ = greedy_job(st, jp)
        if alloc is not None:
            st.take(jp, alloc)
    return st


def _complete(instance: Instance, st: State) -> bool:
    return instance.admission != "all" or len(st.x) == len(instance.jobs)


GREEDY_ROUNDS = 4
"""Squeaky-wheel rounds: jobs left out by one greedy pass go first in the next."""


def greedy(instance: Instance, opts: Options) -> Outcome:
    """Straggler- and communication-aware greedy construction.

    With admission ``all``, jobs a pass could not place (their servers taken by more
    flexible jobs) go first in the next pass, up to ``GREEDY_ROUNDS`` passes; if some still
    do not fit, the consolidating baseline's packing is the fallback start."""
    t_end = opts.deadline if opts.deadline else time.monotonic() + opts.time_limit_s
    order = job_order(instance)
    st = greedy_state(instance, order)
    path = ["greedy"]
    rounds = 1
    while instance.admission == "all" and not _complete(instance, st) and rounds < GREEDY_ROUNDS and time.monotonic() < t_end:
        failed = [jp for jp in order if jp not in st.x]
        order = failed + [jp for jp in order if jp in st.x]
        nxt = greedy_state(instance, order)
        rounds += 1
        if rank(nxt) < rank(st):
            st = nxt
    if rounds > 1:
        path = [f"greedy({rounds} rounds)"]
    if instance.admission == "best_effort":
        st2 = greedy_state(instance, density_order(instance))
        if rank(st2) < rank(st):
            st = st2
            path = ["greedy(weight-density order)"]
    if not _complete(instance, st):
        from placement.baselines import consolidate_state

        st2 = consolidate_state(instance)
        path.append("consolidate-fallback")
        if _complete(instance, st2):
            st = st2
        else:
            return Outcome(None, path=path, message="greedy and the consolidating fallback could not place every job")
    return Outcome(st.assignment(), path=path)


def _improve(st: State, opts: Options, rng: np.random.Generator, t_end: float,
             jobs: Sequence[int] | None = None) -> int:
    """Hill-climb (over ``jobs``, default all) until a pass makes no move or time runs
    out; returns moves made."""
    inst = st.instance
    moves = 0
    pool = np.arange(len(inst.jobs)) if jobs is None else np.asarray(list(jobs), dtype=np.int64)
    improved = True
    while improved and time.monotonic() < t_end:
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
            if time.monotonic() >= t_end:
                break
            if jp not in st.x:
                continue
            if _reinsert(st, jp) or _relocate(st, jp) or _swap(st, jp, rng):
                moves += 1
                improved = True
    return moves


def _better(new: float, old: float) -> bool:
    return new < old - IMPROVE_RTOL * max(1.0, abs(old))


def _reinsert(st: State, jp: int) -> bool:
    old_alloc = st.x[jp]
    old = st.priced(jp, old_alloc)
    st.release(jp)
    alloc, c = greedy_job(st, jp)
    st.take(jp, old_alloc)
    if alloc is not None and _better(st.priced(jp, alloc), old) and st.change_ok({jp: (old_alloc, alloc)}):
        st.release(jp)
        st.take(jp, alloc)
        return True
    return False


def _relocate(st: State, jp: int, top: int = 8) -> bool:
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
        costs = st.costs(jp, [list(o) for o in options])
        if st.move_cost:
            costs = costs + st.move_cost * np.array([st.moves_of(jp, o) for o in options])
        b = int(np.argmin(costs))
        if _better(float(costs[b]), old):
            st.release(jp)
            st.take(jp, options[b])
            return True
    return False


def _swap(st: State, jp: int, rng: np.random.Generator, top: int = 6) -> bool:
    """Exchange one of ``jp``'s servers with a server of another job, all workers of
    both jobs on them moving, when capacity allows and the sum of costs drops."""
    inst = st.instance
    alloc = st.x[jp]
    score = st.score(jp)
    allowed = st.allowed(jp)
    used = set(alloc)
    others = [int(s) for s in allowed if int(s) not in used]
    if not others:
        return False
    others.sort(key=lambda s: score[s])
    targets = others[:top]
    if len(others) > top:
        targets += [int(s) for s in rng.choice(others[top:], size=min(top, len(others) - top), replace=False)]
    holders = st.holders
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
                if n in a_i or m in st.x[jp] or not inst.jobs[ip].allows(inst.servers[n]):
                    continue
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
                # capacity check by trial
                sj, si = st.release(jp), st.release(ip)
                if st.room(jp, [m])[0] >= new_j[m]:
                    st.take(jp, new_j)
                    if st.room(ip, [n])[0] >= new_i[n]:
                        st.take(ip, new_i)
                        return True
                    st.release(jp)
                st.take(jp, sj)
                st.take(ip, si)
    return False


def _perturb(st: State, opts: Options, rng: np.random.Generator, t_end: float) -> tuple[int, int]:
    """Iterated local search: ruin 2-4 random jobs, recreate them greedily in random order,
    hill-climb, keep the result only if it is better.  Stops at the time limit or after
    ``max(30, 3 J)`` kicks in a row that did not help."""
    inst = st.instance
    J = len(inst.jobs)
    if J < 2:
        return 0, 0
    best_rank, best = rank(st), st.snapshot()
    patience = max(30, 3 * J)
    kicks = kept = fails = 0
    while fails < patience and time.monotonic() < t_end:
        kicks += 1
        placed = sorted(st.x)
        k = int(min(len(placed), rng.integers(2, 5)))
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
        _improve(st, opts, rng, t_end, sorted(near))
        r = rank(st)
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


def local_search(instance: Instance, opts: Options) -> Outcome:
    """Local search from ``opts.start`` (or greedy), seeded, within the time limit."""
    t_end = opts.deadline if opts.deadline else time.monotonic() + opts.time_limit_s
    path: list[str] = []
    if opts.previous is not None:
        from placement.replan import start_from_previous

        st, note = start_from_previous(instance, opts.previous, opts.max_moves, opts.move_cost)
        path.append(note)
    elif opts.start is not None:
        st = State.from_assignment(instance, opts.start)
        path.append("start")
    else:
        g = greedy(instance, opts)
        path += g.path
        if g.assignment is None:
            return Outcome(None, path=path + ["local_search"], message=g.message)
        st = State.from_assignment(instance, g.assignment)
    rng = np.random.default_rng(opts.seed)
    moves = _improve(st, opts, rng, t_end)
    kicks, kept = _perturb(st, opts, rng, t_end)
    path.append(f"local_search({moves} moves, {kicks} kicks, {kept} kept)")
    if not _complete(instance, st):
        return Outcome(None, path=path, message="local search could not place every job")
    return Outcome(st.assignment(), path=path)
