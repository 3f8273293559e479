"""What every method receives (:class:`Options`) and returns (:class:`Outcome`).

A method is a function ``(instance, options) -> Outcome``: the registry's and a user's own
(``"package.module:function"``) alike.  :func:`placement.solve` validates and evaluates
whatever it returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from placement.model.records import Assignment, GpuChoice, Stages
from placement.solving.budget import NO_BUDGET, Budget

__all__ = ["Options", "Outcome"]


@dataclass(frozen=True, kw_only=True)
class Options:
    """Keyword-only options of a method run.

    >>> o = Options(time_limit_s=5.0, seed=3)
    >>> 4.0 < o.budget.left() <= 5.0
    True
    """

    time_limit_s: float = 10.0
    seed: int = 0
    threads: int = 1
    start: Assignment | None = None
    """A placement to warm-start from."""
    budget: Budget = NO_BUDGET
    """When the method must return (default: ``time_limit_s`` from construction)."""
    previous: Assignment | None = None
    """Re-planning: the placement running now; moves are counted against it."""
    previous_shards: Assignment | None = None
    """Re-planning: the running parameter-server jobs' shards (kept where their workers stay)."""
    max_moves: int | None = None
    """Re-planning: most workers that may move off their previous servers."""
    move_cost: float = 0.0
    """Re-planning: price (objective units) per moved worker."""
    restart_cost: Mapping[str, float] | None = None
    """Re-planning: per running job, the price (objective units) it pays once if it moves."""
    prove: bool = True
    """``auto``: may spend time on an exact model that could prove its placement optimal
    (``False``: heuristics and bounds only, for decisions that are revisited anyway)."""
    progress: Callable[[str, Assignment | None, float | None], None] | None = None
    """Called by methods that work in steps, after each: ``(step, best placement so far,
    best valid bound so far)``.  :func:`placement.solve` checks and evaluates what it is
    given before passing it on (see :func:`report`)."""

    def __post_init__(self) -> None:
        if self.budget is NO_BUDGET:
            object.__setattr__(self, "budget", Budget.seconds(self.time_limit_s))

    def report(self, step: str, best: Assignment | None, bound: float | None = None) -> None:
        """Tell :attr:`progress`, if any, where the method stands."""
        if self.progress is not None:
            self.progress(step, best, bound)

    def but(self, **changes: Any) -> Options:
        """A copy with ``changes`` (keyword-only, as construction)."""
        return dataclasses.replace(self, **changes)


@dataclass
class Outcome:
    """What a method returns to :func:`placement.solve`, which validates and evaluates it.

    ``assignment`` ``None`` means no placement was found.  ``optimal`` and ``infeasible``
    are claims of proof; ``bound`` must be a valid lower bound on the true objective.
    ``shards`` places parameter-server jobs' shards; the driver places those a method leaves
    out (:func:`placement.problem.shards.complete_shards`).  ``stages`` maps hybrid jobs'
    groups to (stage, replica); the driver maps those a method leaves out
    (:func:`placement.problem.hybrid.complete_stages`).
    """

    assignment: Assignment | None
    optimal: bool = False
    infeasible: bool = False
    bound: float | None = None
    path: list[str] = field(default_factory=list)
    backend: str | None = None
    backend_version: str | None = None
    message: str | None = None
    shards: Assignment | None = None
    stages: Stages | None = None
    gpus: GpuChoice | None = None
    """Which GPUs each job holds on servers with per-GPU factors; the driver chooses those a
    method leaves out (:func:`placement.problem.gpus.choose_gpus`)."""
