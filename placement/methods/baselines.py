"""The placement rules users would otherwise pick, evaluated under the same model.

Jobs are taken in queue (instance) order; when that order leaves a gang without room, the
rule is re-run largest gang first (first-fit decreasing), as schedulers that backfill do.
A job whose placement would miss its deadline is treated as not fitting.

A parameter-server job's shards: ``max_survival`` follows the seed prototype (all shards on
one server of the chosen group, the one most likely not to straggle, and the workers on the
others); every other rule puts each shard where it would put one more worker's CPU: on the
first server of its own order (first fit: server order; best fit: fewest free GPUs; spread:
most free GPUs; consolidate: the job's own servers, tightest first; random: a random order)
that the job may use and that has the shard's CPU and memory left.

A hybrid job's groups go in Megatron's default rank order over the servers in the order the
rule filled them (:func:`placement.problem.hybrid.rank_order_stages`): these rules know nothing
of stages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from placement.model.records import Instance
from placement.problem.hybrid import hybrid_phase, matrix_ids, rank_order_stages
from placement.problem.rules import meets_deadline
from placement.problem.shards import shard_room
from placement.problem.state import State
from placement.problem.topology import Cluster
from placement.solving.options import Options, Outcome

__all__ = [
    "first_fit",
    "best_fit",
    "spread",
    "consolidate",
    "consolidate_state",
    "whole_servers",
    "max_survival",
    "random_placement",
]

Rule = Callable[[State, int], "dict[int, int] | None"]
ShardOrder = Callable[[State, int, "dict[int, int]"], np.ndarray]
"""A rule's server order for a parameter-server job's shards, given its workers."""


def _shards_in_order(st: State, jp: int, alloc: dict[int, int], order: np.ndarray) -> dict[int, int] | None:
    """Each shard on the first server of ``order`` with a shard's CPU and memory left,
    reachable from the workers, allowed and within ``max_servers``."""
    job = st.instance.jobs[jp]
    comp = st.component[next(iter(alloc))]
    allowed = None if job.allowed_servers is None else {st.instance.server_pos[s] for s in job.allowed_servers}
    cpus, mem = st.cpus.copy(), st.mem.copy()
    for sp, k in alloc.items():  # the workers' own CPU and memory come first
        cpus[sp] -= k * (job.cpus_per_worker or 0.0)
        mem[sp] -= k * (job.memory_gb_per_worker or 0.0)
    z: dict[int, int] = {}
    for _ in range(job.shards):
        for sp in order:
            sp = int(sp)
            if st.component[sp] != comp or (allowed is not None and sp not in allowed):
                continue
            widens = sp not in alloc and sp not in z
            if job.max_servers is not None and widens and len(set(alloc) | set(z)) >= job.max_servers:
                continue
            if shard_room(job, sp, cpus, mem) >= 1:
                z[sp] = z.get(sp, 0) + 1
                cpus[sp] -= job.ps_cpus or 0.0
                mem[sp] -= job.ps_memory_gb or 0.0
                break
        else:
            return None
    return z


def _run(
    instance: Instance,
    rule: Rule,
    name: str,
    order: Sequence[int] | None = None,
    shard_order: ShardOrder | None = None,
) -> tuple[State, list[str]]:
    orders = [list(order) if order is not None else list(range(len(instance.jobs)))]
    orders.append(sorted(range(len(instance.jobs)), key=lambda jp: (-instance.jobs[jp].workers, jp)))
    best: State | None = None
    path: list[str] = []
    for k, o in enumerate(orders):
        st = State(instance)
        for jp in o:
            alloc = rule(st, jp)
            if alloc is None:
                continue
            if instance.jobs[jp].is_ps:
                # the rule's own shard placement (the same order as its workers' by default)
                z = _shards_in_order(st, jp, alloc, (shard_order or _server_order)(st, jp, alloc))
                if z is not None and math.isfinite(st.ps_cost_with(jp, alloc, z)):
                    st.take(jp, alloc, z)
            elif instance.jobs[jp].is_hybrid:
                e, _, _, _ = hybrid_phase(instance, [(jp, rank_order_stages(instance.jobs[jp], alloc))])
                if math.isfinite(float(e[0])) and meets_deadline(instance.jobs[jp], float(e[0])):
                    st.take(jp, alloc)
            elif math.isfinite(st.cost(jp, alloc)):
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
    stages = {
        instance.jobs[jp].id: matrix_ids(instance, rank_order_stages(instance.jobs[jp], alloc))
        for jp, alloc in st.x.items()
        if instance.jobs[jp].is_hybrid
    }
    return Outcome(st.assignment(), path=path, shards=st.shard_assignment(), stages=stages)


def _server_order(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    return np.arange(st.n)


def _fullest_first(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    return np.argsort(st.gpus, kind="stable")


def _emptiest_first(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    return np.argsort(-st.gpus, kind="stable")


def _own_tightest_first(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    own = sorted(alloc, key=lambda sp: (int(st.gpus[sp]), sp))
    return np.array(own + [sp for sp in np.argsort(st.gpus, kind="stable").tolist() if sp not in alloc])


def _most_survival_first(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    surv = st.idx.job_survival(jp, np.arange(st.n))
    return np.lexsort((np.arange(st.n), -surv))


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
        u = job.unit  # a hybrid job's groups are whole: spread group by group
        for _ in range(job.workers // u):
            i = int(np.argmax(np.where(rs > 0, fs, -1)))
            alloc[int(cs[i])] = alloc.get(int(cs[i]), 0) + u
            rs[i] -= u
            fs[i] -= u
        if job.max_servers is None or len(alloc) <= job.max_servers:
            return alloc
    return None


def _narrowest_first(cl: Cluster) -> list[int]:
    """The bandwidth domains, the narrowest (highest bandwidth, fewest servers) first."""
    return sorted(range(len(cl.domains)), key=lambda d: (-cl.domains[d].bandwidth_gbps, len(cl.domains[d].servers), d))


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
    doms = _narrowest_first(cl)
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


def _whole_servers_rule(st: State, jp: int) -> dict[int, int] | None:
    """Tiresias's placement: one server if the gang fits one (the tightest), else wholly free
    servers within one switch (the narrowest bandwidth domain that has enough of them, the
    whole cluster last), never a fragment of a busy server."""
    job = st.instance.jobs[jp]
    W = job.workers
    c = _free(st, jp)
    if len(c) == 0:
        return None
    rooms = st.room(jp, c)
    fits = c[rooms >= W]
    if len(fits):
        return {int(fits[np.argmin(st.room(jp, fits))]): W}
    whole = np.zeros(st.n, dtype=np.int64)  # a server's room if it is wholly free, else 0
    cap = np.array([s.gpus for s in st.instance.servers])
    whole[c] = np.where(st.gpus[c] == cap[c], rooms, 0)
    cl = st.cluster
    doms = _narrowest_first(cl)
    for d in doms:
        m = cl.domain_members[d]
        m = m[whole[m] > 0]
        if whole[m].sum() >= W:
            alloc = st.fill(jp, m[np.argsort(-whole[m], kind="stable")])
            if alloc is not None and (job.max_servers is None or len(alloc) <= job.max_servers):
                return alloc
    return None


def _max_survival_rule(st: State, jp: int) -> dict[int, int] | None:
    c = _free(st, jp)
    surv = st.idx.job_survival(jp, c)
    rooms = st.room(jp, c)
    order = c[np.lexsort((-rooms, -surv))]
    job = st.instance.jobs[jp]
    if job.is_ps and len(order) > 1:
        # the seed prototype: the group's most reliable server holds the shards, the
        # others the workers (all of them together when the others cannot hold the gang)
        alloc = st.fill(jp, order[1:])
        if alloc is not None:
            return alloc
    return st.fill(jp, order)


def _max_survival_shards(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
    """All shards on one server of the group the rule chose: its most reliable server, which
    the workers were kept off (``_max_survival_rule``), else the workers' own, most reliable
    first."""
    c = _free(st, jp)
    surv = st.idx.job_survival(jp, c)
    group = c[np.lexsort((-st.room(jp, c), -surv))].tolist()
    head = [sp for sp in group[:1] if sp not in alloc]
    own = sorted(alloc, key=lambda sp: (-float(st.idx.job_survival(jp, np.array([sp]))[0]), sp))
    return np.array(head + own, dtype=np.int64)


def first_fit(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _first_fit_rule, "first_fit"))


def best_fit(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _best_fit_rule, "best_fit", shard_order=_fullest_first))


def spread(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _spread_rule, "spread", shard_order=_emptiest_first))


def consolidate_state(instance: Instance) -> State:
    return _run(instance, _consolidate_rule, "consolidate", shard_order=_own_tightest_first)[0]


def consolidate(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _consolidate_rule, "consolidate", shard_order=_own_tightest_first))


def whole_servers(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _whole_servers_rule, "whole_servers", shard_order=_own_tightest_first))


def max_survival(instance: Instance, opts: Options) -> Outcome:
    return _outcome(instance, *_run(instance, _max_survival_rule, "max_survival", shard_order=_max_survival_shards))


def random_placement(instance: Instance, opts: Options) -> Outcome:
    rng = np.random.default_rng(opts.seed)

    def rule(st: State, jp: int) -> dict[int, int] | None:
        return st.fill(jp, rng.permutation(_free(st, jp)))

    def shard_order(st: State, jp: int, alloc: dict[int, int]) -> np.ndarray:
        return rng.permutation(st.n)

    order = [int(j) for j in rng.permutation(len(instance.jobs))]
    return _outcome(instance, *_run(instance, rule, "random", order, shard_order))
