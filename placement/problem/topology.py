"""The cluster as a networkx graph, and its bandwidth domains.

Widest-path bandwidth between servers is an ultrametric, so the graph defines nested
*bandwidth domains*: the sets of servers connected through links of bandwidth >= b, for
every b.  They are read off a maximum spanning tree by Kruskal's merge order (the
Kruskal reconstruction tree), which works for any graph: trees, fat trees, rings, meshes.
The bottleneck bandwidth of a set of servers is the bandwidth of the smallest domain that
holds them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from placement.model.records import Instance

__all__ = ["Domain", "Cluster", "instance_graph", "cluster_of"]


@dataclass(frozen=True)
class Domain:
    """Servers connected to each other through links of at least ``bandwidth_gbps``."""

    index: int
    bandwidth_gbps: float
    servers: tuple[str, ...]
    parent: int | None
    children: tuple[int, ...]
    depth: int


def instance_graph(instance: Instance) -> nx.Graph:
    """The cluster of ``instance`` as an undirected networkx graph.

    Nodes carry ``kind`` (``server``/``switch``) and the server fields; edges carry
    ``bandwidth_gbps``.
    """
    g = nx.Graph(name=instance.name)
    for s in instance.servers:
        g.add_node(
            s.id,
            kind="server",
            gpus=s.gpus,
            used_gpus=s.used_gpus,
            gpu_type=s.gpu_type,
            intra_bandwidth_gbps=s.intra_bandwidth_gbps,
            cpus=s.cpus,
            memory_gb=s.memory_gb,
            slowdown=s.slowdown,
        )
    for w in instance.switches:
        g.add_node(w.id, kind="switch")
    for link in instance.links:
        g.add_edge(link.source, link.target, bandwidth_gbps=link.bandwidth_gbps)
    return g


class Cluster:
    """Servers, free capacity and bandwidth domains of an instance's topology.

    >>> from placement.instances import load_bundled
    >>> c = cluster_of(load_bundled("tiny"))
    >>> c.bandwidth(["s0"]) == c.instance.servers[0].intra_bandwidth_gbps
    True
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.graph: nx.Graph = instance_graph(instance)
        self.server_ids: tuple[str, ...] = tuple(s.id for s in instance.servers)
        self._pos = {sid: i for i, sid in enumerate(self.server_ids)}
        self._build_domains()

    def rebind(self, instance: Instance) -> Cluster:
        """This topology for ``instance``, which has the same servers, switches and links
        (other used GPUs, jobs or slowdowns): the graph and the domains are shared, the free
        GPUs are the new instance's."""
        c = object.__new__(Cluster)
        c.__dict__.update({k: v for k, v in self.__dict__.items() if k != "free_gpus"})
        c.instance = instance
        return c

    # ---------------------------------------------------------------- capacity
    @cached_property
    def free_gpus(self) -> np.ndarray:
        return np.array([s.free_gpus for s in self.instance.servers], dtype=np.int64)

    @cached_property
    def intra_bandwidth(self) -> np.ndarray:
        return np.array([s.intra_bandwidth_gbps for s in self.instance.servers], dtype=float)

    # ----------------------------------------------------------------- domains
    def _build_domains(self) -> None:
        g = self.graph
        mst = nx.maximum_spanning_edges(g, algorithm="kruskal", weight="bandwidth_gbps", data=True)
        edges = sorted(mst, key=lambda e: -float(e[2]["bandwidth_gbps"]))
        # Kruskal reconstruction tree over all graph nodes; equal-bandwidth merges collapse.
        parent_uf: dict[object, object] = {n: n for n in g.nodes}
        # tree node -> (bandwidth, children); graph nodes are leaves
        tree_bw: dict[object, float] = {}
        tree_children: dict[object, list[object]] = {}
        top: dict[object, object] = {n: n for n in g.nodes}  # uf root -> tree node

        def find(x: object) -> object:
            while parent_uf[x] != x:
                parent_uf[x] = parent_uf[parent_uf[x]]
                x = parent_uf[x]
            return x

        counter = 0
        for u, v, data in edges:
            bw = float(data["bandwidth_gbps"])
            ru, rv = find(u), find(v)
            if ru == rv:  # pragma: no cover - a spanning forest has no cycles
                continue
            kids: list[object] = []
            for t in (top[ru], top[rv]):
                if t in tree_bw and tree_bw[t] == bw:
                    kids.extend(tree_children.pop(t))
                    del tree_bw[t]
                else:
                    kids.append(t)
            node = ("domain", counter)
            counter += 1
            tree_bw[node] = bw
            tree_children[node] = kids
            parent_uf[ru] = rv
            top[rv] = node

        server_set = set(self.server_ids)
        roots = {top[find(n)] for n in g.nodes}
        domains: list[Domain] = []
        self._server_domain: dict[str, int | None] = dict.fromkeys(self.server_ids)

        def servers_under(t: object) -> list[str]:
            out: list[str] = []
            stack = [t]
            while stack:
                x = stack.pop()
                if x in tree_bw:
                    stack.extend(tree_children[x])
                elif x in server_set:
                    out.append(x)
            return out

        # Emit server-level domains: an internal node is a domain when at least two of
        # its children carry servers; otherwise it passes through to its only carrier.
        pending: list[tuple[object, int | None, int]] = [(r, None, 0) for r in roots]
        raw: list[tuple[float, list[str], int | None, int]] = []
        self.switch_domain: dict[str, int | None] = {}
        """Each switch's bandwidth domain: the innermost one holding it (``None``: none does)."""
        while pending:
            t, par, depth = pending.pop()
            if t not in tree_bw:
                if t in server_set:
                    self._server_domain[t] = par
                else:
                    self.switch_domain[str(t)] = par
                continue
            carriers = [c for c in tree_children[t] if (c in server_set) or (c in tree_bw and servers_under(c))]
            here = par
            if len(carriers) >= 2:
                here = idx = len(raw)
                raw.append((tree_bw[t], servers_under(t), par, depth))
                pending.extend((c, idx, depth + 1) for c in carriers)
            elif len(carriers) == 1:
                pending.append((carriers[0], par, depth))
            # switches off the servers' paths (in subtrees without servers) lie in this domain
            pending.extend((c, here, depth + 1) for c in tree_children[t] if c not in carriers)
        children: dict[int, list[int]] = {i: [] for i in range(len(raw))}
        for i, (_, _, par, _) in enumerate(raw):
            if par is not None:
                children[par].append(i)
        for i, (bw, members, par, depth) in enumerate(raw):
            members.sort(key=self._pos.__getitem__)
            domains.append(Domain(i, bw, tuple(members), par, tuple(sorted(children[i])), depth))
        self.domains: tuple[Domain, ...] = tuple(domains)
        self._chains: dict[str, tuple[int, ...]] = {}
        for sid in self.server_ids:
            chain: list[int] = []
            d = self._server_domain[sid]
            while d is not None:
                chain.append(d)
                d = self.domains[d].parent
            self._chains[sid] = tuple(chain)

    @cached_property
    def component(self) -> np.ndarray:
        """Connected-component label of each server (servers in instance order)."""
        labels = np.empty(len(self.server_ids), dtype=np.int64)
        for i, sid in enumerate(self.server_ids):
            chain = self._chains[sid]
            labels[i] = chain[-1] if chain else len(self.domains) + i
        return labels

    @cached_property
    def domain_members(self) -> tuple[np.ndarray, ...]:
        """Server positions of each domain."""
        return tuple(np.array([self._pos[s] for s in d.servers], dtype=np.int64) for d in self.domains)

    @cached_property
    def domain_concat(self) -> tuple[np.ndarray, np.ndarray]:
        """All domains' member positions concatenated, and each domain's offset (for
        ``np.ufunc.reduceat``)."""
        if not self.domains:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        lens = [len(m) for m in self.domain_members]
        return np.concatenate(self.domain_members), np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)

    @cached_property
    def domain_bandwidth(self) -> np.ndarray:
        """Each domain's bandwidth (Gbps)."""
        return np.array([d.bandwidth_gbps for d in self.domains], dtype=float)

    @cached_property
    def domain_segment(self) -> np.ndarray:
        """The domain of each entry of :attr:`domain_concat`'s positions."""
        concat, offsets = self.domain_concat
        return np.repeat(np.arange(len(offsets)), np.diff(np.append(offsets, len(concat))))

    def chain(self, server: str) -> tuple[int, ...]:
        """Indices of the domains holding ``server``, innermost first."""
        return self._chains[server]

    def domain_of(self, servers: Iterable[str]) -> Domain | None:
        """The smallest domain holding all ``servers`` (two or more); ``None`` if they are
        not all connected."""
        it = iter(servers)
        first = next(it)
        chain0 = self._chains[first]
        pos0 = {d: k for k, d in enumerate(chain0)}
        best = 0
        any_other = False
        for sid in it:
            if sid == first:
                continue
            any_other = True
            for d in self._chains[sid]:
                k = pos0.get(d)
                if k is not None:
                    best = max(best, k)
                    break
            else:
                return None
        if not any_other or not chain0:
            return None
        return self.domains[chain0[best]]

    def bottleneck(self, servers: Sequence[str]) -> float:
        """Widest-path bottleneck bandwidth of a set of two or more servers (0.0 when they
        are not connected)."""
        d = self.domain_of(servers)
        return 0.0 if d is None else d.bandwidth_gbps

    def bandwidth(self, servers: Sequence[str]) -> float:
        """``B_j`` of DESIGN.md: the server's own bandwidth for one server, the bottleneck
        for several, 0.0 when they cannot reach each other."""
        distinct = list(dict.fromkeys(servers))
        if len(distinct) == 1:
            return self.instance.server_by_id[distinct[0]].intra_bandwidth_gbps
        return self.bottleneck(distinct)

    def reachable(self, a: str, b: str) -> bool:
        return a == b or self.bottleneck([a, b]) > 0.0


def cluster_of(instance: Instance) -> Cluster:
    """The :class:`Cluster` of ``instance`` (built on first use, memoised on the instance)."""
    c = instance.derived.get("cluster")
    if c is None:
        c = instance.derived["cluster"] = Cluster(instance)
    return c
