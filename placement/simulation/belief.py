"""What the scheduler believes of the servers' slowdowns (:class:`Belief`): the true laws
(``oracle``), the refitted estimates (``estimated``) or none (``oblivious``), seen as
distributions or as the steady rate a long job runs at through many slow episodes
(``plan_by``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from placement.model.records import Instance, Server, Slowdown
from placement.problem.congestion import calm
from placement.simulation.config import RATE_CYCLES
from placement.simulation.forecast import Forecaster, low_share

__all__ = ["Belief", "horizon_bucket", "rate_points"]


def horizon_bucket(seconds: float) -> float:
    """A horizon rounded to a power of two seconds (at least 32 s), so that decisions share
    forecasts across jobs of about the same length.

    >>> horizon_bucket(3000.0), horizon_bucket(1.0)
    (2048.0, 32.0)
    """
    return float(2.0 ** round(math.log2(max(seconds, 32.0))))


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


class Belief:
    """What decisions see of the servers: :attr:`servers` (their believed distributions),
    :attr:`scenarios` (the scenario table, with oracle knowledge of a correlated cluster),
    and :meth:`overrides` (a long job's own steady-rate view under ``plan_by="duration"``).

    ``mean_episode_s`` is the episode law's mean when the truth has episodes (``None``
    otherwise): it sets the slow-state cycle that tells long jobs from short ones."""

    def __init__(
        self,
        cluster: Instance,
        *,
        knowledge: str,
        plan_by: str,
        truthful: bool,
        mean_episode_s: float | None,
        forecast: Callable[[float], Mapping[str, Slowdown]] | None = None,
    ) -> None:
        self.cluster = cluster
        self.forecast = forecast
        """``clairvoyant`` knowledge: each server's forecast over a horizon (seconds), given
        the hidden state now."""
        self.knowledge = knowledge
        self.plan_by = plan_by
        self.truthful = truthful
        """Whether the truth has slowdowns at all (not ``dynamics="none"``)."""
        self.mean_episode_s = mean_episode_s
        self.update(None)

    def update(
        self,
        estimates: Mapping[str, Slowdown] | None,
        forecaster: Forecaster | None = None,
        gpu_factors: Mapping[int, Mapping[str, tuple[float, ...]]] | None = None,
        congestion: Mapping[str, Slowdown] | None = None,
    ) -> None:
        """Believe ``estimates`` (``estimated`` knowledge; servers without one keep the
        cluster's law), or what the knowledge gives without them; with a ``forecaster``
        (``plan_by="forecast"``), each job sees its forecasts over its horizon.  ``gpu_factors``
        (``estimated``: per server position, the per-GPU factors learnt) replace the hidden ones;
        ``congestion`` (``estimated``: switch id -> the law learnt for its domain) the switches'."""
        self.forecaster = forecaster
        self.horizon_cache: dict[float, Mapping[str, Slowdown]] = {}
        k = self.knowledge
        if k in ("oracle", "clairvoyant", "hindsight") and self.truthful:
            servers = self.cluster.servers
        elif k != "estimated" or not estimates:  # oblivious; or the truth is no slowdown at all
            servers = tuple(dataclasses.replace(s, slowdown=Slowdown()) for s in self.cluster.servers)
        else:
            servers = tuple(
                dataclasses.replace(s, slowdown=estimates.get(s.id, s.slowdown)) for s in self.cluster.servers
            )
        learnt = gpu_factors if k == "estimated" and gpu_factors else None
        self.factors = bool(learnt) or (
            k in ("oracle", "clairvoyant", "hindsight") and any(s.has_gpu_factors for s in servers)
        )
        """Whether decisions see per-GPU factors: the hidden ones (given with oracle knowledge), or
        those learnt (``estimated``)."""
        if learnt:
            servers = tuple(dataclasses.replace(s, gpu_slowdowns=learnt.get(sp, {})) for sp, s in enumerate(servers))
        elif not self.factors and any(s.gpu_slowdowns for s in servers):
            servers = tuple(dataclasses.replace(s, gpu_slowdowns={}) for s in servers)
        scen = self.cluster.scenarios if k == "oracle" and self.truthful else None
        self.switches = self.cluster.switches
        """The switches decisions see: their congestion laws with the truth's knowledge, the laws
        learnt from the jobs' paces with ``estimated``, calm with ``oblivious``."""
        if k not in ("oracle", "clairvoyant", "hindsight") or not self.truthful:
            self.switches = calm(self.cluster.switches)
            if k == "estimated" and congestion:  # the laws learnt from the jobs' paces
                self.switches = tuple(
                    dataclasses.replace(w, congestion=congestion[w.id]) if w.id in congestion else w
                    for w in self.switches
                )
        self.servers: tuple[Server, ...] = servers
        self.cycle_s = math.inf
        if k in ("clairvoyant", "hindsight"):  # every job gets its own forecasts (overrides): no rate view
            self.rate_view, self.table, self.scenarios = {}, None, None
            return
        self.rate_view = rate_points(servers, scen)
        self.table = scen
        self.scenarios = scen
        if self.plan_by == "rate":
            servers = tuple(dataclasses.replace(s, slowdown=self.rate_view.get(s.id, s.slowdown)) for s in servers)
            self.scenarios = None
        self.servers = servers
        e = self.mean_episode_s
        if self.plan_by == "duration" and e is not None and self.rate_view:
            if scen is not None:
                self.cycle_s = e
            else:
                # servers that alternate (a point distribution never changes state)
                lows = [p for p in (low_share(s.slowdown) for s in servers if s.id in self.rate_view) if p < 1.0]
                self.cycle_s = float(np.mean([e / (1.0 - p) for p in lows])) if lows else math.inf

    def means(self) -> np.ndarray:
        """Every server's believed mean slowdown, in cluster order."""
        return np.array([s.slowdown.mean() for s in self.servers])

    def long(self, ideal_s: float) -> bool:
        """Whether a job of ``ideal_s`` straggler-free seconds lives through enough
        slow-state cycles to run at its steady rate."""
        return ideal_s >= RATE_CYCLES * self.cycle_s

    def overrides(self, ideal_s: float) -> Mapping[str, Any]:
        """The per-job slowdown overrides of a job of ``ideal_s`` seconds (left to run)."""
        if self.knowledge in ("clairvoyant", "hindsight") and self.truthful and self.forecast is not None:
            return self.forecast(horizon_bucket(ideal_s))  # read-only, shared (as below)
        if self.forecaster is not None:
            h = horizon_bucket(ideal_s)
            f = self.horizon_cache.get(h)
            if f is None:
                f = self.horizon_cache[h] = MappingProxyType(self.forecaster.forecast(h))
            return f  # read-only and shared by every job of the bucket (Job keeps it as it is)
        if self.plan_by != "duration" or not self.long(ideal_s):
            return {}
        if self.table is not None:
            return {sid: (d.values[0],) * self.table.count for sid, d in self.rate_view.items()}
        return dict(self.rate_view)
