"""Network tiers of an instance, read off its bandwidth domains (DESIGN.md, "Iteration time").

Kubernetes schedulers describe a network as tiers: Volcano's ``HyperNode`` tier 1 holds
nodes, tier 2 holds tier-1 HyperNodes and so on; Kueue's ``Topology`` lists node labels from
the broadest level down.  The instance's bandwidth domains nest, so a domain's tier is its
height in the domain tree: 1 for a domain with no inner domain, 1 + the highest inner tier
otherwise.  A job confined to a domain of tier t needs nothing wider than tier t.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from placement.integrations.names import dns_label
from placement.model import Instance
from placement.problem import cluster_of

__all__ = ["Tiers", "tiers_of"]


@dataclass(frozen=True)
class Tiers:
    """The domain tree of an instance as named tiers."""

    instance: Instance

    @cached_property
    def tier(self) -> tuple[int, ...]:
        """Tier (height) of each domain, by domain index."""
        domains = cluster_of(self.instance).domains
        out = [0] * len(domains)
        for d in sorted(domains, key=lambda d: -d.depth):
            out[d.index] = 1 + max((out[c] for c in d.children), default=0)
        return tuple(out)

    @property
    def top(self) -> int:
        """The highest tier (0 when no two servers are connected)."""
        return max(self.tier, default=0)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """A DNS-1123 name per domain: the switch every server of the domain links to, when
        there is exactly one such switch and it links to no other server (a top-of-rack
        switch), else ``tier<t>-<k>``, k counting the tier's domains in server order (and
        ``tier<t>-<index>`` for all when two switch names would meet)."""
        inst = self.instance
        cluster = cluster_of(inst)
        server_ids = set(cluster.server_ids)
        near: dict[str, set[str]] = {}
        for ln in inst.links:
            for a, b in ((ln.source, ln.target), (ln.target, ln.source)):
                if a in server_ids and b not in server_ids:
                    near.setdefault(b, set()).add(a)
        by_members = {frozenset(v): k for k, v in near.items()}
        count: dict[int, int] = {}
        names = [""] * len(cluster.domains)
        pos = inst.server_pos
        for d in sorted(cluster.domains, key=lambda d: pos[d.servers[0]]):
            t = self.tier[d.index]
            switch = by_members.get(frozenset(d.servers))
            if switch is None:
                k = count[t] = count.get(t, -1) + 1
                names[d.index] = f"tier{t}-{k}"
            else:  # an imported switch "<label>=<value>" or "hypernode/<name>" goes by its value
                names[d.index] = dns_label(re.split(r"[=/]", switch)[-1] or switch)
        if len(set(names)) < len(names):  # two switches shared a sanitised name: fall back
            return tuple(f"tier{self.tier[d.index]}-{d.index}" for d in cluster.domains)
        return tuple(names)

    def job_tier(self, servers: Iterable[str]) -> int:
        """The lowest tier holding all ``servers``: the smallest domain's tier for several
        servers, 1 for one server (0 when the cluster has no domain at all)."""
        distinct = list(dict.fromkeys(servers))
        cluster = cluster_of(self.instance)
        if len(distinct) == 1:
            return 1 if cluster.chain(distinct[0]) else 0
        d = cluster.domain_of(distinct)
        if d is None:
            raise ValueError(f"servers {distinct} are not connected")
        return self.tier[d.index]

    def level_values(self, server: str) -> tuple[str, ...]:
        """The name of ``server``'s tier-t group for t = 1..top: the largest domain holding
        it whose tier is at most t, or the server's own name where no domain is that low.
        Groups nest at every tier (two servers sharing tier t share every tier above), as
        Kueue's topology levels require."""
        tiers, names = self.tier, self.names
        chain = cluster_of(self.instance).chain(server)
        out: list[str] = []
        for t in range(1, self.top + 1):
            fitting = [d for d in chain if tiers[d] <= t]
            out.append(names[fitting[-1]] if fitting else dns_label(server))
        return tuple(out)


def tiers_of(instance: Instance) -> Tiers:
    """The :class:`Tiers` of ``instance`` (memoised on the instance)."""
    t = instance.derived.get("export.tiers")
    if t is None:
        t = instance.derived["export.tiers"] = Tiers(instance)
    return t
