"""Writing estimates into an instance (checked by the loader)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from placement.errors import InvalidInputError
from placement.estimate.csvrows import MAX_LISTED
from placement.estimate.logs import LogError, ServerEstimate
from placement.formats.instance import checked
from placement.model.records import Instance, Slowdown

__all__ = ["apply_estimates"]


def apply_estimates(
    instance: Instance,
    servers: Mapping[str, ServerEstimate] | None = None,
    fleet: Slowdown | None = None,
    overrides: Mapping[str, Mapping[str, Slowdown]] | None = None,
) -> Instance:
    """``instance`` with server slowdowns from ``servers`` (servers not observed get
    ``fleet``) and per-job ``overrides``; checked by the loader."""
    if instance.scenarios is not None:
        raise InvalidInputError(["the instance has a scenario table; estimates write per-server distributions"])
    srv = list(instance.servers)
    if servers is not None:
        unknown = [s for s in servers if s not in instance.server_by_id]
        if unknown:
            raise LogError(
                [f"the logs name server {str(s)!r}, which the instance does not have" for s in unknown[:MAX_LISTED]]
            )
        srv = [
            dataclasses.replace(s, slowdown=servers[s.id].slowdown if s.id in servers else (fleet or s.slowdown))
            for s in srv
        ]
    jobs = list(instance.jobs)
    if overrides:
        jobs = [dataclasses.replace(j, slowdown={**j.slowdown, **overrides.get(j.id, {})}) for j in jobs]
    inst = instance.replace(servers=tuple(srv), jobs=tuple(jobs))
    # apply_estimates changes distributions only; the base slowdowns used in the overrides
    # are the new server ones when both are given (see estimate CLI order)
    return checked(inst)
