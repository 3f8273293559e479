"""The rows of a comparison sweep: their fields and the states a run ends in."""

from __future__ import annotations

import enum

__all__ = ["ROW_FIELDS", "RunState"]

ROW_FIELDS = (
    "instance",
    "instance_name",
    "servers",
    "gpus",
    "jobs",
    "method",
    "seed",
    "time_limit_s",
    "threads",
    "status",
    "objective",
    "bound",
    "gap",
    "wall_s",
    "peak_mem_mb",
    "valid",
    "straggler_probability",
    "ideal_lower_bound",
    "excess_over_ideal",
    "placed_weight",
    "backend",
    "backend_version",
    "path",
    "error",
)


class RunState(str, enum.Enum):
    """The ``status`` of a row: a solution's status, or what stopped the run before one."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"
    ERROR = "error"
    """The method failed, or returned a placement the validator refused."""
    REFUSED = "refused"
    """The instance or the method was refused before solving (bad input, not installed)."""
    KILLED = "killed"
    """Still running past its limit plus the grace period: killed."""
    CRASHED = "crashed"
    """The run's process died without a row."""

    def __str__(self) -> str:
        return self.value

    @property
    def failed(self) -> bool:
        return self in (RunState.ERROR, RunState.KILLED, RunState.CRASHED)

    @property
    def unsuccessful(self) -> bool:
        """Failed, or refused before solving: the run says nothing about its method."""
        return self.failed or self is RunState.REFUSED
