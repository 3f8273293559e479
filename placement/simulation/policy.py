"""The scheduler's policy in a simulation: the instance a decision solves and placing the
queue (admission in the queue policy's order, preemption, the patience rule).  Re-planning the
running jobs is :mod:`placement.simulation.replanning`'s.  A mixin of the engine's
``_Simulation``: it reads the simulation's state (declared below) and starts jobs through the
engine."""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from placement.formats.instance import job_to_dict
from placement.model.records import Instance, Slowdown, Solution
from placement.simulation.belief import Belief
from placement.simulation.config import SimConfig, SimulationError
from placement.simulation.decisions import Floors, believed_job, decision_instance, waits_until
from placement.simulation.dynamics import Dynamics
from placement.simulation.gpu_book import GpuBook
from placement.simulation.hindsight import Lookahead
from placement.simulation.observations import DecisionLog
from placement.simulation.queues import Candidate, QueuePolicy
from placement.simulation.running import (
    Running,
    advance,
    isolated_s,
    problem_job,
)
from placement.simulation.workload import TraceJob
from placement.solving.driver import solve

__all__ = ["Policy"]


class Policy:
    """Decisions on the queue (mixed into the engine, which owns the state)."""

    cfg: SimConfig
    cluster: Instance
    truth: Dynamics
    belief: Belief
    server_ids: list[str]
    now: float
    S: np.ndarray
    free: np.ndarray
    capacity: np.ndarray
    queue: list[TraceJob]
    running: dict[str, Running]
    suspended: dict[str, Running]
    policy: QueuePolicy
    queue_wake: float
    round_s: float | None
    touched: bool
    resettled: tuple[str, ...] | None
    total_gpus: int
    on_server: list[set[str]]
    template: Instance | None
    stale: bool
    forecasts: dict[float, Mapping[str, Slowdown]]
    changes: Lookahead
    paths: dict[float, Mapping[str, Slowdown]]
    paths_at: float
    decision_walls: list[float]
    replan_walls: list[float]
    place_walls: list[float]
    migrations: int
    restart_gpu_s: float
    freed: bool
    last_event_replan: float
    replanning: bool
    moved_workers: deque[tuple[float, int]]
    replan_means: np.ndarray | None
    placed_since_replan: bool
    replans_by_bound: int
    replan_seen: int
    replan_pinned: int
    moves_repaid_alone: int
    held: list[dict[str, Any]]
    first_offer: dict[str, float]
    """When each waiting job was first offered a placement slower than its best (patience)."""
    wake: dict[str, float]
    """The earliest wake-up pushed for each waiting job."""
    held_room: dict[str, tuple[int, int]]
    """The free GPUs' shape (:meth:`_room`) when each waiting job was last held."""
    waited: set[str]
    """The jobs that waited at least once (patience)."""
    floors: Floors
    decisions: DecisionLog | None
    book: GpuBook

    def _running(
        self,
        tj: TraceJob,
        alloc: dict[int, int],
        shards: dict[int, int] | None = None,
        stages: Sequence[Sequence[int]] | None = None,
    ) -> Running:
        raise NotImplementedError

    def _start(self, r: Running) -> None:
        raise NotImplementedError

    def _wake_at(self, t: float) -> None:
        raise NotImplementedError

    def _preempt(self, r: Running) -> None:
        raise NotImplementedError

    def _refit(self) -> None:
        raise NotImplementedError

    def _schedule_completion(self, r: Running) -> None:
        raise NotImplementedError

    # --------------------------------------------------------- decisions
    def _weighed(self, jobs: Sequence[TraceJob]) -> list[TraceJob]:
        """``jobs`` as a placement decision weighs them (:attr:`SimConfig.decision_weight`)."""
        if self.cfg.decision_weight == "trace":
            return list(jobs)
        out = []
        for j in jobs:
            was = self.running.get(j.id) or self.suspended.get(j.id)
            if was is not None and j.id in self.running:
                advance(was, self.now)
            left = max(1.0, j.iterations - (was.progress if was is not None else 0.0))
            out.append(dataclasses.replace(j, weight=j.weight * j.workers * 1000.0 / (left * j.compute_ms)))
        return out

    def _decision_instance(
        self,
        jobs: Sequence[TraceJob],
        free: np.ndarray,
        remaining: Mapping[str, int] | None = None,
        objective: str | None = None,
    ) -> Instance:
        """The instance a decision solves: ``jobs`` on the believed servers with ``free`` GPUs;
        ``remaining`` iterations per job instead of its whole ones, and ``objective`` instead
        of the configuration's (a priced re-plan)."""
        if self.stale:
            self._refit()
        left = remaining or {}
        believed = [
            believed_job(problem_job(j, iterations=left.get(j.id, j.iterations), weight=j.weight), self.belief)
            for j in jobs
        ]
        inst = decision_instance(
            self.cluster,
            self.belief,
            free,
            believed,
            name=f"{self.cluster.name}@{self.now:.0f}s",
            objective=objective or self.cfg.objective,
            template=self.template,
            held=self.book.held(excluding=[j.id for j in jobs]) if self.book and self.belief.factors else None,
        )
        if self.template is None:
            self.template = inst
        return inst

    def _forecast(self, horizon_s: float) -> Mapping[str, Slowdown]:
        """Every server's forecast over ``horizon_s`` from the hidden state now (clairvoyant
        knowledge), cached until the state changes, or its realised path over the horizon
        (hindsight knowledge, :meth:`.hindsight.Lookahead.path`), cached for the instant;
        read-only, shared by the jobs it serves."""
        if self.cfg.knowledge == "hindsight":
            if self.paths_at != self.now:
                self.paths_at, self.paths = self.now, {}
            p = self.paths.get(horizon_s)
            if p is None:
                p = self.paths[horizon_s] = MappingProxyType(
                    self.changes.path(self.S, self.now, horizon_s, self.server_ids)
                )
            return p
        f = self.forecasts.get(horizon_s)
        if f is None:
            out = {}
            for sp, sid in enumerate(self.server_ids):
                values, probs = self.truth.forecast(sp, float(self.S[sp]), horizon_s, self.now)
                out[sid] = Slowdown(values, probs)
            f = self.forecasts[horizon_s] = MappingProxyType(out)
        return f

    def _candidates(self, running: bool) -> list[Candidate]:
        """What the queue policy orders: the queued jobs (in arrival order, preempted ones
        where they re-entered), after the running ones when ``running``."""
        now = self.now
        out = []
        if running:
            for r in self.running.values():
                done = r.progress + max(0.0, now - max(r.t_last, r.paused_until)) * 1000.0 / r.T
                pausing = max(0.0, r.paused_until - now)
                left_s = max(0.0, r.tj.iterations - done) * r.T / 1000.0 + pausing
                served = r.ran_s + now - r.resumed - (r.pause_s - pausing)
                out.append(Candidate(r.tj, True, served, left_s, now))
        for j in self.queue:
            old = self.suspended.get(j.id)
            if old is None:
                out.append(Candidate(j, False, 0.0, isolated_s(j), j.submit_s))
            else:
                # it would pay its restart on resuming, as a running job pays what is left of its own
                left_s = max(0.0, j.iterations - old.progress) * old.T / 1000.0 + self.cfg.restart_s
                out.append(Candidate(j, False, old.ran_s - old.pause_s, left_s, old.stopped))
        return out

    def _order(self) -> list[TraceJob]:
        """The queued jobs in the queue policy's order."""
        return [c.job for c in self.policy.order(self.now, self._candidates(running=False))]

    def _admit(self) -> tuple[list[TraceJob], list[Running]]:
        """A preemptive policy's admission: every job, running or queued, in the policy's order,
        each if its gang fits the GPUs the jobs before it left (in number).  Returns the queued
        jobs admitted, in order (with ``keep_previous``, less those that resumed on their
        previous GPUs, free now), and the running jobs not admitted, lowest priority first:
        the candidates for preemption (:meth:`_decide_offer` preempts those whose GPUs an
        admitted job's placement takes, and no other)."""
        avail = self.total_gpus
        keep: set[str] = set()
        admit: list[TraceJob] = []
        order = self.policy.order(self.now, self._candidates(running=True))
        for c in order:
            if c.job.workers <= avail:
                avail -= c.job.workers
                if c.running:
                    keep.add(c.job.id)
                else:
                    admit.append(c.job)
        victims = [self.running[c.job.id] for c in reversed(order) if c.running and c.job.id not in keep]
        if not self.policy.keep_previous:
            return admit, victims
        rest = []
        for tj in admit:
            old = self.suspended.get(tj.id)
            if old is not None and all(self.free[sp] >= k for sp, k in old.alloc.items()):
                self._start(self._running(tj, dict(old.alloc), dict(old.shards), old.stages))
                self.queue = [j for j in self.queue if j.id != tj.id]
            else:
                rest.append(tj)
        return rest, victims

    def _decide_queue(self) -> None:
        """Offer the queue to a decision and start what it places.  A preemptive policy admits
        (:meth:`_admit`) and offers the jobs it admitted on the free GPUs first, then on the GPUs
        of the running jobs it did not admit, which are preempted only where a placement takes
        their GPUs; a strict one starts jobs in its order until one cannot start.  Jobs the
        patience rule holds back are not offered again in this call: a second decision may give
        the GPUs they leave to the jobs behind them."""
        held: set[str] = set()
        if self.policy.preemptive:
            admitted, victims = self._admit()
            for pool in ([], victims):
                while True:  # again while a decision filled its offer and more were admitted
                    queued = {j.id for j in self.queue}
                    waiting = [j for j in admitted if j.id in queued]
                    live = [r for r in pool if r.tj.id in self.running]
                    if not waiting or (pool and not live):
                        break
                    _, started, offered = self._decide_offer(held, waiting, live)
                    if not started or offered < self.cfg.max_offer or offered == len(waiting):
                        break
        elif self.policy.strict:
            while self._decide_offer(held)[1]:
                pass
        else:
            for _ in range(2):
                new = self._decide_offer(held)[0]
                held |= new
                if not new:
                    break
        room = self._room()  # what they saw, once this call's jobs started
        for jid in held:
            self.held_room[jid] = room
        if self.policy.preemptive or self.policy.timed:  # the next time the order may change between events
            t = self.policy.wake_s(self.now, self._candidates(running=self.policy.preemptive))
            if math.isfinite(t) and not self.now < self.queue_wake <= t:
                self.queue_wake = t
                self._wake_at(t)

    def _decide_offer(
        self, skip: set[str], admitted: list[TraceJob] | None = None, victims: Sequence[Running] = ()
    ) -> tuple[set[str], int, int]:
        """One decision on the queued jobs (but ``skip``; only ``admitted`` if given) that fit
        the free GPUs in number (a strict policy: the first of them only, and none past one
        that does not fit), counting as free the GPUs of ``victims`` (running jobs a preemptive
        policy did not admit, lowest priority first): those whose GPUs the placement takes are
        preempted.  Returns the jobs it placed that wait instead (:meth:`_waits`), how many it
        started and how many it offered."""
        free = self.free.copy()
        for r in victims:
            for sp, k in r.alloc.items():
                free[sp] += k
        left = int(free.sum())
        if not self.queue or left == 0:
            return set(), 0, 0
        offer: list[TraceJob] = []
        room = self._room()
        strict = self.policy.strict
        for j in self._order() if admitted is None else admitted:
            if j.workers <= left and j.id not in skip and self._worth_offering(j, room):
                offer.append(j)
                left -= j.workers
                if len(offer) >= (1 if strict else self.cfg.max_offer) or left == 0:
                    break
            elif strict:
                break
        if not offer:
            return set(), 0, 0
        inst = self._decision_instance(self._weighed(offer), free)
        sol = self._place(inst)
        if not sol.assignment:
            self._log_place(inst, free, sol, set(), set())
            return set(), 0, len(offer)
        placed = set(sol.assignment)
        held: set[str] = set()
        pos = inst.server_pos
        if victims:  # the GPUs the placement takes beyond the free ones come from victims
            short = -self.free.astype(float)
            for jid in placed:
                for sid, k in sol.assignment[jid].items():
                    short[pos[sid]] += k
            for r in victims:
                if any(short[sp] > 0 for sp in r.alloc):
                    for sp, k in r.alloc.items():
                        short[sp] -= k
                    self._preempt(r)
        for j in offer:
            if j.id in placed:
                shards = {pos[s]: int(k) for s, k in sol.shards.get(j.id, {}).items()}
                stages = [[pos[s] for s in row] for row in sol.stages.get(j.id, ())]
                r = self._running(j, {pos[s]: int(k) for s, k in sol.assignment[j.id].items()}, shards, stages)
                r.gpus = {pos[s]: tuple(g) for s, g in sol.gpus.get(j.id, {}).items()}
                if self._waits(r):
                    held.add(j.id)
                else:
                    self._start(r)
        started = placed - held
        self.queue = [j for j in self.queue if j.id not in started]
        self._log_place(inst, free, sol, placed, held)
        return held, len(started), len(offer)

    def _place(self, inst: Instance) -> Solution:
        """The configured method's placement decision on ``inst`` (its time recorded)."""
        w0 = time.perf_counter()
        sol = solve(
            inst,
            self.cfg.method,
            time_limit_s=self.cfg.decision_time_limit_s,
            seed=self.cfg.seed,
            prove=self.cfg.prove,
            clock=self.cfg.decision_clock,
        )
        self.decision_walls.append(time.perf_counter() - w0)
        self.place_walls.append(self.decision_walls[-1])
        if sol.status.value == "error":
            raise SimulationError(f"at t={self.now:g} s, {self.cfg.method} failed: {sol.stats.get('message')}")
        return sol

    def _log_place(self, inst: Instance, free: np.ndarray, sol: Solution, placed: set[str], held: set[str]) -> None:
        """The decision log's record of a placement decision (the jobs offered, as a caller
        would post them, the free GPUs, what was placed and which of those wait)."""
        if self.decisions is None:
            return
        self.decisions.write(
            {
                "kind": "place",
                "t": self.now,
                "jobs": [job_to_dict(dataclasses.replace(j, slowdown={})) for j in inst.jobs],
                "free": {sid: int(k) for sid, k in zip(self.server_ids, free) if k},
                "placed": {j: dict(sol.assignment[j]) for j in sorted(placed)},
                "shards": {j: dict(sol.shards[j]) for j in sorted(placed) if j in sol.shards},
                "stages": {j: [list(r) for r in sol.stages[j]] for j in sorted(placed) if j in sol.stages},
                "waits": sorted(held),
                "running": len(self.running),
            }
        )

    def _room(self) -> tuple[int, int]:
        """The free GPUs' shape a waiting job hopes to see grow: the most free GPUs of a
        server, and how many servers are wholly free."""
        return int(self.free.max()), int((self.free == self.capacity).sum())

    def _worth_offering(self, tj: TraceJob, room: tuple[int, int]) -> bool:
        """A waiting job is offered again once its patience is due, or once the free GPUs'
        shape grew since it was held (:meth:`_room`); until then, no server it could not have
        had when it was held has room for it, and offering it again would mostly cost time."""
        was = self.held_room.get(tj.id)
        if was is None or self.wake[tj.id] <= self.now:
            return True
        return room[0] > was[0] or room[1] > was[1]

    def _waits(self, r: Running) -> bool:
        """The patience rule (:attr:`SimConfig.wait_factor`, ski rental): whether ``r``, placed
        but not started, waits for better GPUs.  It may while jobs run (they will free GPUs)
        and its placement is slower than its straggler-free best on the idle cluster, until
        ``patience`` times the seconds that would add to its run have passed since it was
        first offered such a placement; a wake-up then makes it take what is free."""
        tj = r.tj
        if self.cfg.wait_factor <= 0 or not self.running or self.policy.preemptive:
            self._done_waiting(tj.id)
            return False
        first = self.first_offer.setdefault(tj.id, self.now)
        until = waits_until(first, self.cfg.wait_factor, tj.iterations, r.ideal_ms, self.floors(tj))
        if until is None or self.now >= until:
            self._done_waiting(tj.id)
            return False
        pending = self.wake.get(tj.id, -math.inf)
        if not self.now < pending <= until:  # no wake-up due by ``until``: push one
            self.wake[tj.id] = until
            self._wake_at(until)
        self.waited.add(tj.id)
        return True

    def _done_waiting(self, jid: str) -> None:
        for d in (self.first_offer, self.wake, self.held_room):
            d.pop(jid, None)
