"""What the scheduler may believe of a server's slowdown beyond its distribution: the share of
time it spends out of slow episodes, and the steady rate a long job runs at through many of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from placement.model.records import Server, Slowdown

__all__ = ["low_share", "rate_points"]


def low_share(d: Slowdown) -> float:
    """Probability of a distribution's lowest value (the share of time out of episodes)."""
    v, p = np.asarray(d.values), np.asarray(d.probs)
    return float(p[v == v[p > 0].min()].sum())


def rate_points(servers: Sequence[Server], scen: Any) -> dict[str, Slowdown]:
    """Each server's steady-rate slowdown ``1 / E[1/S]`` as a point distribution (servers
    that never slow down left out); from the scenario table when there is one."""
    out: dict[str, Slowdown] = {}
    if scen is not None:
        probs = np.asarray(scen.probs, dtype=float) / sum(scen.probs)
        for sid, row in scen.slowdowns.items():
            r = np.asarray(row, dtype=float)
            if (r > 1.0).any():
                out[sid] = Slowdown((float(1.0 / (probs @ (1.0 / r))),), (1.0,))
        return out
    for s in servers:
        if not s.slowdown.is_trivial:
            v, p = np.asarray(s.slowdown.values), np.asarray(s.slowdown.probs)
            out[s.id] = Slowdown((float(1.0 / (p @ (1.0 / v))),), (1.0,))
    return out
