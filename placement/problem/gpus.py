"""Per-GPU factors (DESIGN.md, "Per-GPU factors"): which GPUs of a server a job holds, the
largest factor among them (``f*_n(j)``, which scales the job's compute time there), the rule
that picks GPUs for a placement given as counts, and the classes of interchangeable GPUs the
exact models count in.

Only servers whose factors differ from 1 (:attr:`~placement.model.records.Server.has_gpu_factors`)
are *factored*; on the others which GPUs a job holds changes nothing, and no choice is made
or written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

from placement.model.records import Assignment, GpuChoice, Instance
from placement.problem.arrays import arrays_of
from placement.problem.rules import spread_factor, weight_factor

T = TypeVar("T")

__all__ = [
    "factored_servers",
    "is_factored",
    "choose_gpus",
    "worst_factors",
    "gpu_classes",
    "job_factors",
    "ids_of_counts",
    "counts_of_ids",
    "improve_gpus",
]


def _by_position(instance: Instance, doc: Mapping[str, Mapping[str, T]]) -> Iterator[tuple[int, int, T]]:
    """``(job position, server position, value)`` of a ``{job: {server: value}}`` document,
    ids the instance does not know left out."""
    for jid, per in doc.items():
        jp = instance.job_pos.get(jid)
        if jp is None:
            continue
        for sid, v in per.items():
            sp = instance.server_pos.get(sid)
            if sp is not None:
                yield jp, sp, v


def factored_servers(instance: Instance) -> frozenset[int]:
    """Positions of the servers with per-GPU factors (memoised on the instance)."""
    got = instance.derived.get("factored")
    if got is None:
        got = instance.derived["factored"] = frozenset(sp for sp, s in enumerate(instance.servers) if s.has_gpu_factors)
    return got


def is_factored(instance: Instance) -> bool:
    """Whether some server of ``instance`` has per-GPU factors."""
    return bool(factored_servers(instance))


def job_factors(instance: Instance, jp: int, sp: int) -> tuple[float, ...]:
    """Each GPU's factor on server ``sp`` for job ``jp`` (its application class's)."""
    return instance.servers[sp].gpu_factors(instance.jobs[jp].app_class)


def choose_gpus(
    instance: Instance, assignment: Assignment, given: GpuChoice | None = None
) -> dict[str, dict[str, tuple[int, ...]]]:
    """The GPUs each job holds on each factored server: ``given`` where it says, else by the
    rule: on each server, the jobs it does not cover take the fastest free GPUs left (by their
    class's factor, then index), the job with the most at stake first (objective coefficient
    times compute time there, then job order).  For a server holding one job this is the best
    choice; several jobs on one server are ordered by the rule, which exact models improve on.
    Servers without factors get no entry (which GPUs is then immaterial)."""
    fac = factored_servers(instance)
    given = given or {}
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    if not fac:
        return {j: {s: tuple(g) for s, g in a.items()} for j, a in given.items() if a}
    per_server: dict[int, list[tuple[int, int]]] = {}
    for jp, sp, k in _by_position(instance, assignment):
        if k > 0 and (sp in fac or instance.servers[sp].id in given.get(instance.jobs[jp].id, {})):
            per_server.setdefault(sp, []).append((jp, int(k)))
    for sp, jobs in sorted(per_server.items()):
        srv = instance.servers[sp]
        left = list(srv.free_gpu_ids)
        todo = []
        for jp, k in jobs:
            jid = instance.jobs[jp].id
            mine = given.get(jid, {}).get(srv.id)
            if mine is not None:
                out.setdefault(jid, {})[srv.id] = tuple(int(g) for g in mine)
                left = [g for g in left if g not in set(mine)]
            else:
                todo.append((jp, k))
        if sp not in fac:
            continue

        def stake(item: tuple[int, int], gpu_type: str = srv.gpu_type) -> tuple[float, int]:
            job = instance.jobs[item[0]]
            speed = job.speed(gpu_type) or 1.0
            return (-weight_factor(instance, job) * job.compute_ms / speed, item[0])

        for jp, k in sorted(todo, key=stake):
            f = job_factors(instance, jp, sp)
            take = sorted(left, key=lambda g: (f[g], g))[:k]
            out.setdefault(instance.jobs[jp].id, {})[srv.id] = tuple(sorted(take))
            left = [g for g in left if g not in set(take)]
    return out


def worst_factors(instance: Instance, gpus: GpuChoice) -> dict[tuple[int, int], float]:
    """``f*_n(j)``, the largest factor among the GPUs job ``j`` holds on server ``n``, by
    ``(job position, server position)`` (absent: 1)."""
    out: dict[tuple[int, int], float] = {}
    for jp, sp, ids in _by_position(instance, gpus):
        if ids:
            f = job_factors(instance, jp, sp)
            worst = max((f[g] for g in ids if 0 <= g < len(f)), default=1.0)
            if worst != 1.0:
                out[(jp, sp)] = float(worst)
    return out


def gpu_classes(instance: Instance, sp: int) -> list[tuple[tuple[int, ...], Mapping[int, float]]]:
    """The free GPUs of server ``sp`` in classes of GPUs that are interchangeable for every job:
    per class its GPU indices and, per job position, their factor.  One class holding every free
    GPU when the server has no factors."""
    srv = instance.servers[sp]
    free = srv.free_gpu_ids
    if sp not in factored_servers(instance):
        return [(free, dict.fromkeys(range(len(instance.jobs)), 1.0))]
    keys = sorted({j.app_class for j in instance.jobs}, key=lambda c: (c is not None, c or ""))
    rows = {c: srv.gpu_factors(c) for c in keys}
    by: dict[tuple[float, ...], list[int]] = {}
    for g in free:
        by.setdefault(tuple(rows[c][g] for c in keys), []).append(g)
    at = {c: i for i, c in enumerate(keys)}
    return [
        (tuple(ids), {jp: vec[at[j.app_class]] for jp, j in enumerate(instance.jobs)})
        for vec, ids in sorted(by.items(), key=lambda kv: kv[1][0])
    ]


def ids_of_counts(
    instance: Instance, classes: Mapping[int, list[tuple[int, ...]]], counts: Mapping[tuple[int, int, int], int]
) -> dict[str, dict[str, tuple[int, ...]]]:
    """The GPU indices of a choice made in classes (``counts[(job, server, class)]`` = GPUs of
    that class the job holds there; ``classes[server]`` = each class's indices): handed out
    class by class in job order."""
    nxt: dict[tuple[int, int], int] = {}
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for (jp, sp, c), n in sorted(counts.items()):
        if n <= 0:
            continue
        at = nxt.get((sp, c), 0)
        sid = instance.servers[sp].id
        mine = out.setdefault(instance.jobs[jp].id, {})
        mine[sid] = tuple(sorted(mine.get(sid, ()) + tuple(classes[sp][c][at : at + n])))
        nxt[(sp, c)] = at + n
    return out


def counts_of_ids(
    instance: Instance, classes: Mapping[int, list[tuple[int, ...]]], gpus: GpuChoice
) -> dict[tuple[int, int, int], int]:
    """The inverse of :func:`ids_of_counts`: how many GPUs of each class each job holds."""
    out: dict[tuple[int, int, int], int] = {}
    for jp, sp, ids in _by_position(instance, gpus):
        if sp in classes:
            for c, members in enumerate(classes[sp]):
                n = len(set(ids) & set(members))
                if n:
                    out[(jp, sp, c)] = n
    return out


def improve_gpus(
    instance: Instance,
    assignment: Assignment,
    gpus: Mapping[str, Mapping[str, tuple[int, ...]]],
    keep: frozenset[str] = frozenset(),
) -> dict[str, dict[str, tuple[int, ...]]]:
    """``gpus`` improved on each factored server, pair by pair: two jobs there (or a job and the
    free GPUs) pool their GPUs and re-split them, each in turn choosing first its fastest (by its
    own class's factors); a split is kept when it lowers the two jobs' objective terms (each job's
    term depends on its own GPUs only: the objective is a sum over jobs).  Jobs in ``keep`` (their
    GPUs were given) and hybrid jobs (their groups' GPUs go with their stages) stay as they are.
    Deterministic: servers, jobs and GPUs in order, until no split helps (at most 10 passes)."""
    out = {j: dict(a) for j, a in gpus.items()}
    fac = factored_servers(instance)
    if not fac:
        return out
    idx = arrays_of(instance)
    sps_of = {
        instance.job_pos[j]: sorted(instance.server_pos[s] for s, k in a.items() if k > 0)
        for j, a in assignment.items()
        if j in instance.job_pos
    }

    def cost(jp: int | None) -> float:
        if jp is None:
            return 0.0
        job = instance.jobs[jp]
        sps = sps_of[jp]
        mine = out.get(job.id, {})
        coef = []
        for sp in sps:
            f = job_factors(instance, jp, sp)
            ids = mine.get(instance.servers[sp].id, ())
            coef.append(idx.base_a(jp, sp) * max((f[g] for g in ids), default=1.0))
        e, _, _ = idx.expected_max([(jp, sps)], [coef])
        return weight_factor(instance, job) * spread_factor(instance, len(sps)) * float(e[0])

    for sp in sorted(fac):
        srv = instance.servers[sp]
        movable = [
            jp
            for jp in sorted(sps_of)
            if sp in sps_of[jp] and instance.jobs[jp].id not in keep and not instance.jobs[jp].is_hybrid
        ]
        for _ in range(10):
            changed = False
            for a_i, ja in enumerate(movable):
                for jb in [*movable[a_i + 1 :], None]:
                    held = {g for a in out.values() for g in a.get(srv.id, ())}
                    mine = out[instance.jobs[ja].id][srv.id]
                    theirs = (
                        out[instance.jobs[jb].id][srv.id]
                        if jb is not None
                        else tuple(g for g in srv.free_gpu_ids if g not in held)
                    )
                    pool = set(mine) | set(theirs)
                    best, before = None, cost(ja) + cost(jb)
                    for first in (ja, jb):
                        if first is None:
                            continue
                        other = jb if first == ja else ja
                        f = job_factors(instance, first, sp)
                        n_first = len(mine) if first == ja else len(theirs)
                        took = tuple(sorted(sorted(pool, key=lambda g: (f[g], g))[:n_first]))
                        rest = tuple(sorted(pool - set(took)))
                        a_ids, b_ids = (took, rest) if first == ja else (rest, took)
                        if other is None:  # the free side keeps what is left
                            b_ids = rest
                        out[instance.jobs[ja].id][srv.id] = a_ids
                        if jb is not None:
                            out[instance.jobs[jb].id][srv.id] = b_ids
                        after = cost(ja) + cost(jb)
                        if after < before * (1 - 1e-12) - 1e-12 and (best is None or after < best[0]):
                            best = (after, a_ids, b_ids)
                        out[instance.jobs[ja].id][srv.id] = mine
                        if jb is not None:
                            out[instance.jobs[jb].id][srv.id] = theirs
                    if best is not None:
                        out[instance.jobs[ja].id][srv.id] = best[1]
                        if jb is not None:
                            out[instance.jobs[jb].id][srv.id] = best[2]
                        changed = True
            if not changed:
                break
    return out
