"""``srtf``: shortest remaining time first, preemptive.  A job's remaining time is what the
scheduler believes: its iterations left times its last observed iteration time (its
straggler-free time before it ever ran), so a job slowed by stragglers looks longer.  The order
changes only when a job arrives, finishes or is observed at a new pace, so decisions at those
events suffice."""

from __future__ import annotations

from collections.abc import Sequence

from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Srtf"]


class Srtf(QueuePolicy):
    name = "srtf"
    preemptive = True

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (c.remaining_s, c.job.submit_s, c.job.id))
