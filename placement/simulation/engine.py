"""The event-driven simulator of the proactive loop: jobs arrive over time, the scheduler
places each gang by solving a placement instance, servers drift in and out of slow states
(the hidden truth of :mod:`placement.simulation.dynamics`), and every running job advances at
the pace of the snapshot model's iteration time under the current slowdowns.

Execution is exact between events (arrivals, completions, slowdown changes, estimate
refreshes, re-planning rounds, scheduler rounds): a job whose iteration time is ``T`` ms
does ``1000 dt / T`` iterations in ``dt`` seconds, and its completion time is recomputed
whenever ``T`` changes.  A running job and its ``T`` (the snapshot model's formula, every
architecture) are :mod:`.running`'s; configuration, beliefs and the summary are
:mod:`.config`, :mod:`.belief` and :mod:`.metrics`.  This module is the event loop: the queue,
the decisions and the handlers that share its state.

Decisions take no simulated time; their wall time is measured and reported.  Every
placement goes through :func:`placement.solving.driver.solve`, which validates it; the
simulator also checks at every decision that no server holds more workers than GPUs.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from placement.errors import InvalidInputError
from placement.estimate.logs import bin_index
from placement.model.records import Instance, Slowdown
from placement.problem.topology import cluster_of
from placement.simulation.belief import Belief
from placement.simulation.changepoint import ChangePoints
from placement.simulation.config import (
    KNOWLEDGE,
    PLAN_BY,
    QUEUES,
    RATE_CYCLES,
    SUMMARY_FIELDS,
    SimConfig,
    SimResult,
    SimulationError,
)
from placement.simulation.congestion_book import CongestionLearner
from placement.simulation.decisions import Floors, refit_belief
from placement.simulation.dynamics import EPISODE_MEDIAN_S, hidden_truth
from placement.simulation.forecast import server_looks
from placement.simulation.gpu_book import GpuBook, GpuLearner, truth_cluster
from placement.simulation.hindsight import Lookahead
from placement.simulation.metrics import summarise
from placement.simulation.observations import LOG_KEYS, DecisionLog, IterationLog
from placement.simulation.queues import QUEUES as QUEUE_POLICIES
from placement.simulation.replanning import Replanning
from placement.simulation.running import (
    Running,
    advance,
    domain_names,
    finished_row,
    held_row,
    iteration_ms,
    observed,
    running_on,
    set_stages,
)
from placement.simulation.workload import TraceJob, Workload
from placement.simulation.workload.reference import as_measured, profiles_of, refuse_low_gamma

__all__ = [
    "SimConfig",
    "SimResult",
    "simulate",
    "KNOWLEDGE",
    "PLAN_BY",
    "RATE_CYCLES",
    "QUEUES",
    "SimulationError",
    "SUMMARY_FIELDS",
]


# The event kernel: each kind is a position in the handler table (``_Simulation.handlers``),
# and equal times are handled in this order: completions free GPUs before the state changes,
# arrivals, refits, re-plans, rounds and the end of a waiting job's patience of the same instant.
EVENT_KINDS = ("complete", "change", "arrival", "estimate", "replan", "round", "patience")
_COMPLETE, _CHANGE, _ARRIVAL, _ESTIMATE, _REPLAN, _ROUND, _PATIENCE = range(len(EVENT_KINDS))


class _Simulation(Replanning):
    def __init__(
        self,
        cluster: Instance,
        workload: Workload,
        cfg: SimConfig,
        progress: Callable[[float, int, int], None] | None,
        log_path: str | None = None,
        decisions_path: str | None = None,
    ) -> None:
        cluster = truth_cluster(cluster, cfg)  # measured laws, hidden GPU factors, locality penalty
        self.cluster = cluster
        self.book = GpuBook(cluster, knows_factors=cfg.knowledge in ("oracle", "clairvoyant", "hindsight"))
        self.learner = GpuLearner(cluster) if self.book and cfg.knowledge == "estimated" else None
        window = math.ceil(cfg.estimate_window_s / cfg.estimate_every_s)
        half_life = cfg.link_half_life_ticks
        self.links = CongestionLearner(cluster, cfg.seed, window, half_life) if cfg.knowledge == "estimated" else None
        self.decisions = DecisionLog(decisions_path) if decisions_path is not None else None
        self.cfg = cfg
        self.jobs = list(workload.jobs)
        self.job_code = {j.id: k for k, j in enumerate(self.jobs)}
        self.progress_cb = progress
        total = int(sum(s.free_gpus for s in cluster.servers))
        too_wide = [j for j in self.jobs if j.workers > total]
        if too_wide:
            raise InvalidInputError(
                [f"job {j.id!r} needs {j.workers} GPUs; the cluster has {total} free" for j in too_wide[:40]]
                + ([f"... and {len(too_wide) - 40} more"] if len(too_wide) > 40 else [])
            )
        # a trace's duration is a measurement: each job runs it at its reference placement
        profiles = None
        if cfg.profiles is not None:
            from placement.formats import load_instance

            profiles = profiles_of(load_instance(cfg.profiles))
        self.jobs, self.comm_scaled, self.profiled = as_measured(
            cluster, self.jobs, comm=cfg.comm, comm_share_max=cfg.comm_share_max, profiles=profiles
        )
        refuse_low_gamma(cluster, self.jobs)
        self.n = len(cluster.servers)
        self.free = np.array([s.free_gpus for s in cluster.servers], dtype=np.int64)
        self.capacity = self.free.copy()
        self.total_gpus = total
        self.server_ids = [s.id for s in cluster.servers]
        self.state_ids = self.server_ids + domain_names(cluster)
        self.cl = cluster_of(cluster)
        opts = {k: getattr(cfg, k) for k in ("episode_median_s", "persistent_share", "replay_path")}
        self.truth = hidden_truth(cluster, cfg.dynamics, seed=cfg.seed, **opts)
        self.S = self.truth.run_start()  # servers, then congested domains
        self.S0 = self.S.copy()
        self.slow_log: dict[str, list[Any]] = {"time_s": [], "server": [], "value": []}
        self.changes = Lookahead(self.truth.run_changes(self.S.copy()))
        self.paths: dict[float, Mapping[str, Slowdown]] = {}
        self.paths_at = -math.inf
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.now = 0.0
        self.queue: list[TraceJob] = []
        self.running: dict[str, Running] = {}
        self.suspended: dict[str, Running] = {}
        """Preempted jobs waiting to resume (their progress is kept)."""
        self.preemptions = 0
        self.policy = QUEUE_POLICIES[cfg.queue](cluster, cfg.starvation)
        self.policy.configure(cfg)
        self.round_s = cfg.round_s if cfg.round_s is not None else self.policy.round_s
        """Decide only every ``round_s`` seconds (the configuration's, else the queue policy's)."""
        self.touched, self.resettled = True, None
        """An event other than a round since the last ``resettle`` round, and what it offered."""
        self.queue_wake = -math.inf
        self.on_server: list[set[str]] = [set() for _ in range(len(self.S))]
        self.done: list[dict[str, Any]] = []
        self.held: list[dict[str, Any]] = []
        """Every interval a job held one placement (``job, from_s, to_s, placement``)."""
        self.decision_walls: list[float] = []
        self.timeline: dict[str, list[float]] = {"time_s": [], "queued": [], "running": [], "used_gpus": []}
        self.rng = np.random.default_rng(np.random.SeedSequence(int(cfg.seed) % 2**63).spawn(2)[1])
        self.migrations = 0
        self.replan_walls: list[float] = []
        self.place_walls: list[float] = []
        self.last_event_replan = -math.inf
        self.freed = False
        """GPUs were freed since the last decision (the ``freed`` event)."""
        self.replanning = False
        self.moved_workers: deque[tuple[float, int]] = deque()
        """(time, workers moved) of the re-plans of the last hour (the move budget)."""
        self.replan_means: np.ndarray | None = None
        self.placed_since_replan = True
        """A job started, finished or moved since the last re-plan."""
        self.replans_by_bound = 0
        """Re-plans settled by the bound (no job could repay a move) without a search."""
        self.replan_seen = 0
        """Running jobs the priced (amortized) re-plans looked at, one count per re-plan."""
        self.replan_pinned = 0
        """Of those, the jobs kept out of the search: they could not repay a move of their own."""
        self.moves_repaid_alone = 0
        """Moves whose own believed saving over the work left repaid their price (amortized)."""
        self.first_offer: dict[str, float] = {}
        self.wake: dict[str, float] = {}
        self.held_room: dict[str, tuple[int, int]] = {}
        self.waited: set[str] = set()
        self.floors = Floors(cluster)
        self.restart_gpu_s = 0.0
        """GPU-seconds moved jobs stood idle restarting."""
        self.busy_gpu_s = 0.0
        # what the scheduler believes
        self.belief = Belief(
            cluster,
            knowledge=cfg.knowledge,
            plan_by=cfg.plan_by,
            truthful=cfg.dynamics != "none",
            mean_episode_s=self.truth.mean_episode if self.truth.episodes else None,
            forecast=self._forecast,
        )
        self.forecasts: dict[float, Mapping[str, Slowdown]] = {}
        self.template: Instance | None = None
        self.stale = False
        if cfg.knowledge == "estimated" and log_path is not None:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        else:
            log_path = None
        self.logs = IterationLog([j.id for j in self.jobs], self.server_ids, cfg.estimate_window_s, log_path)
        self.detector: ChangePoints | None = None
        if cfg.knowledge == "estimated" and cfg.change_points == "bocpd":
            self.detector = ChangePoints(self.n, math.ceil(cfg.estimate_window_s / cfg.estimate_every_s) + 1)

    # ------------------------------------------------------------ events
    def push(self, t: float, kind: int, data: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, data))

    def run(self) -> SimResult:
        try:
            return self._run()
        finally:
            self.logs.close()
            if self.decisions is not None:
                self.decisions.close()

    def _run(self) -> SimResult:
        wall0 = time.perf_counter()
        for j in self.jobs:
            self.push(j.submit_s, _ARRIVAL, j)
        self._push_next_change()
        if self.cfg.knowledge == "estimated":
            self.push(self.cfg.estimate_every_s, _ESTIMATE)
        if self.cfg.replans and self.cfg.replan_every_s is not None:
            self.push(self.cfg.replan_every_s, _REPLAN)
        if self.round_s is not None:
            self.push(self.round_s, _ROUND)
        self.pending_jobs = len(self.jobs)
        self.arrivals_left = len(self.jobs)
        handlers: tuple[Callable[[Any], bool], ...] = (
            self._on_complete,
            self._on_change,
            self._on_arrival,
            self._on_estimate,
            self._on_replan,
            self._on_round,
            self._on_patience,
        )
        assert len(handlers) == len(EVENT_KINDS)
        dirty = False
        last_report = 0.0
        while self.heap:
            t, kind, _, data = heapq.heappop(self.heap)
            if self.pending_jobs == 0 and not self.running and not self.queue:
                break
            self.now = t
            dirty = handlers[kind](data) or dirty
            self.touched = self.touched or kind != _ROUND
            nxt = self.heap[0][0] if self.heap else math.inf
            if nxt > t:
                if dirty and self.round_s is None:
                    self._decide()
                    self._check_stuck()
                dirty = False
                self._record()
                if self.progress_cb is not None and time.perf_counter() - last_report > 0.2:
                    last_report = time.perf_counter()
                    self.progress_cb(t, len(self.done), len(self.jobs))
        if self.progress_cb is not None:
            self.progress_cb(self.now, len(self.done), len(self.jobs))
        return self._result(time.perf_counter() - wall0)

    # ---------------------------------------------------------- handlers
    # Each handles one event at ``self.now`` and says whether the queue or the free GPUs
    # changed (then the scheduler decides once every event of this instant is handled).
    def _on_complete(self, data: tuple[str, int]) -> bool:
        name, version = data
        r = self.running.get(name)
        if r is None or r.version != version:
            return False  # superseded: the job's completion was rescheduled
        self._finish(r)
        self.pending_jobs -= 1
        self.freed = True
        return True

    def _on_change(self, data: Sequence[Any]) -> bool:
        self._apply_changes(data)
        self._push_next_change()
        return False

    def _on_arrival(self, job: TraceJob) -> bool:
        self.queue.append(job)
        self.arrivals_left -= 1
        return True

    def _again(self, kind: int, period: float | None) -> None:
        if self.pending_jobs and period is not None:
            self.push(self.now + period, kind)

    def _on_estimate(self, _: Any) -> bool:
        self._observe()
        self._again(_ESTIMATE, self.cfg.estimate_every_s)
        if self.cfg.replans and "estimate" in self.cfg.replan_events and self.stale and self._may_replan_on_event():
            self._refit()
            if self._beliefs_moved():
                self.last_event_replan = self.now
                self._replan()
        return False

    def _on_replan(self, _: Any) -> bool:
        if self._worth_replanning():
            self._replan()
        self._again(_REPLAN, self.cfg.replan_every_s)
        return False

    def _worth_replanning(self) -> bool:
        """Whether the period's re-plan could find what the last one did not: a job started,
        finished or moved since, or the beliefs changed (clairvoyant: always; estimated: some
        server's believed mean by more than ``replan_threshold``, relative).  Otherwise it
        would solve the same instance with less work left to repay a move."""
        if self.placed_since_replan or self.replan_means is None or self.cfg.knowledge in ("clairvoyant", "hindsight"):
            return True
        if self.cfg.knowledge != "estimated":
            return False
        if self.stale:
            self._refit()
        return self._beliefs_moved()

    def _beliefs_moved(self) -> bool:
        """Whether some server's believed mean moved by more than ``replan_threshold``
        (relative) since the last re-plan (always, before the first)."""
        was = self.replan_means
        return was is None or bool((np.abs(self.belief.means() - was) > self.cfg.replan_threshold * was).any())

    def _on_round(self, _: Any) -> bool:
        if self.cfg.resettle:
            self._resettle()
        else:
            self._decide()
        self._check_stuck()
        self._again(_ROUND, self.round_s)
        return False

    def _check_stuck(self) -> None:
        """After a decision: jobs left waiting on an idle cluster with nothing more to arrive
        and no wake-up of the queue policy due can never be placed (a bad input, not an
        outcome)."""
        if self.queue and not self.running and not self.arrivals_left and not self.queue_wake > self.now:
            stuck = ", ".join(f"{j.id!r} ({j.workers} GPUs)" for j in self.queue[:10])
            raise InvalidInputError(
                [f"{len(self.queue)} job(s) can never be placed on an idle cluster by {self.cfg.method}: {stuck}"]
            )

    def _on_patience(self, _: Any) -> bool:
        return True  # a waiting job's patience ran out: decide (it takes what is free)

    def _wake_at(self, t: float) -> None:
        self.push(t, _PATIENCE)

    def _push_next_change(self) -> None:
        nxt = self.changes.next()
        if nxt is not None:
            self.push(nxt[0], _CHANGE, nxt[1])

    # ----------------------------------------------------------- running
    def _schedule_completion(self, r: Running) -> None:
        r.version += 1
        left = max(0.0, r.tj.iterations - r.progress)
        t_end = max(self.now, r.paused_until) + left * r.T / 1000.0
        self.push(t_end, _COMPLETE, (r.tj.id, r.version))

    def _apply_changes(self, changes: Sequence[Any]) -> None:
        touched: set[str] = set()
        for c in changes:
            touched |= self.on_server[c.server]
        for name in touched:
            advance(self.running[name], self.now)
        self.forecasts.clear()
        for c in changes:
            self.S[c.server] = c.value
            self.slow_log["time_s"].append(c.time_s)  # a congested domain: "domain:<its switches>"
            self.slow_log["server"].append(self.state_ids[c.server])
            self.slow_log["value"].append(float(c.value))
        for name in touched:
            r = self.running[name]
            r.T = iteration_ms(r, self.S)
            self._schedule_completion(r)

    def _running(
        self,
        tj: TraceJob,
        alloc: dict[int, int],
        shards: dict[int, int] | None = None,
        stages: Sequence[Sequence[int]] | None = None,
    ) -> Running:
        return running_on(self.cluster, tj, alloc, shards, stages, self.now)

    def _start(self, r: Running) -> None:
        tj, alloc = r.tj, r.alloc
        old = self.suspended.pop(tj.id, None)
        if old is not None:  # a preempted job resumes from its checkpoint, after its restart
            r.progress, r.straggled_iters, r.moves = old.progress, old.straggled_iters, old.moves
            r.start, r.ran_s, r.preemptions, r.version = old.start, old.ran_s, old.preemptions, old.version
            r.paused_until = self.now + self.cfg.restart_s
            r.pause_s = old.pause_s + self.cfg.restart_s
            self.restart_gpu_s += tj.workers * self.cfg.restart_s
        if self.book:  # its GPUs on servers with per-GPU factors: the truth's f*
            r.a = self.book.scale(r.sps, r.a, self.book.take(tj.id, tj.app_class, alloc, r.gpus))
            set_stages(self.cluster, r, r.stages or None)
        r.T = iteration_ms(r, self.S)
        for sp, k in alloc.items():
            self.free[sp] -= k
        for sp in r.servers():
            self.on_server[sp].add(tj.id)
        if (self.free < 0).any():
            raise SimulationError(
                f"at t={self.now:g} s, job {tj.id!r} over-commits servers {np.flatnonzero(self.free < 0)}"
            )
        self.running[tj.id] = r
        self.placed_since_replan = True
        self._schedule_completion(r)

    def _stop(self, r: Running) -> None:
        """``r`` leaves its GPUs now (it finishes or is preempted)."""
        advance(r, self.now)
        for sp, k in r.alloc.items():
            self.free[sp] += k
        self.book.release(r.tj.id)
        for sp in r.servers():
            self.on_server[sp].discard(r.tj.id)
        del self.running[r.tj.id]
        self.placed_since_replan = True
        self.busy_gpu_s += r.tj.workers * (self.now - r.resumed)
        self.held.append(held_row(r, self.now, self.server_ids))

    def _finish(self, r: Running) -> None:
        self._stop(r)
        if self.decisions is not None:
            self.decisions.write({"kind": "finish", "t": self.now, "job": r.tj.id})
        self.done.append(finished_row(r, self.now, self.server_ids))

    def _preempt(self, r: Running) -> None:
        """The queue policy preempts ``r``: it keeps its progress (checkpointed) and waits in
        the queue to resume, paying ``restart_s`` then."""
        self._stop(r)
        if self.decisions is not None:
            self.decisions.write({"kind": "preempt", "t": self.now, "job": r.tj.id})
        r.version += 1  # its completion is void
        cut = max(0.0, r.paused_until - self.now)  # a restart it will not finish is not charged
        r.pause_s -= cut
        self.restart_gpu_s -= r.tj.workers * cut
        r.ran_s += self.now - r.resumed
        r.stopped = self.now
        r.preemptions += 1
        self.preemptions += 1
        self.suspended[r.tj.id] = r
        self.queue.append(r.tj)
        self.freed = True

    def _record(self) -> None:
        tl = self.timeline
        if tl["time_s"] and tl["time_s"][-1] == self.now:
            for k in ("time_s", "queued", "running", "used_gpus"):
                tl[k].pop()
        tl["time_s"].append(self.now)
        tl["queued"].append(len(self.queue))
        tl["running"].append(len(self.running))
        tl["used_gpus"].append(float(self.total_gpus - int(self.free.sum())))

    # -------------------------------------------------- proactive loop
    def _log_iterations(self) -> None:
        """One logged iteration of every running job that shows one (:func:`.running.observed`)."""
        rows: dict[str, list[Any]] = {k: [] for k in LOG_KEYS}
        for r in self.running.values():
            if r.paused_until > self.now:
                continue  # restarting after a move: no iterations to show
            seen = observed(r, self.S, self.rng, self.cfg.ratio_to)
            if seen is None:
                continue
            sps, d, ratio = seen
            if self.learner is not None and not r.stages:  # each worker at its own GPU's factor
                d = self.learner.observe(self.book, r.tj, sps, d, ratio, self.belief.means(), self.now)
            rows["job"] += [self.job_code[r.tj.id]] * len(sps)
            rows["worker"] += list(range(len(sps)))
            rows["server"] += sps.tolist()
            rows["iteration"] += [int(r.progress)] * len(sps)
            rows["duration"] += d.tolist()
            rows["ratio"] += ratio.tolist()
        self.logs.append(self.now, rows)
        if self.links is not None:  # what the jobs' paces show of the links they cross
            self.links.observe(self.running.values(), self.S, self.now)
        if self.detector is not None and rows["server"]:
            looked, look = server_looks(np.asarray(rows["server"]), np.asarray(rows["ratio"]), self.n)
            was = self.belief.forecaster
            episode = was.mean_episode_s if was is not None else EPISODE_MEDIAN_S  # a prior, not the truth
            self.detector.update(self.now, looked, bin_index(look) > 0, episode)

    def _observe(self) -> None:
        """An estimate tick: log what the running jobs show now, drop what fell out of the
        window; the refit itself waits for the next decision that needs it (the same
        estimates, computed only when used)."""
        self._log_iterations()
        self.logs.prune(self.now)
        self.stale = bool(self.logs)

    def _refit(self) -> None:
        self.stale = False
        kept = None
        if self.detector is not None:  # forget what a server showed before its law changed
            kept = self.detector.kept([c["server"] for _, c in self.logs.chunks])
        laws, forecaster, _ = refit_belief(
            list(self.logs.chunks),
            self.now,
            self.server_ids,
            plan_by=self.cfg.plan_by,
            estimate_every_s=self.cfg.estimate_every_s,
            previous=self.belief.forecaster,
            kept=kept,
        )
        factors = self.learner.factors() if self.learner is not None else None
        self.belief.update(laws, forecaster, factors, self.links.laws() if self.links is not None else None)
        self.template = None
        if self.decisions is not None:
            self.decisions.write({"kind": "refit", "t": self.now})

    # ----------------------------------------------------------- result
    def _result(self, wall: float) -> SimResult:
        if self.stale:
            self._refit()
        rows = sorted(self.done, key=lambda r: (r["submit_s"], r["job"]))
        summary = summarise(
            self.cfg,
            rows,
            [j.submit_s for j in self.jobs],
            self.decision_walls,
            busy_gpu_s=self.busy_gpu_s,
            total_gpus=self.total_gpus,
            migrations=self.migrations,
            preemptions=self.preemptions,
            replan_walls=self.replan_walls,
            restart_gpu_s=self.restart_gpu_s,
            place_walls=self.place_walls,
            replans_by_bound=self.replans_by_bound,
            moves_repaid_alone=self.moves_repaid_alone,
            replan_pinned_share=self.replan_pinned / self.replan_seen if self.replan_seen else None,
            change_points_found=self.detector.found if self.detector is not None else None,
            jobs_waited=len(self.waited),
            jobs_comm_scaled=self.comm_scaled,
            jobs_profiled=self.profiled,
            wall_s=wall,
        )
        if self.learner is not None:
            summary["gpu_rank_corr"], summary["gpu_rank_corr_day1"] = self.learner.rank_corr(), self.learner.day1
        if len(rows) != len(self.jobs):
            raise SimulationError(f"{len(self.jobs) - len(rows)} job(s) never finished")
        return SimResult(
            self.cfg,
            summary,
            rows,
            self.timeline,
            truth_start={sid: float(v) for sid, v in zip(self.server_ids, self.S0)},
            slowdown_changes=self.slow_log,
            believed_mean={s.id: s.slowdown.mean() for s in self.belief.servers},
            iteration_log=self.logs.named() if self.logs else {},
            held=sorted(self.held, key=lambda h: (h["from_s"], h["job"])),
        )


def simulate(
    cluster: Instance,
    workload: Workload,
    config: SimConfig | None = None,
    *,
    progress: Callable[[float, int, int], None] | None = None,
    log_path: str | None = None,
    decisions_path: str | None = None,
    **options: Any,
) -> SimResult:
    """Run one configuration (``config``, or :class:`SimConfig` keyword options) of the
    trace ``workload`` on ``cluster`` (a ``placement-instance/1``; its jobs are ignored).
    With ``knowledge="estimated"`` and a ``log_path``, every per-worker iteration the
    scheduler observed is written there (``job, worker, server, iteration, duration, time_s``:
    what ``placement estimate --logs`` reads).  With a ``decisions_path``, every decision is
    written there (:class:`~placement.simulation.observations.DecisionLog`).

    >>> from placement.instances import load_bundled
    >>> from placement.simulation.workload import TraceJob, Workload
    >>> w = Workload((TraceJob("a", 0.0, 2, 1000, 100.0, 50.0),), "one job", {})
    >>> r = simulate(load_bundled("tiny"), w, method="greedy", dynamics="none")
    >>> r.summary["jobs_finished"]
    1
    """
    cfg = config if config is not None else SimConfig(**options)
    if config is not None and options:
        cfg = dataclasses.replace(config, **options)
    return _Simulation(cluster.replace(jobs=()), workload, cfg, progress, log_path, decisions_path).run()
