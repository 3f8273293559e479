"""The order of a job's ranks over its servers.

A ring all-reduce sends each rank's chunk to the next rank: the ring is cheapest when
neighbours share a server, then a rack, then a pod.  Ranks are dealt server by server, the
servers ordered by their chain of bandwidth domains from the outermost in, so that every
domain's servers are consecutive on the ring and it crosses each domain's boundary as few
times as it can (twice).

A hybrid-parallel job's ranks follow Megatron-LM's default order (tensor parallel fastest, then
data parallel, then pipeline): rank ``t + tp (r + dp s)`` is the ``t``-th worker of group
(stage ``s``, replica ``r``), which runs on ``stages[s][r]``; :func:`stages_from_ranks` reads
the matrix back from where the ranks run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placement.model import Instance, Job, Solution
from placement.problem import cluster_of

__all__ = ["rank_order", "server_order", "job_ranks", "segments", "stages_from_ranks"]


def server_order(instance: Instance, servers: Mapping[str, int]) -> list[str]:
    """The servers of a job (``{server: workers}``) in ring order."""
    cluster = cluster_of(instance)
    pos = instance.server_pos
    first = [pos[d.servers[0]] for d in cluster.domains]  # a domain's place: its first server's

    def key(sid: str) -> tuple[tuple[int, ...], int]:
        return tuple(first[d] for d in reversed(cluster.chain(sid))), pos[sid]

    return sorted((s for s, k in servers.items() if k > 0), key=key)


def rank_order(instance: Instance, servers: Mapping[str, int]) -> list[str]:
    """One server id per worker, rank 0 first.

    >>> from placement.instances import load_bundled
    >>> rank_order(load_bundled("tiny"), {"s2": 1, "s0": 2})
    ['s0', 's0', 's2']
    """
    return [sid for sid in server_order(instance, servers) for _ in range(int(servers[sid]))]


def job_ranks(instance: Instance, solution: Solution, job: Job) -> list[str]:
    """One server id per worker of a placed job, rank 0 first: a hybrid job's in Megatron's
    order over its stage matrix, any other's in ring order (:func:`rank_order`)."""
    m = solution.stages.get(job.id)
    if job.is_hybrid and m:
        dp = len(m[0])
        return [m[g // dp][g % dp] for g in range(len(m) * dp) for _ in range(job.unit)]
    return rank_order(instance, solution.assignment[job.id])


def segments(ranks: Sequence[str]) -> list[tuple[str, int]]:
    """Runs of consecutive ranks on one server: ``(server, ranks)`` in rank order.

    >>> segments(["a", "a", "b", "a"])
    [('a', 2), ('b', 1), ('a', 1)]
    """
    out: list[tuple[str, int]] = []
    for node in ranks:
        if out and out[-1][0] == node:
            out[-1] = (node, out[-1][1] + 1)
        else:
            out.append((node, 1))
    return out


def stages_from_ranks(job: Job, ranks: Mapping[int, str]) -> tuple[tuple[str, ...], ...] | str:
    """A hybrid job's stage matrix from the server each rank runs on (Megatron's order), or
    what is wrong with them: ranks missing, or a tensor-parallel group split over servers."""
    tp, pp, dp = job.unit, int(job.pp or 1), int(job.dp or 1)
    missing = [r for r in range(job.workers) if r not in ranks]
    if missing or len(ranks) != job.workers:
        return (
            f"job {job.id!r}: ranks {missing[:5]} missing of its {job.workers}"
            if missing
            else (f"job {job.id!r}: {len(ranks)} ranks for {job.workers} workers")
        )
    cells: list[str] = []
    for g in range(pp * dp):
        nodes = {ranks[g * tp + t] for t in range(tp)}
        if len(nodes) != 1:
            return f"job {job.id!r}: the tensor-parallel group of ranks {g * tp}-{g * tp + tp - 1} is split over {sorted(nodes)}"
        cells.append(nodes.pop())
    return tuple(tuple(cells[s * dp : (s + 1) * dp]) for s in range(pp))
