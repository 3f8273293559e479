"""``tiresias``: discretised two-dimensional least attained service (Tiresias, NSDI'19), as
Tiresias's and ElasticFlow's simulators run it (``dlas-gpu``): queues by attained GPU-seconds
with the thresholds :data:`THRESHOLDS_GPU_S`, FIFO within a queue with the running jobs first,
a job that does not fit is skipped, and a higher queue preempts a lower one.  A running job is
demoted the moment its service crosses a threshold (ElasticFlow's simulator computes that
wake-up wrongly for multi-GPU jobs and demotes them late).  The optional starvation knob
(``starvation``, Tiresias's STARVE_LIMIT): a job that has waited ``starvation`` times the
seconds it has computed goes back to the top queue, its service counted afresh."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from placement.model.records import Instance
from placement.simulation.queues.base import Candidate, QueuePolicy

__all__ = ["Tiresias", "THRESHOLDS_GPU_S"]

THRESHOLDS_GPU_S = (3250.0, 7200.0)
"""Attained GPU-seconds at which a job drops to the next queue (three queues)."""


class Tiresias(QueuePolicy):
    name = "tiresias"
    preemptive = True

    def __init__(self, cluster: Instance, starvation: float | None = None) -> None:
        super().__init__(cluster, starvation)
        self.counted_from: dict[str, float] = {}
        """A promoted job's attained GPU-seconds when it was promoted: its service counts afresh."""

    def service(self, c: Candidate) -> float:
        """``c``'s attained GPU-seconds since its last promotion."""
        return c.attained_gpu_s - self.counted_from.get(c.job.id, 0.0)

    def level(self, now: float, c: Candidate) -> int:
        """The queue ``c`` is in (0 the highest); a job that has waited ``starvation`` times the
        seconds it has computed is promoted to the top queue, its service counted afresh."""
        if (
            self.starvation is not None
            and not c.running
            and c.served_s > 0
            and now - c.stopped_s >= self.starvation * c.served_s
        ):
            self.counted_from[c.job.id] = c.attained_gpu_s
        return bisect.bisect_right(THRESHOLDS_GPU_S, self.service(c))

    def order(self, now: float, candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (self.level(now, c), not c.running, c.job.submit_s, c.job.id))

    def wake_s(self, now: float, candidates: Sequence[Candidate]) -> float:
        """The next demotion of a running job (while others wait), or promotion of a starving one."""
        if all(c.running for c in candidates):
            return math.inf
        t = math.inf
        for c in candidates:
            if c.running:
                k = bisect.bisect_right(THRESHOLDS_GPU_S, self.service(c))
                if k < len(THRESHOLDS_GPU_S):
                    # a millisecond past the threshold, so that the job's service has crossed it then
                    t = min(t, now + (THRESHOLDS_GPU_S[k] - self.service(c)) / c.job.workers + 1e-3)
            elif self.starvation is not None and c.served_s > 0:
                due = c.stopped_s + self.starvation * c.served_s
                if due > now:
                    t = min(t, due)
        return t
