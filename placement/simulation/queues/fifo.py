"""``fifo`` (the default: arrival order; a job that does not fit is skipped and later ones may
start: backfilling without a reservation, as Kueue's and Volcano's default queues do) and
``fifo-strict`` (the head blocks: nothing behind it starts before it does)."""

from __future__ import annotations

from collections.abc import Sequence

from placement.simulation.queues.base import Candidate, QueuePolicy, fifo_key

__all__ = ["Fifo", "FifoStrict"]


class Fifo(QueuePolicy):
    name = "fifo"

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=fifo_key)


class FifoStrict(Fifo):
    name = "fifo-strict"
    strict = True
