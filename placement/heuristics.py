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
    """Largest gangs first (hardest to fit), then heaviest per-iteration cost."""
    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (-instance.jobs[jp].workers, -instance.jobs[jp].weight * instance.jobs[jp].compute_ms, jp),
    )


def density_order(instance: Instance) -> list[int]:
    """Most weight per GPU first, smaller gangs first among equals (best-effort admission:
    the knapsack greedy for the weight placed)."""
    return sorted(
        range(len(instance.jobs)),
        key=lambda jp: (-instance.jobs[jp].weight / instance.jobs[jp].workers, instance.jobs[jp].workers, jp),
    )


def rank(st: State) -> tuple[float, float]:
    """Lexicographic key of a state, smaller is better: (-weight placed, objective)."""
    w = sum(st.instance.jobs[jp].weight for jp in st.x)
    return (-w, sum(st.cost(jp, a) for jp, a in st.x.items()))


def _candidate_sets(st: State, jp: int) -> list[dict[int, int]]:
    """Candidate allocations of ``jp`` on the current free capacity: the best single
    servers, and inside every bandwidth domain able to hold the gang, fills in three
    orders (expected compute time; fewest servers; probability of no slowdown)."""
    job = st.instance.jobs[jp]
    W = job.workers
    allowed = st.allowed(jp)
    if len(allowed) == 0:
        return []
    rooms = st.room(jp, allowed)
    ok = rooms > 0
    cand, crooms = allowed[ok], rooms[ok]
    if crooms.sum() < W:
        return []
    score = st.score(jp)
    surv = np.array([st.idx.survival(jp, int(sp)) for sp in cand])
    out: list[dict[int, int]] = []
    # single servers: E[T] = a E[S] + 0 comm when all fit on one
    single = cand[crooms >= W]
    if len(single):
        intra = st.cluster.intra_bandwidth[single]
        from placement.evaluate import comm_ms

        c = np.array([comm_ms(job, b) for b in intra])
        best = single[np.argsort(score[single] + c, kind="stable")[:3]]
        out += [{int(sp): W} for sp in best]
    if W == 1 or (job.max_servers == 1):
        return out
    n = st.n
    room_full = np.zeros(n, dtype=np.int64)
    room_full[cand] = crooms
    surv_full = np.zeros(n)
    surv_full[cand] = surv
    for members in st.cluster.domain_members:
        m = members[room_full[members] > 0]
        if len(m) < 2 or room_full[m].sum() < W:
            continue
        r, sc, sv = room_full[m], score[m], surv_full[m]
        orders = (
            np.lexsort((-r, sc)),          # expected compute time, then room
            np.lexsort((sc, -r)),          # fewest servers, then expected time
            np.lexsort((-r, sc, -sv)),     # no-slowdown probability, then time
        )
        for o in orders:
            need = W
            alloc: dict[int, int] = {}
            for sp, rr in zip(m[o], r[o]):
                k = int(min(rr, need))
                alloc[int(sp)] = k
                need -= k
                if need == 0:
                    break
            if job.max_servers is None or len(alloc) <= job.max_servers:
                out.append(alloc)
    return out


def greedy_job(st: State, jp: int) -> tuple[dict[int, int] | None, float]:
    """The cheapest candidate allocation of ``jp`` now, and its cost (inf: none fits)."""
    cands = _candidate_sets(st, jp)
    if not cands:
        return None, math.inf
    costs = st.costs(jp, [list(c) for c in cands])
    best = int(np.argmin(costs))
    if not math.isfinite(costs[best]):
        return None, math.inf
    return cands[best], float(costs[best])


def greedy_state(instance: Instance, order: Sequence[int] | None = None) -> State:
    st = State(instance)
    for jp in order if order is not None else job_order(instance):
        alloc, _ = greedy_job(st, jp)
        if alloc is not None:
            st.take(jp, alloc)
    return st


def _complete(instance: Instance, st: State) -> bool:
    return instance.admission != "all" or len(st.x) == len(instance.jobs)


def greedy(instance: Instance, opts: Options) -> Outcome:
    """Straggler- and communication-aware greedy construction."""
    st = greedy_state(instance)
    path = ["greedy"]
    if instance.admission == "best_effort":
        st2 = greedy_state(instance, density_order(instance))
        if rank(st2) < rank(st):
            st = st2
            path = ["greedy(weight-density order)"]
    if not _complete(instance, st):
        # fragmentation: fall back to packing, then let the local search improve it
        from placement.baselines import consolidate_state

        st2 = consolidate_state(instance)
        path.append("consolidate-fallback")
        if _complete(instance, st2):
            st = st2
        else:
            return Outcome(None, path=path, message="greedy and the consolidating fallback could not place every job")
    return Outcome(st.assignment(), path=path)


def _improve(st: State, opts: Options, rng: np.random.Generator, t_end: float) -> int:
    """Hill-climb until a pass makes no move or time runs out; returns moves made."""
    inst = st.instance
    moves = 0
    n_jobs = len(inst.jobs)
    improved = True
    while improved and time.monotonic() < t_end:
        improved = False
        # best effort: insert what now fits (more weight placed always wins)
        for jp in range(n_jobs):
            if jp not in st.x:
                alloc, c = greedy_job(st, jp)
                if alloc is not None:
                    st.take(jp, alloc)
                    moves += 1
                    improved = True
        for jp in rng.permutation(n_jobs):
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
    old_alloc = st.release(jp)
    old = st.cost(jp, old_alloc)
    alloc, c = greedy_job(st, jp)
    if alloc is not None and _better(c, old):
        st.take(jp, alloc)
        return True
    st.take(jp, old_alloc)
    return False


def _relocate(st: State, jp: int, top: int = 8) -> bool:
    """Move all of ``jp``'s workers off one server: onto one new server, or onto the
    job's other servers (fewer servers)."""
    job = st.instance.jobs[jp]
    alloc = st.x[jp]
    old = st.cost(jp, alloc)
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
        if not options:
            continue
        costs = st.costs(jp, [list(o) for o in options])
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
    holders: dict[int, list[int]] = {}
    for ip, a in st.x.items():
        if ip != jp:
            for s in a:
                holders.setdefault(s, []).append(ip)
    worst = sorted(alloc, key=lambda s: -score[s])[:2]
    old_j = st.cost(jp, alloc)
    for n in worst:
        for m in targets:
            if score[m] >= score[n]:
                continue
            for ip in holders.get(m, []):
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
                old = old_j + st.cost(ip, a_i)
                new = st.cost(jp, new_j) + st.cost(ip, new_i)
                if not _better(new, old):
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
        _improve(st, opts, rng, t_end)
        r = rank(st)
        if r[0] < best_rank[0] or (r[0] == best_rank[0] and _better(r[1], best_rank[1])):
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
    if opts.start is not None:
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
