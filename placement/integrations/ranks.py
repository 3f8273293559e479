"""The order of a job's ranks over its servers.

A ring all-reduce sends each rank's chunk to the next rank: the ring is cheapest when
neighbours share a server, then a rack, then a pod.  Ranks are dealt server by server, the
servers ordered by their chain of bandwidth domains from the outermost in, so that every
domain's servers are consecutive on the ring and it crosses each domain's boundary as few
times as it can (twice).
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.model import Instance
from placement.problem import cluster_of

__all__ = ["rank_order", "server_order"]


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
