"""Congested domains (DESIGN.md, "Congested domains"): the one home of which domains a job's
communication crosses and what their congestion costs it.

A switch may carry ``congestion``, a law ``L >= 1`` of the bandwidth domain it lies in
(:attr:`~placement.problem.topology.Cluster.switch_domain`); switches of one domain are
independent, so the domain's law is the law of their maximum.  A job on two or more servers
crosses its bottleneck domain and every domain below it that holds one of its servers (its
traffic leaves each server through the switches above it up to the bottleneck); on one server it
crosses none.  Its communication takes ``max_d L_d`` times longer, independent of the servers'
slowdowns, so ``E[T_j] = E[max_n a_n S_n] + C_j E[max_d L_d]`` exactly (a CDF product over the
crossed domains) and the straggler probability is ``1 - (1 - P(compute slow)) (1 - P(max L > 1))``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from placement.model.records import NO_SLOWDOWN, Instance, Switch
from placement.problem.topology import Cluster, cluster_of

__all__ = ["Congestion", "calm", "congestion_of", "crossed_domains", "first_switches", "max_law"]

Law = tuple[np.ndarray, np.ndarray]
"""Support points (sorted, >= 1) and their probabilities."""
ONE: Law = (np.ones(1), np.ones(1))


def max_law(laws: Iterable[Law]) -> Law:
    """The law of the maximum of independent ``laws`` (1 when there are none): the product of
    their CDFs on the merged support points."""
    laws = [law for law in laws if law[0].size and float(law[0].max()) > 1.0]
    if not laws:
        return ONE
    if len(laws) == 1:
        return laws[0]
    pts = np.unique(np.concatenate([np.maximum(v, 1.0) for v, _ in laws]))
    cdf = np.ones_like(pts)
    for v, p in laws:
        cdf *= np.array([float(p[np.maximum(v, 1.0) <= t].sum()) for t in pts])
    probs = np.diff(np.concatenate(([0.0], cdf)))
    keep = probs > 0
    return pts[keep], probs[keep]


class Congestion:
    """The congestion laws of an instance's domains and, per set of servers, what it crosses."""

    def __init__(self, instance: Instance, cluster: Cluster | None = None) -> None:
        self.instance = instance
        self.cluster = cluster if cluster is not None else cluster_of(instance)
        by_domain: dict[int, list[Law]] = {}
        for w in instance.switches:
            d = self.cluster.switch_domain.get(w.id)
            if d is not None and not w.congestion.is_trivial:
                law = (np.asarray(w.congestion.values, dtype=float), np.asarray(w.congestion.probs, dtype=float))
                by_domain.setdefault(d, []).append(law)
        self.laws: dict[int, Law] = {d: max_law(ls) for d, ls in by_domain.items()}
        """Each congested domain's law (domains not listed: ``L = 1``)."""
        self._memo: dict[frozenset[int], tuple[float, float, Law]] = {}

    @property
    def any(self) -> bool:
        return bool(self.laws)

    def crossed(self, servers: Sequence[str]) -> frozenset[int]:
        """The congested domains a job on ``servers`` crosses (none on one server)."""
        if not self.laws:
            return frozenset()
        return frozenset(d for d in crossed_domains(self.cluster, servers) if d in self.laws)

    def of(self, servers: Sequence[str]) -> tuple[float, float, Law]:
        """``(E[max L], P(max L > 1), law of max L)`` over the domains ``servers`` cross."""
        key = self.crossed(servers)
        got = self._memo.get(key)
        if got is None:
            law = max_law(self.laws[d] for d in sorted(key))
            got = self._memo[key] = (float(law[0] @ law[1]), float(law[1][law[0] > 1.0].sum()), law)
        return got

    def law_over(self, servers: Sequence[str]) -> Law | None:
        """The law of the largest ``L`` a job on ``servers`` crosses, or ``None`` when it is 1."""
        if not self.laws:
            return None
        law = self.of(servers)[2]
        return law if float(law[0][-1]) > 1.0 else None

    def factor(self, servers: Sequence[str]) -> float:
        """``E[max L]`` over the domains ``servers`` cross (1 when none is congested)."""
        return self.of(servers)[0] if self.laws else 1.0


def crossed_domains(cluster: Cluster, servers: Sequence[str]) -> frozenset[int]:
    """Every domain a job on ``servers`` crosses, congested or not: its bottleneck domain and
    those below it holding one of its servers (none on one server, or when they cannot reach
    each other)."""
    distinct = list(dict.fromkeys(servers))
    top = cluster.domain_of(distinct) if len(distinct) > 1 else None
    if top is None:
        return frozenset()
    out = {top.index}
    for sid in distinct:
        for d in cluster.chain(sid):
            if d == top.index:
                break
            out.add(d)
    return frozenset(out)


def first_switches(instance: Instance, cluster: Cluster | None = None) -> dict[int, str]:
    """Each domain that holds a switch: its first switch (in the instance's order), which carries
    a law made for the whole domain (learnt, or drawn for it)."""
    cl = cluster if cluster is not None else cluster_of(instance)
    first: dict[int, str] = {}
    for w in instance.switches:
        d = cl.switch_domain.get(w.id)
        if d is not None and d not in first:
            first[d] = w.id
    return first


def calm(switches: Sequence[Switch]) -> tuple[Switch, ...]:
    """``switches`` without their congestion (``L = 1``)."""
    return tuple(dataclasses.replace(w, congestion=NO_SLOWDOWN) if not w.congestion.is_trivial else w for w in switches)


def congestion_of(instance: Instance) -> Congestion:
    """The :class:`Congestion` of ``instance`` (built on first use, memoised on the instance)."""
    c = instance.derived.get("congestion")
    if c is None:
        c = instance.derived["congestion"] = Congestion(instance)
    return c
