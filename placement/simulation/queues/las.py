"""``las``: least attained service first (GPU-seconds), preemptive, discretised in time: the
order is re-evaluated at arrivals and completions and every :data:`LAS_QUANTUM_S` while jobs
wait, so that two jobs of equal service take turns by the quantum instead of at every instant."""

from __future__ import annotations

import math
from collections.abc import Sequence

from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Las", "LAS_QUANTUM_S"]

LAS_QUANTUM_S = 360.0
"""Seconds between two re-evaluations of the order while jobs wait (Gavel's round length)."""


class Las(QueuePolicy):
    name = "las"
    preemptive = True

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        # running jobs first among equals: a tie does not preempt
        return sorted(candidates, key=lambda c: (c.attained_gpu_s, not c.running, c.job.submit_s, c.job.id))

    def wake_s(self, now: float, candidates: Sequence[Candidate]) -> float:
        waiting = any(not c.running for c in candidates)
        return now + LAS_QUANTUM_S if waiting and any(c.running for c in candidates) else math.inf
