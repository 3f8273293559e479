"""Re-planning the running jobs in a simulation: on the period, on a ``freed`` or ``blocked``
event, within the move budget, priced or not.  A mixin over :class:`Policy` (which places the
queue) for the engine's ``_Simulation``: it reads the simulation's state declared there."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from placement.evaluation import evaluate
from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance
from placement.problem.reuse import share_derived
from placement.simulation.config import SimulationError
from placement.simulation.policy import Policy
from placement.simulation.running import (
    Running,
    advance,
    held_row,
    iteration_ms,
    placed_on,
    set_stages,
    shards_on,
)
from placement.simulation.workload import TraceJob
from placement.solving.driver import solve

__all__ = ["Replanning", "amortized_prices"]


def amortized_prices(
    inst: Instance,
    running: Mapping[str, Mapping[str, int]],
    left: Mapping[str, int],
    restart_s: float,
    margin: float,
    shards: Mapping[str, Mapping[str, int]] | None = None,
    stages: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float], set[str], dict[str, float]]:
    """The priced re-plan's rule (DESIGN.md, "Priced re-planning"), one home for the simulator
    and ``placement serve``: each running job of ``inst`` (placed as ``running``, ``left``
    iterations to go) pays, if it moves, its restart spread over what it has left,
    ``w 1000 restart_s / R`` ms, plus ``margin`` of its expected iteration time now (a move must
    also beat what the estimates cannot tell apart).  Returns those prices, the jobs that can
    never repay a move of their own (their expected time now is within their price of their
    lower bound with every GPU their own), and each job's expected iteration time now."""
    now_ms = evaluate(inst, running, shards or {}, stages or {})
    restart: dict[str, float] = {}
    stay: set[str] = set()
    for jid in running:
        job = inst.job_by_id[jid]
        restart[jid] = job.weight * 1000.0 * restart_s / left[jid]
        rep = now_ms.jobs.get(jid)
        if rep is None:
            continue
        restart[jid] += job.weight * margin * rep.expected_iteration_ms
        if job.weight * (rep.expected_iteration_ms - job_lower_bound(inst, inst.job_pos[jid])) <= restart[jid]:
            stay.add(jid)
    return restart, stay, {j: rep.expected_iteration_ms for j, rep in now_ms.jobs.items()}


class Replanning(Policy):
    """Re-plans of the running jobs (mixed into the engine, which owns the state)."""

    def _decide(self) -> None:
        """Place what waits; then the re-plan a ``freed`` or ``blocked`` event asks for."""
        self._decide_queue()
        events = self.cfg.replan_events
        if not events or not self.cfg.replans or not self._may_replan_on_event():
            return
        freed, self.freed = self.freed, False
        if "freed" in events and freed:
            self.last_event_replan = self.now
            self._replan()
        elif "blocked" in events and self.queue and any(j.workers <= int(self.free.sum()) for j in self.queue):
            self.last_event_replan = self.now
            self._replan(with_queue=True)

    def _budget(self) -> int | None:
        """Workers the re-plan may move: ``max_moves`` within what the hourly budget leaves."""
        cap = self.cfg.max_moves
        if self.cfg.move_budget_per_hour is None:
            return cap
        while self.moved_workers and self.moved_workers[0][0] <= self.now - 3600.0:
            self.moved_workers.popleft()
        left = self.cfg.move_budget_per_hour - sum(k for _, k in self.moved_workers)
        return left if cap is None else min(cap, left)

    def _replan(self, with_queue: bool = False) -> None:
        """Re-plan the running jobs that may move (and, ``with_queue``, offer the queued jobs
        that fit the free GPUs in number), then place what waits on what was freed (at once,
        unless decisions happen only at rounds)."""
        if self.replanning:
            return
        self.replanning = True
        try:
            self.placed_since_replan = False
            self._replan_once(with_queue)
            self.replan_means = self.belief.means()
            if self.queue and self.round_s is None:
                self._decide_queue()
        finally:
            self.replanning = False

    def _replan_once(self, with_queue: bool) -> None:
        if not self.running:
            return
        # a job still restarting after a move stays where it is (moving it again would only
        # restart it again: with a restart longer than the period, it would never run)
        runs = [r for r in self.running.values() if r.paused_until <= self.now]
        budget = self._budget()
        if not runs or (budget is not None and budget <= 0):
            return
        # with the queue: the queued jobs that fit in number, at a weight so small that placing
        # them counts only before the running jobs' times (best_effort places the most weight
        # first) and never at a running job's expense; the re-plan keeps only the running
        # jobs' moves, and the decision that follows places the queue on what they freed
        offer: list[TraceJob] = []
        if with_queue:
            # below 1 / max_offer of the lightest running job: no set of offered queued jobs
            # outweighs one running job
            queue_weight = (
                0.5 * min(r.tj.weight for r in runs) / (self.cfg.max_offer * max(j.weight for j in self.queue))
            )
            room = int(self.free.sum())
            for j in self._order():
                if j.workers <= room and len(offer) < self.cfg.max_offer:
                    offer.append(dataclasses.replace(j, weight=j.weight * queue_weight))
                    room -= j.workers
        free = self.free.copy()
        for r in runs:
            for sp, k in r.alloc.items():
                free[sp] += k
        price = self.cfg.replan_price
        was_ms: dict[str, float] = {}
        for r in runs:
            advance(r, self.now)
        left = {r.tj.id: max(1, math.ceil(r.tj.iterations - r.progress)) for r in runs}
        ids = self.server_ids
        if price == "amortized":  # per-iteration times; a move's restart spread over what is left
            inst = self._decision_instance([r.tj for r in runs] + offer, free, left)
            w0 = time.perf_counter()
            restart, stay, was_ms = amortized_prices(
                inst,
                {r.tj.id: {ids[sp]: k for sp, k in r.alloc.items()} for r in runs},
                left,
                self.cfg.restart_s,
                self.cfg.margin(queued=bool(self.queue)),
                {r.tj.id: {ids[sp]: k for sp, k in r.shards.items()} for r in runs if r.shards},
                {r.tj.id: tuple(tuple(ids[sp] for sp in row) for row in r.stages) for r in runs if r.stages},
            )
            pinned: list[Running] = [r for r in runs if r.tj.id in stay]  # can never repay a move of their own
            self.replan_seen += len(runs)
            if len(pinned) == len(runs) and not offer:
                # no job could repay its move even with every GPU its own: staying is optimal
                self.decision_walls.append(time.perf_counter() - w0)
                self.replan_walls.append(self.decision_walls[-1])
                self.replans_by_bound += 1
                self.replan_pinned += len(pinned)
                return
            pinned = [r for r in pinned if restart[r.tj.id] > 0]  # a free move may make room
            if pinned and self.cfg.replan_scope == "holders":
                # those holding a fragment stay in the search: on a server with free GPUs or
                # shared with a job that may move, stepping aside may free a whole server
                keep = {r.tj.id for r in pinned}
                near = {sp for r in runs if r.tj.id not in keep for sp in r.alloc}
                pinned = [r for r in pinned if not any(self.free[sp] > 0 or sp in near for sp in r.alloc)]
            if pinned and not offer and self.cfg.replan_scope != "all":
                # an incremental re-plan: the jobs that cannot repay a move keep their GPUs
                # and leave the search, which then moves only jobs that may pay for themselves
                # (with the queue offered, they stay in: making room for it is the point)
                self.replan_pinned += len(pinned)
                keep = {r.tj.id for r in pinned}
                for r in pinned:
                    for sp, k in r.alloc.items():
                        free[sp] -= k
                runs = [r for r in runs if r.tj.id not in keep]
                # the movers' jobs as built above, on the GPUs the pinned jobs leave
                jobs = tuple(j for j in inst.jobs if j.id not in keep)
                inst = inst.replace(servers=self._believed_servers(free), jobs=jobs)
                share_derived(inst, self.template or inst)
            restart = {r.tj.id: restart[r.tj.id] for r in runs if restart[r.tj.id] > 0}
        elif price != "none":  # each job by the work it has left; a move pays its restart once
            # gpu_time: a job's remaining time and its restart count once per GPU it holds
            tjs = [
                dataclasses.replace(r.tj, weight=r.tj.weight * r.tj.workers) if price == "gpu_time" else r.tj
                for r in runs
            ]
            inst = self._decision_instance(tjs + offer, free, left, "weighted_expected_jct")
            restart = {t.id: t.weight * self.cfg.restart_s for t in tjs if self.cfg.restart_s > 0}
        else:
            inst = self._decision_instance([r.tj for r in runs] + offer, free)
            restart = {}
        previous = {r.tj.id: {self.server_ids[sp]: k for sp, k in r.alloc.items()} for r in runs}
        w0 = time.perf_counter()
        sol = solve(
            inst,
            self.cfg.method,
            time_limit_s=self.cfg.decision_time_limit_s,
            seed=self.cfg.seed,
            previous=previous,
            previous_shards={r.tj.id: {self.server_ids[sp]: k for sp, k in r.shards.items()} for r in runs if r.shards},
            max_moves=budget,
            restart_cost=restart or None,
            prove=self.cfg.prove,
            clock=self.cfg.decision_clock,
        )
        self.decision_walls.append(time.perf_counter() - w0)
        self.replan_walls.append(self.decision_walls[-1])
        if not sol.status.has_placement or any(r.tj.id not in sol.assignment for r in runs):
            return  # every running job keeps a place, or nothing changes
        pos = inst.server_pos

        def shards_of(jid: str) -> dict[int, int]:
            return {pos[s]: int(k) for s, k in sol.shards.get(jid, {}).items()}

        def stages_of(jid: str) -> tuple[tuple[int, ...], ...]:
            return tuple(tuple(pos[s] for s in row) for row in sol.stages.get(jid, ()))

        moved = [
            r
            for r in runs
            if sol.assignment.get(r.tj.id)
            and (
                {pos[s]: k for s, k in sol.assignment.get(r.tj.id, {}).items()} != r.alloc
                or shards_of(r.tj.id) != r.shards
            )  # a hybrid job whose servers stay keeps its mapping: a new one would restart it
        ]
        for r in moved:
            # believed per-iteration saving against the price: did this move repay itself alone?
            jid = r.tj.id
            if jid in was_ms and jid in sol.jobs:
                saving = r.tj.weight * (was_ms[jid] - sol.jobs[jid].expected_iteration_ms)
                self.moves_repaid_alone += saving >= restart.get(jid, 0.0)
            advance(r, self.now)
            for sp, k in r.alloc.items():
                self.free[sp] += k
            for sp in r.servers():
                self.on_server[sp].discard(r.tj.id)
        moved_workers = 0
        for r in moved:
            alloc = {pos[s]: int(k) for s, k in sol.assignment[r.tj.id].items()}
            for sp, k in alloc.items():
                self.free[sp] -= k
            n_moved = sum(max(0, k - alloc.get(sp, 0)) for sp, k in r.alloc.items())
            r.moves += n_moved
            moved_workers += n_moved
            self.held.append(held_row(r, self.now, self.server_ids))
            r.since = self.now
            r.alloc = alloc
            r.shards = shards_of(r.tj.id)
            for sp in r.servers():
                self.on_server[sp].add(r.tj.id)
            r.sps, r.a, r.comm = placed_on(self.cluster, r.tj, alloc)
            r.ps_sps, r.ps_c = shards_on(self.cluster, r.tj, alloc, r.shards)
            set_stages(self.cluster, r, stages_of(r.tj.id))
            r.T = iteration_ms(r, self.S)
            r.paused_until = self.now + self.cfg.restart_s
            r.pause_s += self.cfg.restart_s
            self.migrations += 1
            self.restart_gpu_s += r.tj.workers * self.cfg.restart_s
            self._schedule_completion(r)
        if moved_workers:
            self.moved_workers.append((self.now, moved_workers))
            self.placed_since_replan = True
        if (self.free < 0).any():
            raise SimulationError(
                f"at t={self.now:g} s, re-planning over-commits servers {np.flatnonzero(self.free < 0)}"
            )

    def _may_replan_on_event(self) -> bool:
        return not self.replanning and self.now - self.last_event_replan >= self.cfg.replan_min_gap_s
