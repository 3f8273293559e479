"""Reusing what was derived for one instance in another that differs only in used GPUs and
jobs: a scheduler or simulator solving a decision after every arrival builds the
bandwidth domains and the servers' slowdown arrays once, not at every decision."""

from __future__ import annotations

from placement.model.records import Instance
from placement.problem.arrays import EvalIndex, arrays_of
from placement.problem.topology import cluster_of

__all__ = ["share_derived"]


def same_servers(a: Instance, b: Instance) -> bool:
    """Same topology and server slowdowns: only used GPUs (and jobs) may differ."""
    if a.links != b.links or a.switches != b.switches or a.scenarios != b.scenarios or len(a.servers) != len(b.servers):
        return False
    return all(
        s.id == t.id
        and s.gpus == t.gpus
        and s.gpu_type == t.gpu_type
        and s.intra_bandwidth_gbps == t.intra_bandwidth_gbps
        and (s.slowdown is t.slowdown or s.slowdown == t.slowdown)
        for s, t in zip(a.servers, b.servers)
    )


def share_derived(instance: Instance, like: Instance) -> bool:
    """Give ``instance`` the cluster and the server arrays of ``like`` (building them for
    ``like`` first if needed) when :func:`same_servers` holds; returns whether it did."""
    if instance is like or "cluster" in instance.derived or not same_servers(instance, like):
        return False
    instance.derived["cluster"] = cluster_of(like).rebind(instance)
    instance.derived["arrays"] = EvalIndex(instance, like=arrays_of(like))
    return True
