"""The records of a workload: a trace's jobs, the workload the simulator runs, the error a
bad trace raises, and the ideal iteration time that converts run times into iterations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placement.errors import InvalidInputError
from placement.model.records import Job
from placement.problem.rules import comm_ms

WIDER = "wider than the cluster"
"""The key of :attr:`Workload.dropped` for jobs dropped by ``drop_wider``."""

MAX_LISTED = 40
"""Most problems listed in one error (the rest are counted)."""

CONSOLIDATED_GBPS = 2400.0
"""All-reduce bandwidth (Gbit/s) of a consolidated placement: one 8-GPU server with NVLink.
A trace that gives run times rather than iterations is read as running at this speed."""


FORMATS = ("elasticflow", "philly", "plain", "sia")


class TraceError(InvalidInputError):
    """A trace file (or an option applied to it) is not acceptable; ``problems`` lists
    every bad row with its line number and column."""

    kind = "trace"


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: a gang of ``workers`` GPUs submitted at ``submit_s``."""

    id: str
    submit_s: float
    workers: int
    iterations: int
    compute_ms: float
    gradient_mb: float
    model: str = ""
    weight: float = 1.0
    deadline_s: float | None = None
    """Completion time allowed after submission, seconds."""
    gpu_speed: Mapping[str, float] | None = None
    architecture: str = "allreduce"
    """``allreduce``, ``ps`` (a parameter-server job with ``ps_shards`` shards) or ``hybrid``
    (``tp`` x ``pp`` x ``dp`` groups; ``compute_ms`` one stage's share of one microbatch)."""
    ps_shards: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    microbatches: int = 1
    activation_mb: float = 0.0
    app_class: str | None = None
    """The job's application class (it picks the servers' per-GPU factors for it)."""
    duration_s: float | None = None
    """The trace's measured run time (s), communication included, at the job's reference
    placement: the simulator sets ``compute_ms`` (and caps ``gradient_mb``) so that the job runs
    exactly this long there, straggler-free (:mod:`.reference`).  ``None``: ``compute_ms`` and
    ``gradient_mb`` are the job's own model (a row that gives both, or a generated job)."""


@dataclass(frozen=True)
class Workload:
    """The jobs of a trace after the options, sorted by ``(submit_s, id)``."""

    jobs: tuple[TraceJob, ...]
    source: str
    dropped: Mapping[str, int] = field(default_factory=dict)


def ideal_iteration_ms(workers: int, compute_ms: float, gradient_mb: float) -> float:
    """Iteration time (ms) at speed 1 on a consolidated placement: compute plus the ring
    all-reduce at :data:`CONSOLIDATED_GBPS`."""
    job = Job(id="ideal", workers=workers, compute_ms=compute_ms, gradient_mb=gradient_mb)
    return compute_ms + comm_ms(job, CONSOLIDATED_GBPS, 1, {})


def iterations_from(duration_s: float, workers: int, compute_ms: float, gradient_mb: float) -> int:
    return max(1, round(duration_s * 1000.0 / ideal_iteration_ms(workers, compute_ms, gradient_mb)))
