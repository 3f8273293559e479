"""The contract between an exact backend and the wrapper that runs every backend
(:mod:`placement.methods.exact`).

A backend only builds its model, solves it and maps the answer back to servers: it gets
the start and the cutoff, and returns a :class:`BackendResult` whose termination comes from
its own explicit status table (``TABLE.get(code, Termination.ERROR)``).  The wrapper does
what is common: the start, the cutoff, falling back to the start, the start beating the
incumbent, the bound's validity, the optimality claim.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from placement.model.records import Assignment, GpuChoice, Instance
from placement.solving.budget import Budget

__all__ = ["Termination", "BackendResult", "Backend", "MIN_SOLVE_S"]


MIN_SOLVE_S = 0.05
"""Seconds of the time limit a backend must have left, once its model is built, to start its
solver at all: a solve of less would overrun the limit by the solver's start-up (CBC runs as
a process); it returns no solution instead, and the method its start."""


class Termination(str, enum.Enum):
    """Why a backend stopped (what it holds is :class:`BackendResult.assignment`)."""

    OPTIMAL = "optimal"
    """Its model's optimum was proven."""
    FEASIBLE = "feasible"
    """A limit was reached with an incumbent."""
    INFEASIBLE = "infeasible"
    """Its model was proven infeasible."""
    NO_SOLUTION = "no_solution"
    """A limit was reached without an incumbent."""
    ERROR = "error"
    """The backend failed, or reported a status its table does not know."""

    def __str__(self) -> str:
        return self.value


@dataclass
class BackendResult:
    termination: Termination
    assignment: Assignment | None = None
    """The incumbent on servers (``None``: none, or it could not be mapped back)."""
    bound: float | None = None
    """A lower bound on the true objective of every placement the model admits."""
    weight_proven: bool = True
    """Admission ``best_effort``: the most weight placed was proven (phase one)."""
    exact: bool = True
    """The model's constraints are exactly the instance's, so its infeasibility and
    optimality carry over (CP-SAT's integer capacity rows are stricter otherwise)."""
    path: list[str] = field(default_factory=list)
    message: str | None = None
    gpus: GpuChoice | None = None
    """The GPUs the model chose on the servers with per-GPU factors."""
    shards: Assignment | None = None
    """The shards of the parameter-server jobs whose push/pull phase the model priced
    exactly; the others' are left to the shard rule, and the model's objective is then
    only a bound for them."""


class Backend(Protocol):
    name: str
    """The registry name of the method it serves (``cpsat``, ``milp_highs``, ...)."""
    trust_status: bool
    """Whether its ``OPTIMAL`` is optimal for the true objective as it is (the MILP's exact
    model), or only once the exact objective is within ``optimal_rtol`` of its bound
    (CP-SAT, whose integers round the objective down)."""
    optimal_rtol: float

    def version(self) -> str: ...

    def run(
        self,
        instance: Instance,
        *,
        start: Assignment | None,
        cutoff: float | None,
        budget: Budget,
        seed: int,
        threads: int,
    ) -> BackendResult: ...
