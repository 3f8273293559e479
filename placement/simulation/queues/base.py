"""What every queue policy shares: the candidate record a policy orders, and the base class.

A queue policy decides *who* runs; the placement method decides *where*.  The engine hands the
policy every job that could run (the queue, and for a preemptive policy the running jobs too)
as :class:`Candidate` records and admits them in the policy's order, each if its gang fits the
GPUs the jobs before it left (in number; the method then places it).  A preemptive policy's
running jobs that are not admitted are preempted: they keep their progress (checkpointed) and
pay ``restart_s`` when they resume, as a moved job does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from placement.model.records import Instance
from placement.simulation.workload import TraceJob

__all__ = ["Candidate", "QueuePolicy", "fifo_key"]


@dataclass(frozen=True)
class Candidate:
    """A job that could run, as a scheduler sees it at a decision."""

    job: TraceJob
    running: bool
    """It holds GPUs now."""
    served_s: float
    """Seconds it has computed so far: the seconds it held GPUs, less its restarts."""
    remaining_s: float
    """Its believed remaining run time: iterations left x its last observed iteration time
    (its straggler-free time before it ever ran)."""
    stopped_s: float
    """When it last stopped running (its submission if it never ran)."""

    @property
    def attained_gpu_s(self) -> float:
        """GPU-seconds of service it has had (Tiresias's 2D attained service)."""
        return self.job.workers * self.served_s


def fifo_key(c: Candidate) -> tuple[float, str]:
    """Arrival order (ties by job id)."""
    return (c.job.submit_s, c.job.id)


class QueuePolicy:
    """Who runs: an order over the candidates, re-evaluated at every decision.

    Class attributes say how the engine uses it: ``preemptive`` (running jobs are candidates
    too, and those the order does not admit are preempted), ``strict`` (the first job that
    cannot start blocks those behind it; otherwise a job that does not fit is skipped, which is
    backfilling without a reservation), ``round_s`` (decisions only on rounds of this length,
    as Gavel's) and ``keep_previous`` (a preempted job whose previous GPUs are free resumes on
    them)."""

    name: ClassVar[str]
    timed: ClassVar[bool] = False
    """Its order may change with time alone (the engine asks :meth:`wake_s` when to decide)."""
    preemptive: ClassVar[bool] = False
    strict: ClassVar[bool] = False
    round_s: ClassVar[float | None] = None
    keep_previous: ClassVar[bool] = False

    def __init__(self, cluster: Instance, starvation: float | None = None) -> None:
        self.cluster = cluster
        self.starvation = starvation

    def configure(self, options: Any) -> None:
        """Read what the policy needs from the simulation's configuration (a
        :class:`~placement.simulation.config.SimConfig`); most need nothing."""

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The candidates, highest priority first."""
        raise NotImplementedError

    def wake_s(self, now: float, candidates: Sequence[Candidate]) -> float:
        """The next time the order may change with no arrival or completion (``inf``: none)."""
        return math.inf
