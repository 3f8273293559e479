"""What a simulation is told and what it gives back: :class:`SimConfig` (checked when it is
made), :class:`SimResult` and the summary's fields, and the names each option takes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from placement.errors import InvalidInputError, PlacementError
from placement.estimate.congestion import HALF_LIFE_TICKS
from placement.estimate.gpu_profiles import DRAWS
from placement.model.records import OBJECTIVES
from placement.simulation.dynamics import DYNAMICS, EPISODE_MEDIAN_S, PERSISTENT_SHARE
from placement.simulation.queues import QUEUES as QUEUE_POLICIES
from placement.simulation.workload.reference import COMM_SHARE_MAX, comm_penalty
from placement.solving.budget import CLOCKS
from placement.solving.registry import get_method

__all__ = [
    "SimConfig",
    "SimResult",
    "KNOWLEDGE",
    "CHANGE_POINTS",
    "DECISION_WEIGHTS",
    "MOVE_MARGIN",
    "QUEUED_MOVE_MARGIN",
    "PATIENCE",
    "PLAN_BY",
    "FORECASTING",
    "RATE_CYCLES",
    "QUEUES",
    "REPLAN_EVENTS",
    "REPLAN_MODES",
    "REPLAN_PRICES",
    "RATIO_TO",
    "SimulationError",
    "SUMMARY_FIELDS",
    "SIZE_CLASSES",
    "size_class_fields",
]

KNOWLEDGE = ("oracle", "estimated", "oblivious", "clairvoyant", "hindsight")
"""What the scheduler knows of the slowdowns: the true laws (``oracle``), estimates refitted from
the iteration logs (``estimated``), nothing (``oblivious``), the hidden state now with the law
it evolves by (``clairvoyant``: each server's forecast over the job's horizon), or the hidden
future itself (``hindsight``: each server's realised path over the job's horizon,
:mod:`placement.simulation.hindsight`).  The last two are references for what prediction could
reach, not something a scheduler can have."""
PLAN_BY = ("forecast", "expected", "rate", "duration", "aged")
FORECASTING = ("forecast", "aged")
"""The ``plan_by`` values that plan by each server's forecast over a job's horizon."""
DECISION_WEIGHTS = ("trace", "srpt")
"""How a placement decision weighs its jobs (:attr:`SimConfig.decision_weight`)."""
RATE_CYCLES = 3.0
"""``plan_by="duration"``: a job whose ideal duration spans this many mean slow-state cycles
is planned at its servers' steady rates."""
QUEUES = tuple(QUEUE_POLICIES)
"""Queue policies by name (:mod:`placement.simulation.queues`): who runs; the method decides where."""
RATIO_TO = ("median", "profiled")
"""What the estimator's ratios divide a worker's logged time by: the job's ``median`` worker
(blind when most of a job's servers are slow, and for one-server jobs) or its ``profiled``
straggler-free time on that GPU type (what a job's first iterations on healthy servers, or its
profile, tell; the simulator knows it)."""
REPLAN_EVENTS = ("freed", "blocked", "estimate")
"""Events that trigger a re-plan besides the period: ``freed`` (a job finished: running jobs
may take the GPUs the queue left), ``blocked`` (after a decision, a queued job fits the free
GPUs in number but not in place, as a tensor-parallel group that needs one server: the re-plan
offers the queued jobs too, so compacting the running jobs counts), ``estimate`` (a refit moved
some server's believed mean by more than ``replan_threshold``, relative, since the last
re-plan).  At most one event re-plan per ``replan_min_gap_s``."""
REPLAN_MODES = ("on", "off")
REPLAN_SCOPES = ("movers", "holders", "all")
"""What a priced (``amortized``) re-plan searches: the running jobs that could repay a move of
their own (``movers``, the default: a job whose believed time now is within its restart and
margin of its bound with every free GPU its own stays where it is, on the GPUs it holds, out of
the search); those and the jobs holding a fragment, on a server with free GPUs or shared with a
job that may move (``holders``: they may step aside so that another consolidates); or every
running job (``all``, the search may move any job for others' sake).  With the queue offered
(``blocked`` events) every job is searched."""
CHANGE_POINTS = ("off", "bocpd")
"""``estimated`` knowledge: whether the estimator forgets what a server showed before its law
last changed (``bocpd``: Bayesian online change-point detection on each server's looks,
:mod:`placement.simulation.changepoint`) or weighs the whole estimate window (``off``)."""
REPLAN_PRICES = ("amortized", "remaining", "gpu_time", "none")
"""How a re-plan prices moves.  ``amortized`` (the default): the objective stays the arrival
decisions' expected iteration time ``sum_j w_j E[T_j]`` (ms) and a job that moves pays its
restart spread over the iterations ``R_j`` it has left, ``w_j 1000 restart_s / R_j`` ms, once:
a job moves exactly when ``R_j (E[T_j(old)] - E[T_j(new)])`` repays its pause (DESIGN.md,
"Priced re-planning"), and every job's iteration counts alike, as at arrival.  ``remaining``:
the objective is the expected remaining time ``sum_j w_j R_j E[T_j]`` and a move pays
``w_j restart_s`` (the same rule for one job; jobs with much work left outweigh the rest).
``gpu_time``: ``remaining`` with every job weighted by its GPUs (remaining GPU-time, what the
queue waits on; a restart in GPU-seconds).  ``none``: whole iterations, moves free."""
MOVE_MARGIN: dict[str, float] = {"estimated": 0.05}
"""The default move margin by knowledge while no job waits in the queue: 5% with estimated
knowledge, what refitted estimates cannot tell apart (on the whole cluster04 trace on 1,024
GPUs, where the queue is mostly empty, no margin gave the same JCT for 5.6x the moves and 2.4x
the CPU).  While jobs wait the margin is :data:`QUEUED_MOVE_MARGIN`.  Chosen by the worst cell
of the grid (``python -m placement.bench online --grid``, 11 cells, 3 seeds): a 5% margin in
force while jobs waited made a hot, loaded 192-GPU cluster (cluster04 days 50-52) run +2.8%
[-5.8, +16.6] against consolidation over 3 seeds; this rule -4.5% [-6.7, -3.3] there (worst
cell of the grid: -3.3% at the interval's upper end, p99 +0.2%, 72% of clairvoyant's removal).
Over 16 seeds of that cell it is -3.1% [-4.8, -0.4], and every margin tried (this one, none,
5%) has one seed in sixteen about 15% slower than consolidation.  See ``benchmarks/README.md``."""
QUEUED_MOVE_MARGIN = 0.0
"""The default move margin while jobs wait in the queue (:attr:`SimConfig.queued_move_margin`):
none, the queue counts (a move that ends a running job sooner starts the queued jobs sooner).
Forbidding moves while jobs wait (a margin of 1) was the worst candidate of the grid: +2.5% at
the interval's upper end against consolidation on a hot 128-GPU one-switch cluster, where this
rule gives -19%."""
PATIENCE = 1.0
"""The default patience of the proactive loop (:attr:`SimConfig.patience`): wait at most what
starting at once would lose, the ski-rental rule that is never worse than twice the better of
the two choices in hindsight.  On the whole cluster04 trace (1,024 GPUs, full for weeks) jobs
that started as soon as they fit in number ran spread over the fragments of the servers, and
their all-reduce kept the cluster full; see ``benchmarks/README.md``."""
DECISION_TIME_LIMIT_S = 0.25
"""Seconds per placement decision in the simulator (arrivals and re-plans alike).  At 0.5 s the
whole cluster04 trace took 778-912 s of wall per estimated run, most of it priced re-plans whose
local search ran to its limit; at 0.25 s it took 554-589 s with the same JCT within the seeds'
spread (25,708 / 25,872 s against 25,644 / 26,134 s), and 445-461 s with incremental re-plans
(:data:`REPLAN_SCOPES`); see ``benchmarks/README.md``."""
SIZE_CLASSES = (("w1", 1, 1), ("w2_8", 2, 8), ("w9_32", 9, 32), ("w33up", 33, None))
"""Jobs by GPUs (name, fewest, most): where mean JCT comes from, and how much of it is queueing."""


def size_class_fields() -> tuple[str, ...]:
    """The summary's per-size-class fields: jobs, mean JCT, mean queueing and mean run."""
    return tuple(
        f
        for name, _, _ in SIZE_CLASSES
        for f in (f"jobs_{name}", f"avg_jct_{name}_s", f"avg_queue_{name}_s", f"avg_run_{name}_s")
    )


SUMMARY_FIELDS = (
    "method",
    "knowledge",
    "dynamics",
    "plan_by",
    "queue",
    "seed",
    "jobs",
    "jobs_finished",
    "avg_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "makespan_s",
    "avg_queue_s",
    "p99_queue_s",
    "gpu_utilization",
    "avg_slowdown",
    "straggled_iteration_fraction",
    "top1pct_jct_share",
    "migrations",
    "preemptions",
    "rho_p50",
    "rho_p95",
    "moves_repaid_alone",
    "restart_gpu_hours",
    "decisions",
    "decision_time_p50_s",
    "decision_time_p99_s",
    "decision_time_max_s",
    "place_time_p99_s",
    "replans",
    "replans_by_bound",
    "replan_pinned_share",
    "change_points_found",
    "jobs_waited",
    "jobs_comm_scaled",
    "jobs_profiled",
    "replan_time_p99_s",
    "wall_s",
    *size_class_fields(),
)


class SimulationError(PlacementError):
    """The simulation broke an invariant (a bug, never an outcome of the input)."""


@dataclass(frozen=True, kw_only=True)
class SimConfig:
    """One configuration of :func:`simulate` (keyword-only)."""

    method: str = "greedy"
    """Any registered method, or ``module:function``."""
    knowledge: str = "oracle"
    """What the scheduler knows of the slowdowns: the true distributions (``oracle``: the
    cluster's, or no slowdown at all under ``dynamics="none"``), the estimates refitted from
    the iteration logs (``estimated``), or nothing (``oblivious``)."""
    dynamics: str = "markov"
    episode_median_s: float = EPISODE_MEDIAN_S
    persistent_share: float = PERSISTENT_SHARE
    """``mixed`` dynamics: the share of each server's slow time spent persistently slow;
    ``onset``: spent in fail-slow regimes of hours."""
    replay_path: str | None = None
    queue: str = "fifo"
    """:data:`QUEUES`: the queue policy (who runs; ``method`` decides where)."""
    replay_starts: str | None = None
    """``queue="replay"``: the jobs CSV of the run whose start times are replayed."""
    starvation: float | None = None
    """``queue="tiresias"``: Tiresias's starvation knob, a preempted job that has waited this
    many times the seconds it ran goes back to the top queue (``None``: off)."""
    comm: str = "on"
    """:data:`~placement.simulation.workload.reference.COMM_MODES`: ``off`` makes communication
    free at every placement (``T = max a S``), the semantics of simulators that ignore
    placement, kept for cross-checking against them; ``penalty:F`` free too, but a job on two or
    more servers runs F times slower (Blox's and PAL's semantics: the cluster's
    ``locality_penalty``, in its decisions and its truth)."""
    variability: tuple[str, ...] = ()
    """Hidden per-GPU factors: ``[CLASS=]FILE`` profiles (:mod:`placement.estimate.gpu_profiles`'
    formats; ``CLASS=`` renames a one-class file's class), laid on the cluster by the run's seed;
    ``oracle`` knowledge is given them, the others are not."""
    variability_draw: str = "medians"
    """:data:`placement.estimate.gpu_profiles.DRAWS`: each profiled GPU's steady factor, or (``runs``)
    PAL's simulator's draws from the class's runs."""
    profiles: str | None = None
    """A ``placement calibrate`` output (its jobs ``<model>-b<batch>``): a trace job of a profiled
    model takes the median batch's fitted compute and gradient, and runs its trace duration at
    its reference placement by its number of iterations (the trace's compute is solved from the
    duration otherwise).  Calibrate the cluster too, so that its bandwidths and terms are the
    fitted ones (the same file can be the cluster)."""
    comm_share_max: float = COMM_SHARE_MAX
    """The largest share of a trace job's measured iteration time its all-reduce may take at
    its reference placement (its gradient is scaled down to it; ``jobs_comm_scaled`` counts
    them)."""
    decision_time_limit_s: float = DECISION_TIME_LIMIT_S
    """Seconds per decision (placing the queue, or a re-plan); the benchmarks' setting."""
    decision_clock: str = "work"
    """What ``decision_time_limit_s`` is counted on (:data:`~placement.solving.budget.CLOCKS`):
    the wall clock, or a work clock (``work``: each budget check of a method is
    ``WORK_TICK_S`` seconds, so decisions stop after the same steps on any machine, loaded or
    not, and a run is repeatable; see :func:`placement.solve`)."""
    prove: bool = False
    """``auto``'s decisions may spend their time on the exact model, which proves a placement
    optimal (:func:`placement.solve`'s ``prove``).  Off by default: on the first 1,500 jobs of
    the whole cluster04 trace it improved none of 97 arrival decisions it ran on and took a
    third of the wall time."""
    round_s: float | None = None
    """Decide every ``round_s`` seconds instead of at every arrival and completion."""
    resettle: bool = False
    """Each round places every running job again with the queue, at no price but
    ``restart_s`` for a job that lands elsewhere (the non-sticky rounds of PAL's and Blox's
    simulators, kept for cross-checking them); needs ``round_s``."""
    max_offer: int = 64
    """Most queued jobs offered to one decision (in queue order, skipping those wider than
    the free GPUs left by the jobs before them)."""
    objective: str = "weighted_expected_iteration_time"
    """What a decision minimises (:data:`~placement.model.records.OBJECTIVES`): the weighted
    expected iteration time, or ``weighted_expected_jct``, each job weighed by its iterations
    (at arrival, its whole remaining work: a long job gets the fast servers first)."""
    decision_weight: str = "trace"
    """How a placement decision weighs the jobs it places (:data:`DECISION_WEIGHTS`): by the
    trace's weights (``trace``), or ``srpt``: each job's weight times its GPUs over its remaining
    straggler-free seconds, so that where jobs compete for the fast GPUs the one nearest its end,
    per GPU it holds, gets them (shortest remaining processing time, for mean JCT).  With
    ``resettle`` rounds, every running job's remaining work is counted at each round."""
    plan_by: str = "forecast"
    """What a decision's expected iteration time is computed from: each server's forecast
    over the job's horizon (``forecast``, the default: with ``estimated`` knowledge, from the
    server's law over the estimate window, its last look and the fleet's episode length,
    :mod:`placement.simulation.forecast`; a short job sees the state now, a long one the law;
    with ``oracle`` knowledge, which has no state, the law itself); the slowdown
    distributions (``expected``: ``E[T]``; with ``estimated`` knowledge, the recency-weighted
    estimates); each server's steady-rate point ``1 / E[1/S]`` (``rate``: what a job that lives
    through many short episodes runs at); or per job, the steady-rate points for jobs whose
    ideal duration spans at least ``RATE_CYCLES`` slow-state cycles (``duration``, dynamics
    with episodes: markov, mixed); or ``aged``: forecasts as ``forecast``'s, but a server slow at
    its last look is forecast with the episode length of its age class (an onset, or slow at the
    look before too) and states weigh by the iterations a job does in them, not by time
    (:mod:`placement.simulation.forecast`; a candidate, not the default)."""
    estimate_every_s: float = 600.0
    estimate_window_s: float = 86_400.0
    """Log rows older than this are dropped before a refit (the estimator also weighs by recency)."""
    change_points: str = "off"
    """:data:`CHANGE_POINTS`."""
    link_half_life_ticks: float | None = HALF_LIFE_TICKS
    """``estimated`` knowledge: the recency half-life, in estimate ticks, of the looks the learner
    of congested domains weighs (:mod:`placement.simulation.congestion_book`); ``None``: no
    recency, every look of the window alike (a domain's share of congestion over the window, the
    long-run view a job of days lives through; a candidate, not the default)."""
    ratio_to: str = "profiled"
    """:data:`RATIO_TO`: what a logged worker time is divided by (the job's straggler-free time,
    or its median worker's)."""
    replan: str = "on"
    """:data:`REPLAN_MODES`: ``on`` (the proactive loop's default): a method that re-plans
    (``auto``, ``local_search``) re-plans the running jobs every ``replan_every_s`` and on
    ``replan_events``, its moves priced by ``replan_price``, each paying ``restart_s``;
    ``off``: jobs stay where they were placed at arrival.  Methods that do not re-plan never
    do."""
    replan_every_s: float | None = 3600.0
    max_moves: int | None = None
    restart_s: float = 300.0
    """Seconds of progress a job moved by re-planning loses (it pauses that long)."""
    replan_events: tuple[str, ...] = ()
    """:data:`REPLAN_EVENTS` that trigger a re-plan besides the period."""
    replan_min_gap_s: float = 600.0
    """Least time between two event-triggered re-plans."""
    replan_threshold: float = 0.1
    """``estimate`` events: the relative change of a server's believed mean that triggers."""
    move_budget_per_hour: int | None = None
    """Most workers re-plans may move in any hour (``None``: no budget)."""
    replan_price: str = "amortized"
    """:data:`REPLAN_PRICES`."""
    replan_scope: str = "movers"
    """:data:`REPLAN_SCOPES`."""
    move_margin: float | None = None
    """``amortized`` prices: a move must also cut the job's believed expected iteration time
    by this share, what the beliefs cannot tell apart (``None``: :data:`MOVE_MARGIN` by
    knowledge) while no job waits in the queue (see :meth:`margin`)."""
    queued_move_margin: float | None = None
    """The move margin while jobs wait in the queue (queue pressure: a move that ends a job
    sooner also starts them sooner; 1 or more: no job moves while others wait); ``None``:
    ``move_margin`` when that is given, else :data:`QUEUED_MOVE_MARGIN`."""
    patience: float | None = None
    """Delay scheduling, a ski-rental rule: a queued job whose placement now would be slower
    than its straggler-free best on an idle cluster (a spread gang's all-reduce) waits, while
    running jobs may free better GPUs, until it has waited ``patience`` times the seconds that
    placement would add to its whole run (counted from its first such offer); then it takes
    what is free.  ``0``: every job starts as soon as it fits; ``None``: :data:`PATIENCE`
    where running jobs re-plan (the proactive loop), else 0 (see :attr:`wait_factor`)."""
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        choices = (
            ("knowledge", KNOWLEDGE),
            ("dynamics", tuple(DYNAMICS)),
            ("plan_by", PLAN_BY),
            ("ratio_to", RATIO_TO),
            ("replan_price", REPLAN_PRICES),
            ("decision_clock", CLOCKS),
            ("change_points", CHANGE_POINTS),
            ("replan_scope", REPLAN_SCOPES),
            ("queue", QUEUES),
            ("variability_draw", DRAWS),
            ("objective", OBJECTIVES),
            ("decision_weight", DECISION_WEIGHTS),
        )
        for name, allowed in choices:
            v = getattr(self, name)
            if v not in allowed:
                problems.append(f"{name} must be one of {', '.join(allowed)}, got {v!r}")
        try:
            comm_penalty(self.comm)
        except (ValueError, AttributeError):
            problems.append(f"comm must be on, off or penalty:F with F >= 1, got {self.comm!r}")
        if not (isinstance(self.comm_share_max, (int, float)) and 0.0 <= self.comm_share_max < 1.0):
            problems.append(f"comm_share_max must be a number in [0, 1), got {self.comm_share_max!r}")
        if self.queue == "replay" and not self.replay_starts:
            problems.append("queue 'replay' needs replay_starts: the jobs CSV of the run whose starts are replayed")
        if self.dynamics == "replay" and not self.replay_path:
            problems.append("dynamics 'replay' needs a replay file (time_s, server, slowdown)")
        if not (isinstance(self.persistent_share, (int, float)) and 0.0 <= self.persistent_share <= 1.0):
            problems.append(f"persistent_share must be a number in [0, 1], got {self.persistent_share!r}")
        for name in ("decision_time_limit_s", "estimate_every_s", "estimate_window_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                problems.append(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("round_s", "replan_every_s", "link_half_life_ticks"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                problems.append(f"{name} must be a finite number > 0 or None, got {v!r}")
        if self.resettle and self.round_s is None:
            problems.append("resettle needs round_s: it places every job again at each round")
        for name in ("move_margin", "queued_move_margin"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                problems.append(f"{name} must be a finite number >= 0 or None, got {v!r}")
        if not (math.isfinite(self.restart_s) and self.restart_s >= 0):
            problems.append(f"restart_s must be a finite number >= 0, got {self.restart_s!r}")
        if self.starvation is not None and not (
            isinstance(self.starvation, (int, float)) and math.isfinite(self.starvation) and self.starvation > 0
        ):
            problems.append(f"starvation must be a finite number > 0 or None, got {self.starvation!r}")
        if self.patience is not None and not (
            isinstance(self.patience, (int, float)) and math.isfinite(self.patience) and self.patience >= 0
        ):
            problems.append(f"patience must be a finite number >= 0 or None, got {self.patience!r}")
        if self.max_offer < 1:
            problems.append(f"max_offer must be >= 1, got {self.max_offer!r}")
        object.__setattr__(self, "replan_events", tuple(self.replan_events))  # a list from JSON
        bad_events = [e for e in self.replan_events if e not in REPLAN_EVENTS]
        if bad_events:
            problems.append(f"replan_events must be among {', '.join(REPLAN_EVENTS)}, got {', '.join(bad_events)}")
        if not (math.isfinite(self.replan_min_gap_s) and self.replan_min_gap_s >= 0):
            problems.append(f"replan_min_gap_s must be a finite number >= 0, got {self.replan_min_gap_s!r}")
        if not (math.isfinite(self.replan_threshold) and self.replan_threshold > 0):
            problems.append(f"replan_threshold must be a finite number > 0, got {self.replan_threshold!r}")
        if self.move_budget_per_hour is not None and self.move_budget_per_hour < 1:
            problems.append(f"move_budget_per_hour must be >= 1 or None, got {self.move_budget_per_hour!r}")
        if self.replan not in REPLAN_MODES:
            problems.append(f"replan must be one of {', '.join(REPLAN_MODES)}, got {self.replan!r}")
        if self.replan == "on" and self.replan_events and not get_method(self.method).replans:
            problems.append(f"re-planning needs a method that re-plans (auto, local_search), got {self.method!r}")
        if problems:
            raise InvalidInputError(problems)

    def margin(self, queued: bool) -> float:
        """The move margin in force, while jobs wait in the queue (``queued``) or not:
        ``queued_move_margin`` and ``move_margin``, their defaults :data:`QUEUED_MOVE_MARGIN`
        and :data:`MOVE_MARGIN` of the knowledge."""
        if queued:
            if self.queued_move_margin is not None:
                return float(self.queued_move_margin)
            if self.move_margin is not None:
                return float(self.move_margin)
            return QUEUED_MOVE_MARGIN
        return MOVE_MARGIN.get(self.knowledge, 0.0) if self.move_margin is None else float(self.move_margin)

    @property
    def wait_factor(self) -> float:
        """The patience in force: ``patience``, or :data:`PATIENCE` where running jobs re-plan."""
        if self.patience is not None:
            return float(self.patience)
        return PATIENCE if self.replans else 0.0

    @property
    def replans(self) -> bool:
        """Whether running jobs may move: re-planning is on, the method re-plans, and a
        period or an event triggers re-plans."""
        return (
            self.replan == "on"
            and (self.replan_every_s is not None or bool(self.replan_events))
            and get_method(self.method).replans
        )

    @property
    def label(self) -> str:
        return f"{self.method}/{self.knowledge}/{self.dynamics}/seed{self.seed}"


@dataclass
class SimResult:
    """What a simulation measured: the summary (:data:`SUMMARY_FIELDS`), one row per job,
    and the cluster's state after every batch of events."""

    config: SimConfig
    summary: dict[str, Any]
    jobs: list[dict[str, Any]]
    timeline: dict[str, list[float]] = field(default_factory=dict)
    """``time_s``, ``queued`` (jobs waiting), ``running`` (jobs), ``used_gpus``."""
    truth_start: dict[str, float] = field(default_factory=dict)
    """Each server's hidden slowdown at time 0 (for analysis after the run; the scheduler
    never saw it)."""
    believed_mean: dict[str, float] = field(default_factory=dict)
    """Each server's expected slowdown as the scheduler believed it at the end."""
    iteration_log: dict[str, list[Any]] = field(default_factory=dict)
    """``knowledge="estimated"``: the per-worker iteration log rows still in the estimator's
    window (``job, worker, server, iteration, duration, ratio``)."""
    slowdown_changes: dict[str, list[Any]] = field(default_factory=dict)
    """The hidden truth's changes as they happened: ``time_s``, ``server``, ``value`` (with
    :attr:`truth_start`, each server's slowdown at every moment; for analysis after the run)."""
    held: list[dict[str, Any]] = field(default_factory=list)
    """Every interval a job held one placement, from its start or a move to its next move or
    its end: ``job``, ``from_s``, ``to_s``, ``placement`` (``server:workers ...``); a job that
    never moved has one."""
