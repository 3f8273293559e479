"""Re-planning the running jobs in a simulation: on the period, on a ``freed`` or ``blocked``
event, within the move budget, priced or not.  A mixin over :class:`Policy` (which places the
queue) for the engine's ``_Simulation``: it reads the simulation's state declared there."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from placement.evaluation import evaluate
from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance, Solution
from placement.problem.reuse import share_derived
from placement.problem.rules import spread_factor
from placement.simulation.config import SimulationError
from placement.simulation.policy import Policy
from placement.simulation.running import (
    Running,
    advance,
    held_row,
    iteration_ms,
    placed_on,
    set_crossing,
    set_stages,
    shards_on,
)
from placement.simulation.workload import TraceJob
from placement.solving.driver import solve

__all__ = ["Replanning", "amortized_prices", "Mover", "Priced", "price_movers", "search_moves"]


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


@dataclasses.dataclass(frozen=True)
class Mover:
    """A running job a re-plan may move: where it runs (server id -> workers, shards) and a
    hybrid job's stage matrix (server ids)."""

    id: str
    alloc: Mapping[str, int]
    shards: Mapping[str, int] = dataclasses.field(default_factory=dict)
    stages: tuple[tuple[str, ...], ...] = ()


@dataclasses.dataclass
class Priced:
    """The priced re-plan's search (:func:`price_movers`): its instance, the jobs it may
    move and their prices; ``settled`` when no job could repay a move (staying is optimal)."""

    instance: Instance
    movers: list[Mover]
    restart: dict[str, float]
    was_ms: dict[str, float]
    pinned: int
    settled: bool


def price_movers(
    inst: Instance,
    movers: Sequence[Mover],
    left: Mapping[str, int],
    free_now: Sequence[int] | np.ndarray,
    *,
    restart_s: float,
    margin: float,
    scope: str,
    offered: bool = False,
    template: Instance | None = None,
) -> Priced:
    """The ``amortized`` re-plan's search, one home for the simulator and ``placement serve``:
    ``inst`` holds the running jobs of ``movers`` (``left`` iterations to go) and any queued
    jobs ``offered`` on servers whose free GPUs count the movers' own.  Each job is priced
    (:func:`amortized_prices`); when none could repay a move and nothing is offered the re-plan
    is ``settled``.  Otherwise the jobs that cannot repay a move of their own (a positive
    price) keep their GPUs and leave the search (``scope="movers"``; ``holders`` keeps in those
    holding a fragment, on a server with GPUs free now, ``free_now``, or shared with a job
    that may move; ``all`` keeps every job in; with the queue ``offered`` every job stays in)."""
    restart, stay, was_ms = amortized_prices(
        inst,
        {m.id: m.alloc for m in movers},
        left,
        restart_s,
        margin,
        {m.id: m.shards for m in movers if m.shards},
        {m.id: m.stages for m in movers if m.stages},
    )
    pinned = [m for m in movers if m.id in stay]  # can never repay a move of their own
    if len(pinned) == len(movers) and not offered:
        return Priced(inst, [], {}, was_ms, len(pinned), True)
    pinned = [m for m in pinned if restart[m.id] > 0]  # a free move may make room
    pos = inst.server_pos
    if pinned and scope == "holders":
        # those holding a fragment stay in the search: on a server with free GPUs or shared
        # with a job that may move, stepping aside may free a whole server
        keep = {m.id for m in pinned}
        near = {s for m in movers if m.id not in keep for s in m.alloc}
        pinned = [m for m in pinned if not any(free_now[pos[s]] > 0 or s in near for s in m.alloc)]
    n_pinned = 0
    if pinned and not offered and scope != "all":
        # an incremental re-plan: the jobs that cannot repay a move keep their GPUs and leave
        # the search, which then moves only jobs that may pay for themselves (with the queue
        # offered, they stay in: making room for it is the point)
        n_pinned = len(pinned)
        keep = {m.id for m in pinned}
        used = {s.id: s.used_gpus for s in inst.servers}
        for m in pinned:
            for sid, k in m.alloc.items():
                used[sid] += k
        movers = [m for m in movers if m.id not in keep]
        # the movers' jobs as built, on the GPUs the pinned jobs leave
        inst = inst.replace(
            servers=tuple(dataclasses.replace(s, used_gpus=used[s.id]) for s in inst.servers),
            jobs=tuple(j for j in inst.jobs if j.id not in keep),
        )
        share_derived(inst, template or inst)
    restart = {m.id: restart[m.id] for m in movers if restart[m.id] > 0}
    return Priced(inst, list(movers), restart, was_ms, n_pinned, False)


def search_moves(
    inst: Instance,
    movers: Sequence[Mover],
    restart: Mapping[str, float],
    *,
    method: str,
    time_limit_s: float,
    seed: int,
    prove: bool,
    clock: str,
    budget: int | None = None,
) -> tuple[Solution, list[str]] | None:
    """Search ``inst`` for moves of ``movers`` (``previous`` = where they run, a move paying
    its ``restart`` price, at most ``budget`` workers moved); the solution and the jobs that
    move, or ``None`` when some running job would lose its place (nothing changes then).  A
    hybrid job whose servers stay keeps its mapping (a new one would restart it)."""
    sol = solve(
        inst,
        method,
        time_limit_s=time_limit_s,
        seed=seed,
        previous={m.id: dict(m.alloc) for m in movers},
        previous_shards={m.id: dict(m.shards) for m in movers if m.shards},
        max_moves=budget,
        restart_cost=dict(restart) or None,
        prove=prove,
        clock=clock,
    )
    if not sol.status.has_placement or any(m.id not in sol.assignment for m in movers):
        return None
    moved = [
        m.id
        for m in movers
        if sol.assignment.get(m.id)
        and (dict(sol.assignment[m.id]) != dict(m.alloc) or dict(sol.shards.get(m.id, {})) != dict(m.shards))
    ]
    return sol, moved


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
        movers = [
            Mover(
                r.tj.id,
                {ids[sp]: k for sp, k in sorted(r.alloc.items())},
                {ids[sp]: k for sp, k in sorted(r.shards.items())},
                tuple(tuple(ids[sp] for sp in row) for row in r.stages),
            )
            for r in runs
        ]
        margin = self.cfg.margin(queued=bool(self.queue))
        if price == "amortized":  # per-iteration times; a move's restart spread over what is left
            inst = self._decision_instance([r.tj for r in runs] + offer, free, left)
            w0 = time.perf_counter()
            priced = price_movers(
                inst,
                movers,
                left,
                self.free,
                restart_s=self.cfg.restart_s,
                margin=margin,
                scope=self.cfg.replan_scope,
                offered=bool(offer),
                template=self.template,
            )
            self.replan_seen += len(runs)
            if priced.settled:
                # no job could repay its move even with every GPU its own: staying is optimal
                self.decision_walls.append(time.perf_counter() - w0)
                self.replan_walls.append(self.decision_walls[-1])
                self.replans_by_bound += 1
                self.replan_pinned += priced.pinned
                self._log_replan(left, margin, [], settled=True)
                return
            self.replan_pinned += priced.pinned
            inst, movers, restart, was_ms = priced.instance, priced.movers, priced.restart, priced.was_ms
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
        w0 = time.perf_counter()
        found = search_moves(
            inst,
            movers,
            restart,
            method=self.cfg.method,
            time_limit_s=self.cfg.decision_time_limit_s,
            seed=self.cfg.seed,
            prove=self.cfg.prove,
            clock=self.cfg.decision_clock,
            budget=budget,
        )
        self.decision_walls.append(time.perf_counter() - w0)
        self.replan_walls.append(self.decision_walls[-1])
        if found is None:
            self._log_replan(left, margin, [])
            return  # every running job keeps a place, or nothing changes
        sol, moved_ids = found
        self._log_replan(left, margin, moved_ids, sol)
        moved = [self.running[jid] for jid in moved_ids]
        for r in moved:
            # believed per-iteration saving against the price: did this move repay itself alone?
            jid = r.tj.id
            if jid in was_ms and jid in sol.jobs:
                saving = r.tj.weight * (was_ms[jid] - sol.jobs[jid].expected_iteration_ms)
                self.moves_repaid_alone += saving >= restart.get(jid, 0.0)
        moved_workers = self._move(moved, sol, inst.server_pos)
        if moved_workers:
            self.moved_workers.append((self.now, moved_workers))
            self.placed_since_replan = True
        if (self.free < 0).any():
            raise SimulationError(
                f"at t={self.now:g} s, re-planning over-commits servers {np.flatnonzero(self.free < 0)}"
            )

    def _resettle(self) -> None:
        """A round that places every job again (``resettle``: the non-sticky rounds of PAL's and
        Blox's simulators).  The running and queued jobs, in the queue policy's order, the prefix
        whose gangs fit the cluster's GPUs in number (a strict policy stops at the first that does
        not, others skip it; at most ``max_offer`` queued ones), go to one decision on every GPU
        they would leave.  A running job placed on the GPUs it holds goes on untouched, one
        placed elsewhere moves (paying ``restart_s``), one not placed is preempted (it pays its
        restart when it resumes); a queued job placed starts.  A round after which nothing but
        time passed (no arrival, completion, estimate or change of the truth) and which would
        offer the same jobs in the same order is skipped when the trace's weights are the
        decision's: its instance would be the same."""
        free = self.free.copy()
        for r in self.running.values():
            for sp, k in r.alloc.items():
                free[sp] += k
        room, queued = int(free.sum()), 0
        offer: list[TraceJob] = []
        for c in self.policy.order(self.now, self._candidates(running=True)):
            if c.job.workers <= room and (c.running or queued < self.cfg.max_offer):
                offer.append(c.job)
                room -= c.job.workers
                queued += not c.running
            elif self.policy.strict:
                break
        key = tuple(j.id for j in offer)
        if not self.touched and key == self.resettled and self.cfg.decision_weight == "trace":
            return  # nothing but time passed since the last round: it would decide the same
        self.touched, self.resettled = False, key
        for r in [r for r in self.running.values() if r.tj.id not in key]:
            self._preempt(r)
        if not offer:
            return
        free = self.free.copy()
        for r in self.running.values():
            for sp, k in r.alloc.items():
                free[sp] += k
        inst = self._decision_instance(self._weighed(offer), free)
        sol = self._place(inst)
        pos = inst.server_pos
        moved: list[Running] = []
        for r in [self.running[j.id] for j in offer if j.id in self.running]:
            got = sol.assignment.get(r.tj.id)
            if not got:
                self._preempt(r)
                continue
            alloc = {pos[s]: int(k) for s, k in got.items()}
            shards = {pos[s]: int(k) for s, k in sol.shards.get(r.tj.id, {}).items()}
            named = {pos[s]: tuple(sorted(g)) for s, g in sol.gpus.get(r.tj.id, {}).items()}
            held = self.book.jobs.get(r.tj.id, {}) if self.book else {}
            same_gpus = all(named.get(sp, ids) == tuple(sorted(ids)) for sp, ids in held.items())
            if alloc != r.alloc or shards != r.shards or not same_gpus:
                moved.append(r)
        if moved:
            self._move(moved, sol, pos)
        for j in offer:
            if j.id in self.running or not sol.assignment.get(j.id):
                continue
            shards = {pos[s]: int(k) for s, k in sol.shards.get(j.id, {}).items()}
            stages = [[pos[s] for s in row] for row in sol.stages.get(j.id, ())]
            r = self._running(j, {pos[s]: int(k) for s, k in sol.assignment[j.id].items()}, shards, stages)
            r.gpus = {pos[s]: tuple(g) for s, g in sol.gpus.get(j.id, {}).items()}
            self._start(r)
        self.queue = [j for j in self.queue if j.id not in self.running]
        self._log_place(inst, free, sol, {j.id for j in offer if sol.assignment.get(j.id)}, set())
        if (self.free < 0).any():
            raise SimulationError(f"at t={self.now:g} s, a round over-commits servers {np.flatnonzero(self.free < 0)}")

    def _move(self, moved: Sequence[Running], sol: Solution, pos: Mapping[str, int]) -> int:
        """Move the running jobs ``moved`` to their placements in ``sol`` (each pays
        ``restart_s``); returns the workers that changed servers."""

        def shards_of(jid: str) -> dict[int, int]:
            return {pos[s]: int(k) for s, k in sol.shards.get(jid, {}).items()}

        def stages_of(jid: str) -> tuple[tuple[int, ...], ...]:
            return tuple(tuple(pos[s] for s in row) for row in sol.stages.get(jid, ()))

        for r in moved:
            advance(r, self.now)
            for sp, k in r.alloc.items():
                self.free[sp] += k
            self.book.release(r.tj.id)
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
            r.sps, r.a, r.comm = placed_on(self.cluster, r.tj, alloc)
            r.ps_sps, r.ps_c = shards_on(self.cluster, r.tj, alloc, r.shards)
            set_crossing(self.cluster, r)  # the domains it crosses now
            for sp in r.servers():
                self.on_server[sp].add(r.tj.id)
            r.penalty = spread_factor(self.cluster, len(set(alloc) | set(r.shards)))
            r.gpus = {pos[s]: tuple(g) for s, g in sol.gpus.get(r.tj.id, {}).items()}
            if self.book:  # its new GPUs on servers with per-GPU factors: the truth's f*
                r.a = self.book.scale(r.sps, r.a, self.book.take(r.tj.id, r.tj.app_class, alloc, r.gpus))
            set_stages(self.cluster, r, stages_of(r.tj.id))
            r.T = iteration_ms(r, self.S)
            r.paused_until = self.now + self.cfg.restart_s
            r.pause_s += self.cfg.restart_s
            self.migrations += 1
            self.restart_gpu_s += r.tj.workers * self.cfg.restart_s
            self._schedule_completion(r)
        return moved_workers

    def _log_replan(
        self,
        left: Mapping[str, int],
        margin: float,
        moved: Sequence[str],
        sol: Solution | None = None,
        settled: bool = False,
    ) -> None:
        """The decision log's record of a re-plan (the running jobs' iterations left, the
        margin in force, the moves)."""
        if self.decisions is None:
            return
        moves = {j: dict(sol.assignment[j]) for j in moved} if sol is not None else {}
        self.decisions.write(
            {
                "kind": "replan",
                "t": self.now,
                "left": dict(left),
                "queued": len(self.queue),
                "margin": margin,
                "settled": settled,
                "moves": moves,
                "shards": {j: dict(sol.shards[j]) for j in moved if sol is not None and j in sol.shards},
                "stages": {j: [list(r) for r in sol.stages[j]] for j in moved if sol is not None and j in sol.stages},
            }
        )

    def _may_replan_on_event(self) -> bool:
        return not self.replanning and self.now - self.last_event_replan >= self.cfg.replan_min_gap_s
