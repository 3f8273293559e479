"""The stop object: a solve's end, and shares of the time left.

Every method receives one in :attr:`placement.solving.Options.budget`; a method that hands
work to another gives it a share (``budget.share(0.7)``) or an earlier end
(``budget.before(margin)``), never a fresh limit that could outlast its own.

A budget reads the wall clock, or a :class:`WorkClock` (``solve(..., clock="work")``): a
clock that advances :data:`WORK_TICK_S` seconds each time a method asks whether its budget is
over or how much is left.  The heuristics ask once per step (a job's moves in a local-search pass, a kick, a greedy
round), so under the work clock they stop after the same steps on any machine, loaded or not:
a run is repeatable.  A method that measures how long a step took reads :meth:`Budget.now`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

__all__ = ["Budget", "CLOCKS", "NO_BUDGET", "WORK_TICK_S", "WorkClock", "checks_margin"]

CLOCKS = ("wall", "work")
"""What a time limit is counted on: the wall clock, or a :class:`WorkClock`."""

WORK_TICK_S = 0.0005
"""Seconds a :class:`WorkClock` advances per budget check: about what a local-search step of
the simulator's decisions takes on this project's reference machine (2 shared cores), so that a
limit in seconds means about the same work under either clock (see ``benchmarks/README.md``)."""


class WorkClock:
    """A clock that advances ``tick_s`` seconds each time a budget on it is checked
    (:meth:`Budget.expired`, :meth:`Budget.left`); it never reads the wall clock.

    >>> b = Budget.seconds(0.001, WorkClock())
    >>> [b.expired() for _ in range(3)]
    [False, True, True]
    """

    def __init__(self, tick_s: float = WORK_TICK_S) -> None:
        self.tick_s = tick_s
        self.t = 0.0
        self.checks = 0

    def advance(self) -> float:
        self.checks += 1
        self.t = self.checks * self.tick_s
        return self.t


@dataclass(frozen=True)
class Budget:
    """Ends at ``end``: a ``time.monotonic()`` reading (shared by the processes of one
    machine, so a budget can be handed to a worker process), or a reading of ``clock``.

    >>> b = Budget.seconds(10.0)
    >>> 9.0 < b.left() <= 10.0 and not b.expired()
    True
    """

    end: float
    clock: WorkClock | None = None

    @classmethod
    def seconds(cls, s: float, clock: WorkClock | None = None) -> Budget:
        """A budget of ``s`` seconds from now (on ``clock``, or the wall clock)."""
        return cls((clock.t if clock is not None else time.monotonic()) + s, clock)

    def now(self) -> float:
        """The reading of this budget's clock."""
        return self.clock.t if self.clock is not None else time.monotonic()

    def left(self) -> float:
        """Seconds left (0 when over; a check: a work clock advances one tick, so that a
        method that polls only this stops too)."""
        if self.clock is not None:
            return max(0.0, self.end - self.clock.advance())
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        """Whether the budget is over (a check: a work clock advances one tick)."""
        if self.clock is not None:
            return self.clock.advance() >= self.end
        return time.monotonic() >= self.end

    def share(self, fraction: float) -> Budget:
        """A budget ending after ``fraction`` of the time left."""
        left = self.left()
        return Budget(self.now() + fraction * left, self.clock)

    def before(self, margin: float) -> Budget:
        """This budget ending ``margin`` seconds earlier."""
        return Budget(self.end - margin, self.clock)


NO_BUDGET = Budget(math.inf)
"""The placeholder of an :class:`~placement.solving.Options` built without a budget: it
gets one of ``time_limit_s`` from its construction."""


def checks_margin(time_limit_s: float) -> float:
    """Seconds a method leaves at the end of its budget for the driver's final validation
    and evaluation (grows with the limit, as the instances that get long limits are large)."""
    return 0.2 + min(1.0, 0.02 * time_limit_s)
