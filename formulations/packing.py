"""Mapping an aggregated model's solution back to servers: each class of interchangeable
servers is packed on its own, greedily, or exactly by CP-SAT where the greedy packing fails."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.formulations.cpsat import add_capacity_rows
from placement.formulations.index import ProblemIndex
from placement.formulations.quiet import interruptible_cpsat
from placement.model.records import Instance
from placement.problem.state import State

__all__ = ["disaggregate"]


def disaggregate(
    instance: Instance,
    index: ProblemIndex,
    counts: dict[tuple[int, int], tuple[int, int]],
    plain: dict[tuple[int, int], int],
) -> tuple[dict[str, dict[str, int]] | None, list[int]]:
    """Map an aggregated model's solution back to servers.

    ``counts[(job, unit)] = (workers, servers used)`` for every aggregated unit, ``plain``
    the workers on ordinary servers.  Each class is packed on its own: jobs with the
    biggest per-server share first, each onto the servers with the most room for it, one
    worker on each then the rest where room is largest; a class where that fails is packed
    exactly by CP-SAT.  Returns the assignment (``None`` if some class cannot be packed)
    and the classes that needed CP-SAT or failed."""
    st = State(instance)
    out: dict[str, dict[str, int]] = {}
    for (jp, sp), k in plain.items():
        if k > 0:
            out.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
    hard: list[int] = []
    by_unit: dict[int, list[tuple[int, int, int]]] = {}
    for (jp, rep), (w, u) in counts.items():
        if w > 0:
            by_unit.setdefault(rep, []).append((jp, w, u))
    failed = False
    for rep, items in by_unit.items():
        servers = list(index.units[rep])
        packed = _pack_greedy(st, servers, items)
        if packed is None:
            hard.append(rep)
            packed = _pack_exact(instance, servers, items)
        if packed is None:
            failed = True
            continue
        for jp, alloc in packed.items():
            for sp, k in alloc.items():
                out.setdefault(instance.jobs[jp].id, {})[instance.servers[sp].id] = k
    return (None if failed else out), hard


def _pack_greedy(st: State, servers: list[int], items: list[tuple[int, int, int]]) -> dict[int, dict[int, int]] | None:
    """Greedy packing of ``(job, workers, servers used)`` onto the class's ``servers``,
    taking capacity from the shared state ``st`` (classes share no server, so a class that
    fails leaves nothing behind that another class could see)."""
    sps = np.asarray(servers, dtype=np.int64)
    result: dict[int, dict[int, int]] = {}
    for jp, w, u in sorted(items, key=lambda t: (-math.ceil(t[1] / t[2]), -t[1], t[0])):
        if u > w or u > len(servers):
            return None
        room = st.room(jp, sps)
        order = sorted(range(len(servers)), key=lambda i: (-int(room[i]), i))[:u]
        if room[order[-1]] < 1 or int(room[order].sum()) < w:
            return None
        alloc = {servers[i]: 1 for i in order}
        left = w - u
        for i in order:
            extra = min(left, int(room[i]) - 1)
            alloc[servers[i]] += extra
            left -= extra
        st.take(jp, {**st.release(jp), **alloc})  # the job may hold servers of other classes
        result[jp] = alloc
    return result


def _pack_exact(
    instance: Instance, servers: list[int], items: list[tuple[int, int, int]], limit_s: float = 2.0
) -> dict[int, dict[int, int]] | None:
    """Exact packing of one class by CP-SAT (GPUs, and CPUs/memory at a 1e-6 resolution
    rounded against the packing)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    n: dict[tuple[int, int], Any] = {}
    for jp, w, u in items:
        bs = []
        for sp in servers:
            v = m.new_int_var(0, w, f"n_{jp}_{sp}")
            b = m.new_bool_var(f"b_{jp}_{sp}")
            m.add(v >= 1).only_enforce_if(b)
            m.add(v == 0).only_enforce_if(b.negated())
            n[(jp, sp)] = v
            bs.append(b)
        m.add(sum(n[(jp, sp)] for sp in servers) == w)
        m.add(sum(bs) == u)
    for sp in servers:
        add_capacity_rows(m, instance, sp, [(jp, n[(jp, sp)]) for jp, _, _ in items])
    # servers of a class are interchangeable: loads in non-increasing order
    loads = [sum(n[(jp, sp)] for jp, _, _ in items) for sp in servers]
    for a, b in zip(loads, loads[1:]):
        m.add(a >= b)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = limit_s
    s.parameters.num_workers = 1
    if interruptible_cpsat(s, m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    out: dict[int, dict[int, int]] = {}
    for (jp, sp), v in n.items():
        k = int(s.value(v))
        if k:
            out.setdefault(jp, {})[sp] = k
    return out
