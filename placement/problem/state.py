"""Mutable working state shared by the constructive methods: remaining capacity and the
partial assignment, with per-job helpers (allowed servers, room, exact single-job cost)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from placement.model.records import Assignment, Instance
from placement.problem.arrays import arrays_of
from placement.problem.congestion import congestion_of
from placement.problem.hybrid import best_stages, pipeline_slots
from placement.problem.rules import comm_ms, meets_deadline, moves, spread_factor, weight_factor, worker_room
from placement.problem.shards import place_shards, ps_coefs, ps_phase, shard_room
from placement.problem.topology import cluster_of

__all__ = ["State"]


class State:
    """Remaining GPUs/CPU/memory per server and the placement built so far.

    ``x[jp]`` maps server positions to worker counts of job position ``jp``.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.idx = arrays_of(instance)
        self.cluster = cluster_of(instance)
        self.congestion = congestion_of(instance)
        servers = instance.servers
        self.n = len(servers)
        self.gpus = self.cluster.free_gpus.astype(np.int64).copy()
        self.cpus = np.array([math.inf if s.cpus is None else s.cpus for s in servers], dtype=float)
        self.mem = np.array([math.inf if s.memory_gb is None else s.memory_gb for s in servers], dtype=float)
        self.x: dict[int, dict[int, int]] = {}
        self.holders: dict[int, set[int]] = {}
        """Server position -> jobs with workers on it."""
        # re-planning: the previous placement, a budget of moved workers, a price per move
        self.prev: dict[int, dict[int, int]] = {}
        self.move_budget: int | None = None
        self.move_cost = 0.0
        self.restart_price: dict[int, float] = {}
        """Re-planning: the price (objective units) a running job pays once when it moves at all
        (its restart), by job position."""
        self.moved = 0
        """Workers moved off their previous servers by the current placement."""
        self._allowed: dict[int, np.ndarray] = {}
        self._by_score: dict[int, np.ndarray] = {}
        self._cost_cache: dict[tuple[int, tuple[int, ...]], float] = {}
        self._ps_cache: dict[tuple[int, tuple[tuple[int, int], ...]], tuple[float, dict[int, int] | None]] = {}
        self._hybrid_cache: dict[tuple[int, tuple[tuple[int, int], ...]], float] = {}
        self.z: dict[int, dict[int, int]] = {}
        """Parameter-server jobs' shards: job position -> {server position: shards}."""
        self.component = self.cluster.component

    # ------------------------------------------------------------- per job
    def allowed(self, jp: int) -> np.ndarray:
        """Server positions job ``jp`` may use (GPU type and ``allowed_servers``)."""
        if jp not in self._allowed:
            self._allowed[jp] = np.flatnonzero(np.isfinite(self.idx.job_a(jp)))
        return self._allowed[jp]

    def by_score(self, jp: int) -> np.ndarray:
        """The servers ``jp`` may use, by expected compute time (fastest first; memoised)."""
        if jp not in self._by_score:
            allowed = self.allowed(jp)
            self._by_score[jp] = allowed[np.argsort(self.score(jp)[allowed], kind="stable")]
        return self._by_score[jp]

    def a(self, jp: int) -> np.ndarray:
        """Ideal per-worker compute time of ``jp`` on every server (inf where not allowed)."""
        return self.idx.job_a(jp)

    def score(self, jp: int) -> np.ndarray:
        """Expected compute time ``a * E[S]`` of ``jp`` on every server."""
        return self.idx.job_score(jp)

    def room(self, jp: int, sps: np.ndarray | Sequence[int]) -> np.ndarray:
        """How many more workers of ``jp`` each server in ``sps`` can take now."""
        sps = np.asarray(sps, dtype=np.int64)
        return worker_room(self.instance.jobs[jp], self.gpus[sps], self.cpus[sps], self.mem[sps])

    def take(self, jp: int, alloc: Mapping[int, int], shards: Mapping[int, int] | None = None) -> bool:
        """Place ``jp``'s workers and a parameter-server job's shards (``shards``, or the
        shard rule's; ``{}`` to place them later with :meth:`place_job_shards`).  When its
        shards do not fit, the job is taken out again and ``False`` returned: a state never
        holds a parameter-server job without its shards."""
        job = self.instance.jobs[jp]
        for sp, k in alloc.items():
            self.gpus[sp] -= k
            if job.cpus_per_worker:
                self.cpus[sp] -= k * job.cpus_per_worker
            if job.memory_gb_per_worker:
                self.mem[sp] -= k * job.memory_gb_per_worker
        self.x[jp] = dict(alloc)
        for sp in alloc:
            self.holders.setdefault(sp, set()).add(jp)
        if jp in self.prev:
            self.moved += self.moves_of(jp, alloc) - self.moves_of(jp, {})
        if job.is_ps and (shards is None or shards) and not self.place_job_shards(jp, shards):
            self.release(jp)
            return False
        return True

    def release(self, jp: int) -> dict[int, int]:
        alloc = self.x.pop(jp, {})
        job = self.instance.jobs[jp]
        for sp, k in self.z.pop(jp, {}).items():
            self.cpus[sp] += k * (job.ps_cpus or 0.0)
            self.mem[sp] += k * (job.ps_memory_gb or 0.0)
        if jp in self.prev and alloc:
            self.moved += self.moves_of(jp, {}) - self.moves_of(jp, alloc)
        for sp in alloc:
            self.holders[sp].discard(jp)
        for sp, k in alloc.items():
            self.gpus[sp] += k
            if job.cpus_per_worker:
                self.cpus[sp] += k * job.cpus_per_worker
            if job.memory_gb_per_worker:
                self.mem[sp] += k * job.memory_gb_per_worker
        return alloc

    # ------------------------------------------------------------ re-planning
    def set_previous(
        self,
        prev: Mapping[int, Mapping[int, int]],
        budget: int | None,
        cost: float,
        restart: Mapping[int, float] | None = None,
    ) -> None:
        """Count moves against ``prev`` (call on an empty state); ``cost`` per moved worker,
        ``restart[jp]`` once per job that moves."""
        self.prev = {jp: dict(a) for jp, a in prev.items()}
        self.move_budget, self.move_cost = budget, cost
        self.restart_price = {int(jp): float(c) for jp, c in (restart or {}).items() if c > 0}
        self.moved = sum(self.moves_of(jp, self.x.get(jp, {})) for jp in self.prev)

    def moves_of(self, jp: int, alloc: Mapping[int, int]) -> int:
        """Workers of ``jp`` that ``alloc`` takes off their previous servers."""
        return moves(self.prev.get(jp, {}), alloc)

    def change_ok(self, changes: Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]]) -> bool:
        """Whether replacing each job's ``old`` allocation by ``new`` keeps the moves within
        the budget (``changes[jp] = (old, new)``)."""
        if self.move_budget is None or not self.prev:
            return True
        delta = sum(self.moves_of(jp, new) - self.moves_of(jp, old) for jp, (old, new) in changes.items())
        return self.moved + delta <= self.move_budget

    def move_price(self, jp: int, alloc: Mapping[int, int]) -> float:
        """The price of the moves ``alloc`` makes: per moved worker, and the job's restart once
        if it moves at all."""
        if not self.move_cost and jp not in self.restart_price:
            return 0.0
        k = self.moves_of(jp, alloc)
        return self.move_cost * k + (self.restart_price.get(jp, 0.0) if k > 0 else 0.0)

    def priced(self, jp: int, alloc: Mapping[int, int]) -> float:
        """Cost plus the price of the moves ``alloc`` makes."""
        return self.cost(jp, alloc) + self.move_price(jp, alloc)

    def snapshot(self) -> tuple[Any, ...]:
        return (
            {j: dict(a) for j, a in self.x.items()},
            self.gpus.copy(),
            self.cpus.copy(),
            self.mem.copy(),
            self.moved,
            {j: dict(a) for j, a in self.z.items()},
        )

    def restore(self, snap: tuple[Any, ...]) -> None:
        x, g, c, m, moved, z = snap
        self.x = {j: dict(a) for j, a in x.items()}
        self.z = {j: dict(a) for j, a in z.items()}
        self.gpus, self.cpus, self.mem, self.moved = g.copy(), c.copy(), m.copy(), moved
        self.holders = {}
        for jp, a in self.x.items():
            for sp in a:
                self.holders.setdefault(sp, set()).add(jp)

    # ---------------------------------------------------------------- costs
    def costs(self, jp: int, sets: Sequence[Sequence[int]]) -> np.ndarray:
        """Objective contribution ``w_j E[T_j]`` of ``jp`` on each server set (exact, from
        the evaluator's kernel); inf when the set is unreachable or misses the deadline.  For
        a parameter-server job, the compute phase alone (a lower estimate that needs no
        counts; :meth:`cost` adds the push/pull phase); for a hybrid job, its pipeline slots
        times the compute (:meth:`cost` adds its communication, which needs the counts)."""
        job = self.instance.jobs[jp]
        keys = [tuple(sorted(s)) for s in sets]
        todo = [k for k in dict.fromkeys(keys) if (jp, k) not in self._cost_cache]
        if todo:
            e, _, _ = self.idx.expected_max([(jp, k) for k in todo])
            wf = weight_factor(self.instance, job)
            slots = pipeline_slots(job) if job.is_hybrid else 1
            for k, ek in zip(todo, e):
                ids = [self.instance.servers[sp].id for sp in k]
                bw = self.cluster.bandwidth(ids)
                t = slots * float(ek) + comm_ms(job, bw, len(k), self.instance.terms_by_bandwidth) * (
                    self.congestion.factor(ids) if not job.is_hybrid else 1.0
                )
                t *= spread_factor(self.instance, len(k))
                if bw <= 0 and (job.is_hybrid or len(k) > 1):
                    t = math.inf  # servers that cannot reach each other (even with nothing to send)
                if not meets_deadline(job, t) and not job.is_ps:  # a PS job's phase comes on top: cost()
                    t = math.inf
                # weight factor may be 0 (jct objective with 0 iterations is refused by the loader)
                self._cost_cache[(jp, k)] = wf * t if math.isfinite(t) else math.inf
        return np.array([self._cost_cache[(jp, k)] for k in keys])

    def alloc_costs(self, jp: int, allocs: Sequence[Mapping[int, int]]) -> np.ndarray:
        """:meth:`cost` of each allocation (batched through :meth:`costs` for a job that is
        not a parameter-server job; a parameter-server job's shards decide its cost, or make
        it inf when they do not fit; a hybrid job's mapping decides it)."""
        if self.instance.jobs[jp].is_hybrid:
            return np.array([self.hybrid_cost(jp, a) for a in allocs], dtype=float)
        if not self.instance.jobs[jp].is_ps:
            return self.costs(jp, [list(a) for a in allocs])
        return np.array([self.ps_cost(jp, a)[0] for a in allocs], dtype=float)

    def cost(self, jp: int, alloc: Mapping[int, int]) -> float:
        """``w_j E[T_j]`` of ``jp`` on ``alloc``; a parameter-server job's with the shards the
        shard rule gives it (:func:`~placement.problem.shards.place_shards`)."""
        job = self.instance.jobs[jp]
        if job.is_hybrid:
            return self.hybrid_cost(jp, alloc)
        if not job.is_ps:
            return float(self.costs(jp, [list(alloc)])[0])
        return self.ps_cost(jp, alloc)[0]

    def hybrid_cost(self, jp: int, alloc: Mapping[int, int]) -> float:
        """A hybrid job's cost on ``alloc`` with the best canonical mapping of its groups
        (:func:`~placement.problem.hybrid.best_stages` without swaps, which the driver's final
        mapping only improves); inf past its deadline, when its groups are not whole, or when
        its servers cannot reach each other."""
        job = self.instance.jobs[jp]
        key = (jp, tuple(sorted((int(sp), int(k)) for sp, k in alloc.items() if k > 0)))
        c = self._hybrid_cache.get(key)
        if c is None:
            if not key[1] or any(k % job.unit for _, k in key[1]) or sum(k for _, k in key[1]) != job.workers:
                c = math.inf
            elif len({int(self.component[sp]) for sp, _ in key[1]}) > 1:
                c = math.inf  # servers that cannot reach each other (even with nothing to send)
            else:
                _, t = best_stages(self.instance, jp, dict(key[1]), swaps=False)
                t *= spread_factor(self.instance, len(key[1]))
                ok = math.isfinite(t) and meets_deadline(job, t)
                c = weight_factor(self.instance, job) * t if ok else math.inf
            self._hybrid_cache[key] = c
        return c

    def ps_cost_with(self, jp: int, alloc: Mapping[int, int], z: Mapping[int, int]) -> float:
        """A parameter-server job's cost on ``alloc`` with the shards ``z`` (inf past its
        deadline)."""
        job = self.instance.jobs[jp]
        x = {int(sp): int(k) for sp, k in alloc.items() if k > 0}
        zz = {int(sp): int(k) for sp, k in z.items() if k > 0}
        sps, c, _ = ps_coefs(self.instance, job, x, zz)
        if not all(math.isfinite(v) for v in c):
            return math.inf  # servers that cannot reach each other
        own = sorted(x)
        e, _, _ = self.idx.expected_max([(jp, own), (jp, sps)], [[self.idx.a(jp, sp) for sp in own], c])
        if self.congestion.any:  # the push/pull phase at its congestion
            e[1] = ps_phase(self.instance, [(jp, x, zz)])[0][0]
        t = (float(e[0]) + float(e[1])) * spread_factor(self.instance, len(set(x) | set(zz)))
        return weight_factor(self.instance, job) * t if meets_deadline(job, t) and math.isfinite(t) else math.inf

    def ps_cost(self, jp: int, alloc: Mapping[int, int]) -> tuple[float, dict[int, int] | None]:
        """A parameter-server job's cost on ``alloc`` and the shards it assumes (within the
        CPU and memory left beside this job's own shards)."""
        job = self.instance.jobs[jp]
        key = (jp, tuple(sorted((int(sp), int(k)) for sp, k in alloc.items() if k > 0)))
        capacity_bound = bool(job.ps_cpus or job.ps_memory_gb)
        if not capacity_bound and key in self._ps_cache:
            return self._ps_cache[key]
        x = {int(sp): int(k) for sp, k in alloc.items() if k > 0}
        cpus, mem = self.cpus, self.mem
        if capacity_bound:
            # what is left for the shards if the job ran on ``alloc``: its own shards and
            # current workers freed, the candidate's workers taken
            cpus, mem = cpus.copy(), mem.copy()
            for sp, k in self.z.get(jp, {}).items():
                cpus[sp] += k * (job.ps_cpus or 0.0)
                mem[sp] += k * (job.ps_memory_gb or 0.0)
            for sign, a in ((1, self.x.get(jp, {})), (-1, x)):
                for sp, k in a.items():
                    cpus[sp] += sign * k * (job.cpus_per_worker or 0.0)
                    mem[sp] += sign * k * (job.memory_gb_per_worker or 0.0)
        z = place_shards(self.instance, jp, x, cpus, mem)
        out: tuple[float, dict[int, int] | None] = (math.inf, None)
        if z is not None:
            out = (self.ps_cost_with(jp, x, z), z)
        if not capacity_bound:
            self._ps_cache[key] = out
        return out

    # ---------------------------------------------------------------- ranking
    def rank(self) -> tuple[float, float]:
        """Lexicographic key of this state, smaller is better: (-weight placed, objective
        plus the price of moved workers when re-planning)."""
        w = sum(self.instance.jobs[jp].weight for jp in self.x)
        restarts = sum(c for jp, c in self.restart_price.items() if self.moves_of(jp, self.x.get(jp, {})) > 0)
        return (-w, sum(self.cost(jp, a) for jp, a in self.x.items()) + self.move_cost * self.moved + restarts)

    @property
    def complete(self) -> bool:
        """Whether this state is an answer under the instance's admission (``all``: every
        job placed)."""
        return self.instance.admission != "all" or len(self.x) == len(self.instance.jobs)

    # ---------------------------------------------------------------- output
    def shard_assignment(self) -> Assignment:
        """The parameter-server jobs' shards, by ids."""
        servers = self.instance.servers
        return {
            self.instance.jobs[jp].id: {servers[sp].id: int(k) for sp, k in sorted(z.items()) if k > 0}
            for jp, z in sorted(self.z.items())
            if jp in self.x
        }

    def assignment(self) -> Assignment:
        servers = self.instance.servers
        return {
            self.instance.jobs[jp].id: {servers[sp].id: int(k) for sp, k in sorted(alloc.items()) if k > 0}
            for jp, alloc in sorted(self.x.items())
        }

    @classmethod
    def from_assignment(cls, instance: Instance, assignment: Assignment, shards: Assignment | None = None) -> State:
        """The state of a placement: every job's workers first, then the parameter-server
        jobs' shards (``shards``, or the shard rule's within what the workers left)."""
        st = cls(instance)
        taken = []
        for jid, a in assignment.items():
            alloc = {instance.server_pos[s]: int(k) for s, k in a.items() if k > 0}
            if alloc:
                jp = instance.job_pos[jid]
                st.take(jp, alloc, {})
                taken.append(jp)
        for jp in taken:
            given = (shards or {}).get(instance.jobs[jp].id)
            z = {instance.server_pos[s]: int(k) for s, k in given.items() if k > 0} if given else None
            if not (z and st.place_job_shards(jp, z)) and not st.place_job_shards(jp):
                st.release(jp)  # its shards do not fit beside the workers: not placed
        return st

    def _shards_fit(self, jp: int, z: Mapping[int, int]) -> bool:
        """Whether shards ``z`` of ``jp`` fit in the CPU and memory left, on servers the job
        may use, its count right and within ``max_servers``."""
        job = self.instance.jobs[jp]
        if sum(z.values()) != job.shards:
            return False
        if job.max_servers is not None and len(set(self.x.get(jp, {})) | set(z)) > job.max_servers:
            return False
        allowed = job.allowed_servers
        return all(
            (allowed is None or self.instance.servers[sp].id in allowed)
            and shard_room(job, sp, self.cpus, self.mem) >= k
            for sp, k in z.items()
        )

    def place_job_shards(self, jp: int, z: Mapping[int, int] | None = None) -> bool:
        """Give placed job ``jp`` its shards (``z`` exactly, when they fit, or the shard
        rule's within the capacity left) if it is a parameter-server job without them;
        whether it has them now."""
        job = self.instance.jobs[jp]
        if not job.is_ps or self.z.get(jp):
            return True
        if z is not None and not self._shards_fit(jp, z):
            return False
        if z is None:
            z = place_shards(self.instance, jp, self.x[jp], self.cpus, self.mem)
        if not z:
            return False
        self.z[jp] = dict(z)
        for sp, k in z.items():
            self.cpus[sp] -= k * (job.ps_cpus or 0.0)
            self.mem[sp] -= k * (job.ps_memory_gb or 0.0)
        return True

    def fill(self, jp: int, order: Sequence[int] | np.ndarray, *, one_component: bool = True) -> dict[int, int] | None:
        """Put ``jp``'s workers on servers in ``order`` as many as each has room for,
        within one connected component and ``max_servers``; ``None`` if it cannot fit."""
        job = self.instance.jobs[jp]
        order = np.asarray(order, dtype=np.int64)
        if len(order) == 0:
            return None
        rooms = self.room(jp, order)
        comps = self.component[order] if one_component else np.zeros(len(order), dtype=np.int64)
        tried: set[int] = set()
        for c in comps:
            if int(c) in tried:
                continue
            tried.add(int(c))
            need = job.workers
            alloc: dict[int, int] = {}
            for sp, r, cc in zip(order, rooms, comps):
                if cc != c or r <= 0:
                    continue
                k = int(min(r, need))
                alloc[int(sp)] = k
                need -= k
                if need == 0:
                    break
            if need == 0 and (job.max_servers is None or len(alloc) <= job.max_servers):
                return alloc
        return None
