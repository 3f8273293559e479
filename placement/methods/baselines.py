"""The placement rules users would otherwise pick, evaluated under the same model.

Jobs are taken in queue (instance) order; when that order leaves a gang without room, the
rule is re-run largest gang first (first-fit decreasing), as schedulers that backfill do.
A job whose placement would miss its deadline is treated as not fitting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from placement.model.records import Instance
from placement.problem.state import State
from placement.solving.options import Options, Outcome

__all__ = [
    "first_fit",
    "best_fit",
    "spread",
    "consolidate",
    "consolidate_state",
    "max_survival",
    "random_placement",
]

Rule = Callable[[State, int], "dict[int, int] | None"]


def _run(instance: Instance, rule: Rule, name: str, order: Sequence[int] | None = None) -> tuple[State, list[str]]:
    orders = [list(order) if order is not None else list(range(len(instance.jobs)))]
    orders.append(sorted(range(len(instance.jobs)), key=lambda jp: (-instance.jobs[jp].workers, jp)))
    best: State | None = None
    path: list[str] = []
    for k, o in enumerate(orders):
        st = State(instance)
        for jp in o:
            alloc = rule(st, jp)
            if alloc is not None and math.isfinite(st.cost(jp, alloc)):
                st.take(jp, alloc)
        path.append(name if k == 0 else f"{name}(largest-first)")
        if best is None or len(st.x) > len(best.x):
            best = st
        if len(st.x) == len(instance.jobs):
            break
    assert best is not None
    return best, path


def _outcome(instance: Instance, st: State, path: list[str]) -> Outcome:
    if instance.admission == "all" and len(st.x) < len(instance.jobs):
        return Outcome(None, path=path, message=f"{len(instance.jobs) - len(st.x)} job(s) did not fit")
    return Outcome(st.assignment(), path=path, shards=st.shard_assignment())


def _free(st: State, jp: int) -> np.ndarray:
    allowed = st.allowed(jp)
    return allowed[st.room(jp, allowed) > 0]


def _first_fit_rule(st: State, jp: int) -> dict[int, int] | None:
    return st.fill(jp, _free(st, jp))


def _best_fit_rule(st: State, jp: int) -> dict[int, int] | None:
    # a worker goes to the server with the fewest free GPUs; it stays the fullest until
    # full, so this is filling in increasing order of room
    c = _free(st, jp)
    return st.fill(jp, c[np.argsort(st.gpus[c], kind="stable")])


def _spread_rule(st: State, jp: int) -> dict[int, int] | None:
    job = st.instance.jobs[jp]
    c = _free(st, jp)
    if len(c) == 0:
        return None
    rooms = st.room(jp, c)
    comps = st.component[c]
    free = st.gpus[c].astype(np.int64)
    # the component with the most room first (a worker-by-worker spread stays in one)
    comp_order = sorted(set(comps.tolist()), key=lambda k: (-int(rooms[comps == k].sum()), k))
    for k in comp_order:
        sel = comps == k
        cs, rs, fs = c[sel], rooms[sel].copy(), free[sel].copy()
        if rs.sum() < job.workers:
            continue
        alloc: dict[int, int] = {}
        for _ in range(job.workers):
            i = int(np.argmax(np.where(rs > 0, fs, -1)))
            alloc[int(cs[i])] = alloc.get(int(cs[i]), 0) + 1
            rs[i] -= 1
            fs[i] -= 1
        if job.max_servers is None or len(alloc) <= job.max_servers:
            return alloc
    return None


def _consolidate_rule(st: State, jp: int) -> dict[int, int] | None:
    job = st.instance.jobs[jp]
    W = job.workers
    c = _free(st, jp)
    if len(c) == 0:
        return None
    rooms = st.room(jp, c)
    fits = c[rooms >= W]
    if len(fits):  # one server: the tightest that fits (best fit)
        return {int(fits[np.argmin(st.room(jp, fits))]): W}
    room_full = np.zeros(st.n, dtype=np.int64)
    room_full[c] = rooms
    cl = st.cluster
    # fewest servers first, then the narrowest domain (highest bandwidth, fewest servers)
    doms = sorted(range(len(cl.domains)), key=lambda d: (-cl.domains[d].bandwidth_gbps, len(cl.domains[d].servers), d))
    kmax = job.max_servers if job.max_servers is not None else st.n
    best: tuple[int, int] | None = None
    for d in doms:
        m = cl.domain_members[d]
        r = np.sort(room_full[m])[::-1]
        cs = np.cumsum(r)
        if cs[-1] < W:
            continue
        k = int(np.searchsorted(cs, W) + 1)
        if k <= kmax and (best is None or k < best[0]):
            best = (k, d)
    if best is None:
        return None
    m = cl.domain_members[best[1]]
    m = m[room_full[m] > 0]
    return st.fill(jp, m[np.argsort(-room_full[m], kind="stable")])


def _max_survival_rule(st: State, jp: int) -> dict[int, int] | None:
    c = _free(st, jp)
    surv = st.idx.job_survival(jp, c)
    rooms = st.room(jp, c)
    return st.fill(jp, c[np.lexsort((-rooms, -surv))])


def first_fit(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _first_fit_rule, "first_fit"))


def best_fit(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _best_fit_rule, "best_fit"))


def spread(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _spread_rule, "spread"))


def consolidate_state(instance: Instance) -> State:
    return _run(instance, _consolidate_rule, "consolidate")[0]


def consolidate(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _consolidate_rule, "consolidate"))


def max_survival(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _max_survival_rule, "max_survival"))


def random_placement(instance: Instance, opts: Options) -> Outcome:
    rng = np.random.default_rng(opts.seed)

    def rule(st: State, jp: int) -> dict[int, int] | None:
        return st.fill(jp, rng.permutation(_free(st, jp)))

    order = [int(j) for j in rng.permutation(len(instance.jobs))]
    return _outcome(instance, *_run(instance, rule, "random", order))
