"""Frozen, typed records of the model of DESIGN.md.

Times are in milliseconds, bandwidths in Gbit/s, sizes in MB.  The records do not
validate themselves: :func:`placement.formats.instance_from_dict` is the one boundary where
documents are checked, and it reports every problem at once.  Records built by hand in
Python can be checked the same way with :func:`placement.formats.checked`.

This module imports nothing of the package: what is derived from an instance (its
cluster's bandwidth domains, the evaluator's arrays) is built by :mod:`placement.problem`
and memoised in :attr:`Instance.derived`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

__all__ = [
    "Slowdown",
    "Server",
    "Switch",
    "Link",
    "CommTerm",
    "Job",
    "Scenarios",
    "Instance",
    "Status",
    "JobReport",
    "Solution",
    "Assignment",
    "StageMatrix",
    "Stages",
    "GpuChoice",
    "Override",
    "OBJECTIVES",
    "ADMISSIONS",
]

OBJECTIVES = ("weighted_expected_iteration_time", "weighted_expected_jct")
ADMISSIONS = ("all", "best_effort")

Assignment = Mapping[str, Mapping[str, int]]
"""``{job_id: {server_id: workers}}``; a job absent (or mapped to ``{}``) is unplaced."""

StageMatrix = tuple[tuple[str, ...], ...]
"""A hybrid job's groups: ``m[s][r]`` = the server of stage ``s`` of replica ``r`` (pp rows of
dp server ids)."""

Stages = Mapping[str, StageMatrix]
"""``{job_id: stage matrix}`` of the hybrid jobs placed."""

GpuChoice = Mapping[str, Mapping[str, tuple[int, ...]]]
"""``{job_id: {server_id: GPU indices}}``: which GPUs of each server a job holds (DESIGN.md,
"Per-GPU factors")."""

ANY_CLASS = "*"
"""The key of a server's ``gpu_slowdowns`` that serves every application class it does not
list (a plain list in a document is this key alone)."""


def _frozen_map(m: Mapping[Any, Any] | None) -> Mapping[Any, Any]:
    if isinstance(m, MappingProxyType):  # read-only already: jobs may share one (a simulation's forecasts)
        return m
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class Slowdown:
    """A discrete slowdown distribution: ``P(S = values[k]) = probs[k]``, values >= 1.

    >>> Slowdown((1.0, 2.0), (0.9, 0.1)).mean()
    1.1
    """

    values: tuple[float, ...] = (1.0,)
    probs: tuple[float, ...] = (1.0,)

    def mean(self) -> float:
        return float(sum(v * p for v, p in zip(self.values, self.probs)))

    def survival(self) -> float:
        """Probability of no slowdown, ``P(S <= 1)``."""
        return float(sum(p for v, p in zip(self.values, self.probs) if v <= 1.0))

    @property
    def is_trivial(self) -> bool:
        return all(v <= 1.0 for v, p in zip(self.values, self.probs) if p > 0)


NO_SLOWDOWN = Slowdown()


def freeze_stages(matrix: Any) -> StageMatrix:
    """A stage matrix as nested tuples (rows of server ids)."""
    return tuple(tuple(row) for row in matrix)


Override = Slowdown | tuple[float, ...]
"""A job's own slowdown estimate for one server: a distribution (independent instances)
or one value per scenario (instances with a scenario table)."""


@dataclass(frozen=True)
class Server:
    id: str
    gpus: int
    gpu_type: str
    intra_bandwidth_gbps: float
    used_gpus: int = 0
    cpus: float | None = None
    memory_gb: float | None = None
    slowdown: Slowdown = NO_SLOWDOWN
    gpu_slowdowns: Mapping[str, tuple[float, ...]] = field(default_factory=dict, hash=False)
    """Static per-GPU factors ``f_g`` (one per GPU, 1 by default, below 1 a fast GPU) by
    application class; :data:`ANY_CLASS` serves the classes not listed."""
    held_gpus: tuple[int, ...] | None = None
    """Which GPUs are held (``used_gpus`` of them); ``None``: the first ``used_gpus``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_slowdowns", _frozen_map({k: tuple(v) for k, v in self.gpu_slowdowns.items()}))
        if self.held_gpus is not None:
            object.__setattr__(self, "held_gpus", tuple(sorted(self.held_gpus)))

    @property
    def free_gpus(self) -> int:
        return self.gpus - self.used_gpus

    @property
    def held(self) -> tuple[int, ...]:
        """The indices of the GPUs held by running jobs."""
        return self.held_gpus if self.held_gpus is not None else tuple(range(self.used_gpus))

    @property
    def free_gpu_ids(self) -> tuple[int, ...]:
        """The indices of the free GPUs, ascending."""
        held = set(self.held)
        return tuple(g for g in range(self.gpus) if g not in held)

    @property
    def has_gpu_factors(self) -> bool:
        """Whether some GPU's factor differs from 1 for some class."""
        return any(f != 1.0 for fs in self.gpu_slowdowns.values() for f in fs)

    def gpu_factors(self, app_class: str | None) -> tuple[float, ...]:
        """Each GPU's factor for a job of ``app_class`` (its class's list, else the list for
        every class, else 1)."""
        fs = self.gpu_slowdowns
        got = (fs.get(app_class) if app_class is not None else None) or fs.get(ANY_CLASS)
        return tuple(got) if got is not None else (1.0,) * self.gpus


@dataclass(frozen=True)
class Switch:
    """A switch; ``congestion`` is the law ``L >= 1`` of the bandwidth domain it lies in (a job's
    communication across that domain takes ``L`` times longer; default 1)."""

    id: str
    congestion: Slowdown = NO_SLOWDOWN


@dataclass(frozen=True)
class Link:
    source: str
    target: str
    bandwidth_gbps: float


@dataclass(frozen=True)
class CommTerm:
    """Fitted terms of an all-reduce whose bottleneck is a bandwidth level (calibrated from
    profiles by ``placement calibrate``): ``alpha_ms`` per ring step, ``2 (W - 1)`` of them, and
    ``gamma_ms`` for the inter-server stage of a hierarchical all-reduce, times
    ``2 (k - 1) / k`` over the job's ``k`` servers.  Both 0: the plain ring."""

    bandwidth_gbps: float
    alpha_ms: float = 0.0
    gamma_ms: float = 0.0


@dataclass(frozen=True)
class Job:
    """A gang of ``workers`` GPUs, placed all together or not at all."""

    id: str
    workers: int
    compute_ms: float
    gradient_mb: float
    iterations: int | None = None
    weight: float = 1.0
    gpu_speed: Mapping[str, float] | None = None
    cpus_per_worker: float | None = None
    memory_gb_per_worker: float | None = None
    max_servers: int | None = None
    allowed_servers: tuple[str, ...] | None = None
    deadline_s: float | None = None
    slowdown: Mapping[str, Override] = field(default_factory=dict)
    architecture: str = "allreduce"
    """``allreduce`` (a ring), ``ps`` (parameter servers: ``ps_shards`` shards placed on
    servers, a push/pull phase after the compute phase; DESIGN.md, "Parameter-server jobs") or
    ``hybrid`` (tensor, pipeline and data parallel groups: ``tp``, ``pp``, ``dp``)."""
    ps_shards: int | None = None
    ps_cpus: float | None = None
    """CPUs each shard takes on its server (``None``: not counted)."""
    ps_memory_gb: float | None = None
    tp: int | None = None
    """Hybrid-parallel jobs (``architecture: "hybrid"``; DESIGN.md, "Hybrid-parallel jobs"):
    tensor-parallel degree, the workers of one group, which sit on one server."""
    pp: int | None = None
    """Pipeline stages."""
    dp: int | None = None
    """Data-parallel replicas."""
    microbatches: int = 1
    activation_mb: float = 0.0
    """Activations sent across a stage boundary per microbatch, each way."""
    app_class: str | None = None
    """The job's application class, which picks the servers' per-GPU factors for it (PAL's
    classes: a GPU slow for one class need not be slow for another)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "slowdown", _frozen_map(self.slowdown))
        if self.gpu_speed is not None:
            object.__setattr__(self, "gpu_speed", _frozen_map(self.gpu_speed))
        if self.allowed_servers is not None:
            object.__setattr__(self, "allowed_servers", tuple(self.allowed_servers))

    @property
    def is_ps(self) -> bool:
        """Whether this is a parameter-server job (its shards are placed too)."""
        return self.architecture == "ps"

    @property
    def is_hybrid(self) -> bool:
        """Whether this is a hybrid-parallel job (its groups are mapped to stages too)."""
        return self.architecture == "hybrid"

    @property
    def unit(self) -> int:
        """Workers that go to a server together: ``tp`` for a hybrid job, else 1."""
        return int(self.tp or 1) if self.is_hybrid else 1

    @property
    def shards(self) -> int:
        """Shards to place: ``ps_shards`` for a parameter-server job, else 0."""
        return int(self.ps_shards or 1) if self.is_ps else 0

    def speed(self, gpu_type: str) -> float | None:
        """Relative speed on ``gpu_type``; ``None`` when the type is not allowed."""
        if self.gpu_speed is None:
            return 1.0
        return self.gpu_speed.get(gpu_type)

    def allows(self, server: Server) -> bool:
        if self.allowed_servers is not None and server.id not in self.allowed_servers:
            return False
        return self.speed(server.gpu_type) is not None


@dataclass(frozen=True)
class Scenarios:
    """Correlated slowdowns: scenario ``s`` has probability ``probs[s]`` and multiplies
    server ``n`` by ``slowdowns[n][s]`` (servers not listed: 1.0)."""

    probs: tuple[float, ...]
    slowdowns: Mapping[str, tuple[float, ...]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "slowdowns", _frozen_map(self.slowdowns))

    @property
    def count(self) -> int:
        return len(self.probs)


@dataclass(frozen=True)
class Instance:
    """A placement problem: a cluster, pending jobs, slowdown estimates, an objective."""

    name: str
    servers: tuple[Server, ...]
    jobs: tuple[Job, ...]
    switches: tuple[Switch, ...] = ()
    links: tuple[Link, ...] = ()
    scenarios: Scenarios | None = None
    objective: str = "weighted_expected_iteration_time"
    admission: str = "all"
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    comm_terms: tuple[CommTerm, ...] = ()
    """Fitted all-reduce terms by bottleneck bandwidth level (none: the plain ring)."""
    locality_penalty: float = 1.0
    """A job on two or more servers runs this many times slower (its whole iteration): the
    semantics of Blox and PAL, kept for cross-checking with them (1: none)."""
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Memo of what :mod:`placement.problem` derives from this instance (built on first
    use); not part of the record's value, never written to a document."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _frozen_map(self.metadata))

    @cached_property
    def server_by_id(self) -> Mapping[str, Server]:
        return MappingProxyType({s.id: s for s in self.servers})

    @cached_property
    def job_by_id(self) -> Mapping[str, Job]:
        return MappingProxyType({j.id: j for j in self.jobs})

    @cached_property
    def terms_by_bandwidth(self) -> Mapping[float, CommTerm]:
        """:attr:`comm_terms` by their bandwidth level."""
        return MappingProxyType({t.bandwidth_gbps: t for t in self.comm_terms})

    @cached_property
    def server_pos(self) -> Mapping[str, int]:
        return MappingProxyType({s.id: i for i, s in enumerate(self.servers)})

    @cached_property
    def job_pos(self) -> Mapping[str, int]:
        return MappingProxyType({j.id: i for i, j in enumerate(self.jobs)})

    def replace(self, **changes: Any) -> Instance:
        """A copy with ``changes`` (nothing derived is carried over)."""
        return dataclasses.replace(self, **changes)


class Status(str, enum.Enum):
    """What a solution holds. ``optimal`` only when proven for the true objective."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"
    ERROR = "error"

    @property
    def has_placement(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class JobReport:
    """The evaluator's figures for one placed job."""

    expected_iteration_ms: float
    ideal_iteration_ms: float
    straggler_probability: float
    bandwidth_gbps: float
    servers: int


@dataclass(frozen=True)
class Solution:
    """The answer of :func:`placement.solve`: every number in it comes from the evaluator."""

    instance: str
    method: str
    status: Status
    objective: float | None
    bound: float | None
    assignment: Assignment
    unplaced: tuple[str, ...]
    jobs: Mapping[str, JobReport]
    stats: Mapping[str, Any]
    shards: Assignment = field(default_factory=dict)
    """``{job: {server: shards}}`` of the parameter-server jobs placed."""
    stages: Stages = field(default_factory=dict)
    """``{job: stage matrix}`` of the hybrid jobs placed (pp rows of dp server ids)."""
    gpus: GpuChoice = field(default_factory=dict)
    """``{job: {server: GPU indices}}`` on the servers with per-GPU factors."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "assignment",
            MappingProxyType({j: MappingProxyType(dict(a)) for j, a in self.assignment.items()}),
        )
        object.__setattr__(
            self,
            "shards",
            MappingProxyType({j: MappingProxyType(dict(a)) for j, a in self.shards.items()}),
        )
        object.__setattr__(self, "stages", _frozen_map({j: freeze_stages(m) for j, m in self.stages.items()}))
        object.__setattr__(
            self,
            "gpus",
            MappingProxyType({j: MappingProxyType({s: tuple(g) for s, g in a.items()}) for j, a in self.gpus.items()}),
        )
        object.__setattr__(self, "jobs", _frozen_map(self.jobs))
        object.__setattr__(self, "stats", _frozen_map(self.stats))
        object.__setattr__(self, "unplaced", tuple(self.unplaced))
        object.__setattr__(self, "status", Status(self.status))

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective - bound) / objective``; ``None`` without both."""
        if self.objective is None or self.bound is None:
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.bound) / abs(self.objective))
