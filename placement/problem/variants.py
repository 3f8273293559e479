"""Instances derived from an instance (same cluster and jobs, other slowdown knowledge)."""

from __future__ import annotations

import dataclasses

from placement.model.records import Instance, Slowdown

__all__ = ["without_slowdowns"]


def without_slowdowns(instance: Instance) -> Instance:
    """The same instance with every slowdown set to 1: the straggler-oblivious model of
    ``comm_optimal`` and of the ideal lower bound."""
    servers = tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in instance.servers)
    jobs = tuple(dataclasses.replace(j, slowdown={}) for j in instance.jobs)
    return instance.replace(servers=servers, jobs=jobs, scenarios=None)
