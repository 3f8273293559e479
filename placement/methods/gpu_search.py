"""Local search at GPU granularity, on instances with per-GPU factors (DESIGN.md, "Per-GPU
factors"): ``auto``'s last step there.

The heuristics before it price a server at its fastest free GPU (a floor, which keeps bounds
valid), so they cannot tell a server with one fast GPU from one with four, and they keep jobs
on few servers even where a constant locality penalty makes a job's tenth server as cheap as
its second.  This search works on the GPUs themselves, each job's term priced exactly (the
evaluator's kernel at the largest factor of the GPUs it holds on each server, its communication
and locality penalty, its weight), by steps that lower the objective, most-at-stake job first:

- **re-place a job whole**: on one server (its fastest GPUs for the job's class), or on the
  fastest GPUs of the cluster for its class (ties: GPUs of servers whose count of equal GPUs is
  nearest the job's size), the better of these, its own GPUs counted as free;
- **move one worker** from a GPU that sets its pace on a server (the largest factor there) to a
  faster free GPU anywhere it may run;
- **swap** such a GPU with a faster one another job holds, when the two jobs' terms together fall;
- **exchange** all of a job's GPUs at or above a factor level for another job's faster ones (a
  job holding two slow GPUs gains nothing from losing one).

Parameter-server and hybrid-parallel jobs, and jobs whose GPUs were given, stay as they are.
CPU, memory, ``max_servers``, GPU type, ``allowed_servers`` and reachability are kept.  One
budget check per job and step (under the work clock, a run is repeatable).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from placement.model.records import Assignment, GpuChoice, Instance
from placement.problem.arrays import arrays_of
from placement.problem.congestion import congestion_of
from placement.problem.gpus import choose_gpus, factored_servers, improve_gpus, job_factors
from placement.problem.rules import comm_ms, meets_deadline, spread_factor, weight_factor
from placement.problem.state import State
from placement.problem.topology import cluster_of

__all__ = ["gpu_search", "CANDIDATES"]

CANDIDATES = 8
"""Faster GPUs tried per step (the fastest first)."""
EXCHANGE_LEVELS = 3
"""Factor levels of a job's slowest GPUs an exchange tries (the slowest first)."""

Held = dict[int, tuple[int, ...]]
"""A job's GPUs: server position -> indices."""


class _Search:
    def __init__(self, instance: Instance, assignment: Assignment, gpus: GpuChoice, keep: frozenset[str]) -> None:
        self.inst = instance
        self.idx = arrays_of(instance)
        self.cluster = cluster_of(instance)
        self.fac = factored_servers(instance)
        st = State.from_assignment(instance, assignment)
        self.cpus, self.mem = st.cpus.copy(), st.mem.copy()
        chosen = improve_gpus(instance, assignment, choose_gpus(instance, assignment, gpus), keep)
        self.held: dict[int, Held] = {}
        used: dict[int, set[int]] = {}
        for jid, a in assignment.items():
            jp = instance.job_pos.get(jid)
            if jp is None:
                continue
            mine: Held = {}
            for sid, k in a.items():
                if k <= 0:
                    continue
                sp = instance.server_pos[sid]
                ids = chosen.get(jid, {}).get(sid)
                if ids is None:  # a server without factors: any free indices (immaterial)
                    srv = instance.servers[sp]
                    ids = tuple(g for g in srv.free_gpu_ids if g not in used.get(sp, set()))[: int(k)]
                mine[sp] = tuple(sorted(ids))
                used.setdefault(sp, set()).update(mine[sp])
            self.held[jp] = mine
        self.owner: dict[int, dict[int, int]] = {sp: {} for sp in range(len(instance.servers))}
        for jp, mine in self.held.items():
            for sp, ids in mine.items():
                for g in ids:
                    self.owner[sp][g] = jp
        self.free_ids = [instance.servers[sp].free_gpu_ids for sp in range(len(instance.servers))]
        self.movable = [
            jp
            for jp in sorted(self.held)
            if not (instance.jobs[jp].is_ps or instance.jobs[jp].is_hybrid or instance.jobs[jp].id in keep)
        ]
        self.allowed = {jp: np.isfinite(self.idx.job_a(jp)) for jp in self.movable}
        self.cost_of = {jp: self.cost(jp, self.held[jp]) for jp in self.movable}

    # -------------------------------------------------------------- pricing
    def factor(self, jp: int, sp: int, g: int) -> float:
        return job_factors(self.inst, jp, sp)[g] if sp in self.fac else 1.0

    def cost(self, jp: int, held: Held) -> float:
        """Job ``jp``'s objective term on the GPUs ``held`` (the evaluator's model)."""
        job = self.inst.jobs[jp]
        sps = sorted(sp for sp, ids in held.items() if ids)
        if sum(len(held[sp]) for sp in sps) != job.workers:
            return math.inf
        if job.max_servers is not None and len(sps) > job.max_servers:
            return math.inf
        coef = [self.idx.base_a(jp, sp) * max(self.factor(jp, sp, g) for g in held[sp]) for sp in sps]
        if not all(math.isfinite(c) for c in coef):
            return math.inf
        e, _, _ = self.idx.expected_max([(jp, sps)], [coef])
        ids = [self.inst.servers[sp].id for sp in sps]
        bw = self.cluster.bandwidth(ids)
        if bw <= 0 and len(sps) > 1:
            return math.inf
        t = float(e[0]) + comm_ms(job, bw, len(sps), self.inst.terms_by_bandwidth) * congestion_of(self.inst).factor(
            ids
        )
        t *= spread_factor(self.inst, len(sps))
        if not meets_deadline(job, t):
            return math.inf
        return weight_factor(self.inst, job) * t

    # ------------------------------------------------------------- the state
    def free(self, sp: int, also: Held | None = None) -> list[int]:
        """Free GPUs of ``sp`` (and those of ``also`` there, counted as free)."""
        own = set((also or {}).get(sp, ()))
        return [g for g in self.free_ids[sp] if g not in self.owner[sp] or g in own]

    def fits(self, jp: int, old: Held, new: Held) -> bool:
        """CPU and memory for ``jp`` moving from ``old`` to ``new``."""
        job = self.inst.jobs[jp]
        for per, room in (("cpus_per_worker", self.cpus), ("memory_gb_per_worker", self.mem)):
            need = getattr(job, per)
            if not need:
                continue
            for sp in set(old) | set(new):
                delta = (len(new.get(sp, ())) - len(old.get(sp, ()))) * need
                if delta > room[sp] + 1e-9:
                    return False
        return True

    def apply(self, jp: int, new: Held, cost: float) -> None:
        old = self.held[jp]
        job = self.inst.jobs[jp]
        for sp, ids in old.items():
            for g in ids:
                del self.owner[sp][g]
            self.cpus[sp] += len(ids) * (job.cpus_per_worker or 0.0)
            self.mem[sp] += len(ids) * (job.memory_gb_per_worker or 0.0)
        for sp, ids in new.items():
            for g in ids:
                self.owner[sp][g] = jp
            self.cpus[sp] -= len(ids) * (job.cpus_per_worker or 0.0)
            self.mem[sp] -= len(ids) * (job.memory_gb_per_worker or 0.0)
        self.held[jp] = {sp: tuple(sorted(ids)) for sp, ids in new.items() if ids}
        self.cost_of[jp] = cost

    # ----------------------------------------------------------------- steps
    def whole(self, jp: int) -> bool:
        """Re-place ``jp`` whole, its own GPUs counted as free; the best of the candidates."""
        old, w = self.held[jp], self.inst.jobs[jp].workers
        ok = self.allowed[jp]
        pool = [(self.factor(jp, sp, g), sp, g) for sp in map(int, np.flatnonzero(ok)) for g in self.free(sp, old)]
        cands: list[Held] = []
        by_server: dict[int, list[tuple[float, int, int]]] = {}
        for item in pool:
            by_server.setdefault(item[1], []).append(item)
        for sp, items in by_server.items():
            if len(items) >= w:
                cands.append({sp: tuple(g for _, _, g in sorted(items)[:w])})
        if len(pool) >= w:
            same: dict[tuple[float, int], int] = {}
            for f, sp, _ in pool:
                same[(f, sp)] = same.get((f, sp), 0) + 1
            ranked = sorted(pool, key=lambda it: (it[0], abs(same[(it[0], it[1])] - w), it[1], it[2]))[:w]
            fastest: Held = {}
            for _, sp, g in ranked:
                fastest[sp] = (*fastest.get(sp, ()), g)
            cands.append(fastest)
        return self._best_of(jp, old, cands)

    def worker(self, jp: int) -> bool:
        """Move one pace-setting worker of ``jp`` to a faster free GPU."""
        old = self.held[jp]
        ok = self.allowed[jp]
        cands: list[Held] = []
        for sp, ids in old.items():
            worst = max(ids, key=lambda g: (self.factor(jp, sp, g), g))
            fw = self.factor(jp, sp, worst)
            faster = sorted(
                (self.factor(jp, int(sq), g), int(sq), g)
                for sq in np.flatnonzero(ok)
                for g in self.free(int(sq))
                if self.factor(jp, int(sq), g) < fw
            )[:CANDIDATES]
            for _, sq, g in faster:
                new = dict(old)
                new[sp] = tuple(x for x in ids if x != worst)
                new[sq] = (*new.get(sq, ()), g)
                cands.append({s: v for s, v in new.items() if v})
        return self._best_of(jp, old, cands)

    def swap(self, jp: int) -> bool:
        """Swap a pace-setting GPU of ``jp`` with a faster one another movable job holds."""
        old = self.held[jp]
        ok = self.allowed[jp]
        best: tuple[float, int, Held, Held] | None = None
        for sp, ids in old.items():
            worst = max(ids, key=lambda g: (self.factor(jp, sp, g), g))
            fw = self.factor(jp, sp, worst)
            theirs = sorted(
                (self.factor(jp, sq, g), sq, g, other)
                for other in self.movable
                if other != jp
                for sq, gs in self.held[other].items()
                if ok[sq] and self.allowed[other][sp]
                for g in gs
                if self.factor(jp, sq, g) < fw
            )[:CANDIDATES]
            for _, sq, g, other in theirs:
                best = self._better_trade(best, jp, other, [(sp, worst)], [(sq, g)])
        if best is None:
            return False
        self._trade(jp, *best[1:])
        return True

    def exchange(self, jp: int) -> bool:
        """Trade all of ``jp``'s GPUs at or above a factor level (for its class) for as many of
        another job's GPUs below it, the fastest for ``jp`` first: one slow GPU less does not
        lower a job's pace while it holds another as slow, so single swaps stall there."""
        old = self.held[jp]
        ok = self.allowed[jp]
        levels = sorted({self.factor(jp, sp, g) for sp, ids in old.items() for g in ids}, reverse=True)
        best: tuple[float, int, Held, Held] | None = None
        for tau in levels[:EXCHANGE_LEVELS]:
            give = [(sp, g) for sp, ids in old.items() for g in ids if self.factor(jp, sp, g) >= tau]
            for other in self.movable:
                if other == jp:
                    continue
                was = self.held[other]
                if not all(self.allowed[other][sp] for sp, _ in give):
                    continue
                take = sorted((self.factor(jp, sq, g), sq, g) for sq, gs in was.items() if ok[sq] for g in gs)
                take = [t for t in take if t[0] < tau][: len(give)]
                if len(take) == len(give):
                    best = self._better_trade(best, jp, other, give, [(sq, g) for _, sq, g in take])
        if best is None:
            return False
        self._trade(jp, *best[1:])
        return True

    def _better_trade(
        self,
        best: tuple[float, int, Held, Held] | None,
        jp: int,
        other: int,
        give: list[tuple[int, int]],
        take: list[tuple[int, int]],
    ) -> tuple[float, int, Held, Held] | None:
        """``best``, or ``jp`` giving ``give`` to ``other`` for ``take`` when that fits and
        lowers the two jobs' terms by more."""
        old, was = self.held[jp], self.held[other]
        mine, yours = _moved(old, give, take), _moved(was, take, give)
        if not (self.fits(jp, old, mine) and self.fits(other, was, yours)):
            return best
        gain = self.cost_of[jp] + self.cost_of[other] - self.cost(jp, mine) - self.cost(other, yours)
        if gain > _eps(self.cost_of[jp] + self.cost_of[other]) and (best is None or gain > best[0]):
            return (gain, other, mine, yours)
        return best

    def _trade(self, jp: int, other: int, mine: Held, yours: Held) -> None:
        c_mine, c_yours = self.cost(jp, mine), self.cost(other, yours)
        self.apply(jp, {}, self.cost_of[jp])  # release both, then take: their GPUs cross
        self.apply(other, {}, self.cost_of[other])
        self.apply(jp, mine, c_mine)
        self.apply(other, yours, c_yours)

    def _best_of(self, jp: int, old: Held, cands: list[Held]) -> bool:
        best: tuple[float, Held] | None = None
        for new in cands:
            if new == old or not self.fits(jp, old, new):
                continue
            c = self.cost(jp, new)
            if c < self.cost_of[jp] - _eps(self.cost_of[jp]) and (best is None or c < best[0]):
                best = (c, new)
        if best is None:
            return False
        self.apply(jp, best[1], best[0])
        return True

    def result(self) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, tuple[int, ...]]]]:
        assignment: dict[str, dict[str, int]] = {}
        gpus: dict[str, dict[str, tuple[int, ...]]] = {}
        for jp, mine in self.held.items():
            jid = self.inst.jobs[jp].id
            assignment[jid] = {self.inst.servers[sp].id: len(ids) for sp, ids in sorted(mine.items())}
            on = {self.inst.servers[sp].id: ids for sp, ids in sorted(mine.items()) if sp in self.fac}
            if on:
                gpus[jid] = on
        return assignment, gpus


def _moved(held: Held, out: list[tuple[int, int]], into: list[tuple[int, int]]) -> Held:
    """``held`` less the GPUs ``out``, plus ``into`` (each ``(server, index)``)."""
    gone = set(out)
    new: dict[int, list[int]] = {sp: [g for g in ids if (sp, g) not in gone] for sp, ids in held.items()}
    for sp, g in into:
        new.setdefault(sp, []).append(g)
    return {sp: tuple(sorted(ids)) for sp, ids in new.items() if ids}


def _eps(x: float) -> float:
    return 1e-9 * abs(x) + 1e-12


def gpu_search(
    instance: Instance,
    assignment: Assignment,
    gpus: GpuChoice | None,
    stop: Callable[[], bool],
    keep: frozenset[str] = frozenset(),
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, tuple[int, ...]]]]:
    """``assignment`` (every job of which is placed; ``gpus`` where chosen, the rule's
    elsewhere) improved by the module's steps until none helps or ``stop()``; returns the
    placement and the GPUs every job holds on the factored servers.  Jobs in ``keep`` stay."""
    s = _Search(instance, assignment, gpus or {}, keep)
    improved = True
    while improved:
        improved = False
        for jp in sorted(s.movable, key=lambda j: (-s.cost_of[j], j)):
            if stop():
                return s.result()
            for step in (s.whole, s.worker, s.swap, s.exchange):
                while step(jp):
                    improved = True
                    if stop():
                        return s.result()
    return s.result()
