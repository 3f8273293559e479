"""``sjf``: shortest job first, by its straggler-free run time (iterations x its profiled time
per iteration); not preemptive, a job that does not fit is skipped."""

from __future__ import annotations

from collections.abc import Sequence

from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Sjf"]


class Sjf(QueuePolicy):
    name = "sjf"

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (c.job.iterations * c.job.compute_ms, c.job.submit_s, c.job.id))
