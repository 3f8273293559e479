"""What ``placement serve`` is told and what it tells back: its options (:class:`ServeConfig`),
its refusals of a request that does not fit the state (:class:`Conflict`, :class:`NotFound`), and
the job it makes of a gang another scheduler hands over (:func:`gang_job`).  Needs no extra."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placement.errors import InvalidInputError, PlacementError
from placement.simulation.config import DECISION_TIME_LIMIT_S, MOVE_MARGIN, PATIENCE, PLAN_BY, QUEUED_MOVE_MARGIN

__all__ = ["ServeConfig", "Conflict", "NotFound", "DEFAULT_JOB", "gang_job"]


DEFAULT_JOB: dict[str, float] = {"compute_ms": 100.0, "gradient_mb": 100.0}
"""A job's per-iteration compute and gradient when the scheduler that hands it over does not
say (a pod's annotations, a Slurm job's comment)."""


def gang_job(job_id: str, groups: int, per_group: int, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The instance format's job of a gang that a scheduler hands over: ``groups`` units (pods,
    Slurm nodes) of ``per_group`` GPUs each, a unit's GPUs on one server.  One GPU a unit: a
    data-parallel job of ``groups`` workers; more: a hybrid job of ``tp = per_group`` (so a
    unit's GPUs share a server), ``pp = 1``, ``dp = groups``.  ``fields`` adds the model
    (:data:`DEFAULT_JOB` where it is silent)."""
    job: dict[str, Any] = {**DEFAULT_JOB, **fields, "id": job_id, "workers": groups * per_group}
    if per_group > 1:
        job.update(architecture="hybrid", tp=per_group, pp=1, dp=groups, microbatches=1, activation_mb=0)
    return job


class Conflict(PlacementError):
    """The request does not fit the state (a job in the wrong state, an id already held)."""


class NotFound(PlacementError):
    """No such job."""


@dataclass(frozen=True)
class ServeConfig:
    """How the service decides (``placement serve`` options)."""

    method: str = "auto"
    decision_time_limit_s: float = DECISION_TIME_LIMIT_S
    """The simulator's per-decision limit, so that a decision here is one the simulator makes."""
    decision_clock: str = "work"
    """``work``: a decision stops after the same steps on any machine (repeatable)."""
    seed: int = 0
    reservation_s: float = 600.0
    """A placed job's GPUs are held this long unless it starts (or is released)."""
    refit_every_s: float = 600.0
    estimate_window_s: float = 86_400.0
    max_rows: int = 100_000
    """Observation rows in one request at most."""
    max_jobs: int = 1_000
    """Jobs in one placement request at most."""
    restart_s: float = 300.0
    """Seconds a moved job loses (the simulator's default ``restart_s``): what a move must repay;
    a moved job stays where it is for that long (it restarts)."""
    knowledge: str = "estimated"
    """What decisions believe of the servers (the simulator's knowledge): ``estimated``, the
    refitted estimates (the cluster file's laws until the first refit), or ``oracle``, the
    cluster file's laws (and scenarios) always, never refitted over."""
    plan_by: str = "forecast"
    """What a decision's expected iteration time is computed from (the simulator's ``plan_by``):
    each server's forecast over the job's horizon (``forecast``: its law, its last look and
    the fleet's episode length), its distribution (``expected``) or its steady rate (``rate``)."""
    ratio_to: str = "median"
    """What a pushed row's duration is divided by: the job's median worker that iteration
    (``median``, what ``placement estimate --logs`` does: rows may be whole iteration times),
    or the worker's straggler-free compute time from the job's spec (``profiled``: rows that
    are compute times, as the simulator logs; rows of a job the service never placed skip)."""
    patience: float = PATIENCE
    """The patience rule (the simulator's ``patience``): a job whose placement now is slower
    than its straggler-free best on the idle cluster waits, while jobs hold GPUs, until it
    has waited this many times what that placement would add to its run (``0``: never)."""
    move_margin: float | None = None
    """A move must also beat this share of the job's expected iteration time while no job
    waits (``None``: the simulator's default for the knowledge, 5% with estimated)."""
    queued_move_margin: float | None = None
    """The move margin while jobs wait (a re-plan's ``queued``); ``None``: ``move_margin`` when
    that is given, else the simulator's default (none: the queue counts)."""
    retries: int = 8
    """Tries of a decision in all (see :meth:`Service.place`)."""
    optimistic: int = 2
    """Tries that solve outside a write transaction (SQLite) before one solves inside it."""

    def __post_init__(self) -> None:
        problems = []
        for name, choices in (
            ("knowledge", ("estimated", "oracle")),
            ("plan_by", tuple(p for p in PLAN_BY if p != "duration")),
            ("ratio_to", ("median", "profiled")),
        ):
            if getattr(self, name) not in choices:
                problems.append(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")
        if not self.patience >= 0:
            problems.append(f"patience must be >= 0, got {self.patience!r}")
        if problems:
            raise InvalidInputError(problems)

    def margin(self, queued: bool) -> float:
        """The move margin in force, while jobs wait (``queued``) or not."""
        if queued:
            if self.queued_move_margin is not None:
                return self.queued_move_margin
            return QUEUED_MOVE_MARGIN if self.move_margin is None else self.move_margin
        return MOVE_MARGIN.get(self.knowledge, 0.0) if self.move_margin is None else self.move_margin
