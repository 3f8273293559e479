"""Why a job is placed where it is, and what it costs: every figure from the evaluator
(``../shared/DESIGN.md``, "Explanations").

For each placed job:

- ``expected_iteration_ms`` E[T] and ``ideal_iteration_ms`` T° (every S = 1), with T° split into
  ``compute_ms`` (the slowest worker at S = 1; a hybrid job's pipeline slots times its slowest
  group's) and ``communication_ms`` (``all_reduce``, ``push_pull``, or a hybrid job's
  ``pipeline_p2p`` and ``data_parallel_sync``, named in ``communication``), which sum to T°
  exactly;
- ``straggler_penalty_ms`` = E[T] - T°, and ``straggler_probability`` P(T > T°);
- ``congestion_share_ms``: E[T] minus E[T] with every switch calm (``L = 1``): what the
  congestion of the domains it crosses costs it (0 on one server or with no congestion);
- ``servers``: for each server of the job, its ``workers``, ``shards`` and ``tail_share_ms``,
  E[T] minus E[T] with that server held at its lowest slowdown value (its share of the tail);
- ``limits``: the constraints that bind (no GPU, CPU or memory left for one more worker on a
  server of the job; GPU types or servers the job may not use; ``max_servers`` reached; an
  expected completion within 10% of the deadline);
- ``alternatives``: the best single-worker move into free capacity and the best swap of one
  worker with another job's, among candidate servers, each with its change in the objective
  and in the job's E[T] (a change of 0 or more: no better move or swap was found), checked by
  the validator.  A hybrid job moves one group (``tp`` workers) at a time, into the cell of its
  stage matrix where it lowers E[T] most; so does a hybrid job it swaps with.

Held values: a server's lowest value is the lowest of its distribution, of the job's own
estimate for it, or of its row in the scenario table.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.evaluation.evaluate import Evaluation, evaluate
from placement.evaluation.validate import validate
from placement.model.records import Instance, Job, Scenarios, Slowdown, Solution, StageMatrix
from placement.problem.rules import weight_factor

__all__ = ["explain", "summary_rows", "SUMMARY_COLUMNS", "JOB_KEYS", "CANDIDATES", "DEADLINE_NEAR"]

JOB_KEYS = (
    "expected_iteration_ms",
    "ideal_iteration_ms",
    "compute_ms",
    "communication_ms",
    "communication",
    "straggler_penalty_ms",
    "straggler_probability",
    "congestion_share_ms",
    "servers",
    "limits",
    "alternatives",
)
"""The keys of each job's explanation, in order."""

CANDIDATES = 24
"""Target servers tried for a move or a swap: those of the job, then the others with the
lowest expected compute time for it (GPU speed x expected slowdown)."""

DEADLINE_NEAR = 0.9
"""A deadline binds when the expected completion reaches this share of it."""


def _low(d: Slowdown | tuple[float, ...]) -> float:
    return min(d.values) if isinstance(d, Slowdown) else min(d)


def _held(instance: Instance, job: Job, sid: str) -> Instance:
    """``instance`` with only ``job``, and server ``sid`` held at its lowest slowdown value."""
    servers = tuple(
        s if s.id != sid else dataclasses.replace(s, slowdown=Slowdown((min(s.slowdown.values),), (1.0,)))
        for s in instance.servers
    )
    over = dict(job.slowdown)
    if sid in over:
        o = over[sid]
        over[sid] = Slowdown((_low(o),), (1.0,)) if isinstance(o, Slowdown) else tuple(_low(o) for _ in o)
    scen = instance.scenarios
    if scen is not None and sid in scen.slowdowns:
        row = scen.slowdowns[sid]
        scen = Scenarios(scen.probs, {**scen.slowdowns, sid: tuple(min(row) for _ in row)})
    held_job = dataclasses.replace(job, slowdown=over)
    return instance.replace(servers=servers, jobs=(held_job,), scenarios=scen, admission="best_effort")


def _alone(instance: Instance, job: Job) -> Instance:
    return instance.replace(jobs=(job,), admission="best_effort")


@dataclass
class _Room:
    gpus: dict[str, int]
    cpus: dict[str, float]
    memory: dict[str, float]


def _room(instance: Instance, solution: Solution) -> _Room:
    """What every server has left after the solution's workers and shards."""
    gpus = {s.id: s.free_gpus for s in instance.servers}
    cpus = {s.id: math.inf if s.cpus is None else s.cpus for s in instance.servers}
    mem = {s.id: math.inf if s.memory_gb is None else s.memory_gb for s in instance.servers}
    for jid, a in solution.assignment.items():
        job = instance.job_by_id[jid]
        for sid, k in a.items():
            gpus[sid] -= k
            cpus[sid] -= k * (job.cpus_per_worker or 0.0)
            mem[sid] -= k * (job.memory_gb_per_worker or 0.0)
    for jid, z in solution.shards.items():
        job = instance.job_by_id[jid]
        for sid, k in z.items():
            cpus[sid] -= k * (job.ps_cpus or 0.0)
            mem[sid] -= k * (job.ps_memory_gb or 0.0)
    return _Room(gpus, cpus, mem)


def _limits(instance: Instance, job: Job, solution: Solution, room: _Room, expected_ms: float) -> dict[str, str]:
    a = solution.assignment[job.id]
    used = [sid for sid, k in a.items() if k > 0]
    out: dict[str, str] = {}
    full = [sid for sid in used if room.gpus[sid] < 1]
    if full:
        out["gpus"] = f"no GPU left on {', '.join(full)}"
    if job.cpus_per_worker:
        short = [sid for sid in used if room.cpus[sid] < job.cpus_per_worker]
        if short:
            out["cpu"] = f"less than {job.cpus_per_worker:g} CPUs left on {', '.join(short)}"
    if job.memory_gb_per_worker:
        short = [sid for sid in used if room.memory[sid] < job.memory_gb_per_worker]
        if short:
            out["memory"] = f"less than {job.memory_gb_per_worker:g} GB left on {', '.join(short)}"
    types = sorted({s.gpu_type for s in instance.servers})
    barred = [t for t in types if job.speed(t) is None]
    if barred:
        out["type"] = f"may not use {', '.join(barred)}"
    if job.allowed_servers is not None:
        out["allowed_servers"] = f"may use {len(job.allowed_servers)} of {len(instance.servers)} servers"
    if job.max_servers is not None:
        n = len(set(used) | {sid for sid, k in solution.shards.get(job.id, {}).items() if k > 0})
        if n >= job.max_servers:
            out["max_servers"] = f"uses {n} of at most {job.max_servers} servers"
    if job.deadline_s is not None and job.iterations is not None:
        done_s = job.iterations * expected_ms / 1000.0
        if done_s >= DEADLINE_NEAR * job.deadline_s:
            out["deadline"] = f"expected to finish in {done_s:,.0f} s of its {job.deadline_s:,.0f} s"
    return out


def _candidates(instance: Instance, job: Job, used: set[str]) -> list[str]:
    def key(sid: str) -> float:
        s = instance.server_by_id[sid]
        speed = job.speed(s.gpu_type)
        return math.inf if not speed else s.slowdown.mean() / speed

    others = sorted((s.id for s in instance.servers if s.id not in used and job.allows(s)), key=key)
    return sorted(used) + others[:CANDIDATES]


def _with(a: Mapping[str, int], take: str, give: str, k: int = 1) -> dict[str, int] | None:
    """``a`` with ``k`` workers moved from ``take`` to ``give`` (``None``: fewer than ``k`` there)."""
    if a.get(take, 0) < k:
        return None
    out = dict(a)
    out[take] -= k
    out[give] = out.get(give, 0) + k
    return {s: v for s, v in out.items() if v > 0}


def _recells(m: StageMatrix | None, take: str, give: str) -> list[StageMatrix | None]:
    """A hybrid job's matrices with one group moved from ``take`` to ``give``: one per cell on
    ``take`` (``[None]`` for a job without a matrix)."""
    if m is None:
        return [None]
    out: list[StageMatrix | None] = []
    for s, row in enumerate(m):
        for r, sid in enumerate(row):
            if sid == take:
                out.append(
                    tuple(
                        tuple(give if (s2, r2) == (s, r) else x for r2, x in enumerate(rw)) for s2, rw in enumerate(m)
                    )
                )
    return out


def _alternatives(instance: Instance, job: Job, solution: Solution, room: _Room, base: float) -> dict[str, Any]:
    alone = _alone(instance, job)
    a = solution.assignment[job.id]
    used = {sid for sid, k in a.items() if k > 0}
    cands = _candidates(instance, job, used)
    w = weight_factor(instance, job)
    u = job.unit

    def et(
        inst: Instance, jb: Job, x: Mapping[str, int], z: Mapping[str, int] | None, m: StageMatrix | None = None
    ) -> float:
        # a candidate may be invalid (a server its shards cannot reach: infinite time); the
        # validator refuses it below, so its figure need only not be finite
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            ev = evaluate(inst, {jb.id: dict(x)}, {jb.id: dict(z)} if z else None, {jb.id: m} if m else None)
        return ev.jobs[jb.id].expected_iteration_ms

    def moved(inst: Instance, jb: Job, x: Mapping[str, int], take: str, give: str) -> tuple[float, StageMatrix | None]:
        """The job's E[T] with one group (or worker) moved, in its best cell."""
        tries = [
            (et(inst, jb, x, solution.shards.get(jb.id), m), m)
            for m in _recells(solution.stages.get(jb.id), take, give)
        ]
        return min(tries, key=lambda t: t[0])

    def check(assignment: Mapping[str, Mapping[str, int]], stages: Mapping[str, StageMatrix | None]) -> bool:
        st = {**solution.stages, **{j: m for j, m in stages.items() if m is not None}}
        return not validate(instance, assignment, shards=solution.shards, stages=st)

    moves = []
    for s in sorted(used):
        for t in cands:
            if t == s or room.gpus[t] < u:
                continue
            if room.cpus[t] < u * (job.cpus_per_worker or 0.0) or room.memory[t] < u * (
                job.memory_gb_per_worker or 0.0
            ):
                continue
            x = _with(a, s, t, u)
            if x is None:
                continue
            e, m = moved(alone, job, x, s, t)
            d = e - base
            if math.isfinite(d):
                moves.append((w * d, d, s, t, x, m))
    best_move = None
    for dobj, d, s, t, x, m in sorted(moves, key=lambda mv: mv[0]):
        if check({**solution.assignment, job.id: x}, {job.id: m}):
            best_move = {"from": s, "to": t, "delta_objective": dobj, "delta_expected_iteration_ms": d}
            break
    swaps = []
    on: dict[str, list[str]] = defaultdict(list)
    for jid, b in solution.assignment.items():
        for sid, k in b.items():
            if k > 0 and jid != job.id:
                on[sid].append(jid)
    alone_of: dict[str, Instance] = {}
    base_of: dict[str, float] = {}
    for s in sorted(used):
        for t in cands:
            if t in used and t == s:
                continue
            for kid in on.get(t, []):
                other = instance.job_by_id[kid]
                if not (job.allows(instance.server_by_id[t]) and other.allows(instance.server_by_id[s])):
                    continue
                if u % other.unit:
                    continue  # the other job's groups do not make up one of ours
                if kid not in alone_of:
                    alone_of[kid] = _alone(instance, other)
                    base_of[kid] = et(
                        alone_of[kid],
                        other,
                        solution.assignment[kid],
                        solution.shards.get(kid),
                        solution.stages.get(kid),
                    )
                x = _with(a, s, t, u)
                y = _with(solution.assignment[kid], t, s, u)
                if x is None or y is None or (other.unit > 1 and other.unit != u):
                    continue
                e, m = moved(alone, job, x, s, t)
                ek, mk = moved(alone_of[kid], other, y, t, s)
                d, dk = e - base, ek - base_of[kid]
                if math.isfinite(d) and math.isfinite(dk):
                    swaps.append((w * d + weight_factor(instance, other) * dk, d, s, t, kid, x, y, m, mk))
    best_swap = None
    for dobj, d, s, t, kid, x, y, m, mk in sorted(swaps, key=lambda sw: sw[0]):
        assignment = {**solution.assignment, job.id: x, kid: y}
        if check(assignment, {job.id: m, kid: mk}):
            best_swap = {
                "from": s,
                "to": t,
                "with_job": kid,
                "delta_objective": dobj,
                "delta_expected_iteration_ms": d,
            }
            break
    return {"move": best_move, "swap": best_swap}


def _explain_job(instance: Instance, job: Job, solution: Solution, room: _Room, ev: Evaluation) -> dict[str, Any]:
    a = {sid: k for sid, k in solution.assignment[job.id].items() if k > 0}
    z = {sid: k for sid, k in solution.shards.get(job.id, {}).items() if k > 0}
    rep = ev.jobs[job.id]
    compute_only, communication = ev.ideal_parts[job.id]
    if job.is_hybrid:
        _, p2p, sync = ev.hybrid_parts[job.id]
        parts = {"pipeline_p2p": p2p, "data_parallel_sync": sync}
    else:
        parts = {"push_pull" if job.is_ps and z else "all_reduce": communication}
    m = solution.stages.get(job.id)
    st = {job.id: m} if m else None
    # differences are taken on the job alone (the same evaluator on a one-job instance), so
    # that each is a difference of two figures computed the same way
    alone = _alone(instance, job)
    g = {job.id: solution.gpus[job.id]} if job.id in solution.gpus else None
    e_alone = evaluate(alone, {job.id: a}, {job.id: z} if z else None, st, g).jobs[job.id].expected_iteration_ms
    servers: dict[str, dict[str, Any]] = {}
    for sid in sorted(set(a) | set(z)):
        held = _held(instance, job, sid)
        e_held = evaluate(held, {job.id: a}, {job.id: z} if z else None, st, g).jobs[job.id].expected_iteration_ms
        servers[sid] = {"workers": a.get(sid, 0), "shards": z.get(sid, 0), "tail_share_ms": e_alone - e_held}
        held_gpus = ev.gpus.get(job.id, {}).get(sid)
        if held_gpus:  # a server with per-GPU factors: the GPUs held and the slowest one's factor
            f = instance.server_by_id[sid].gpu_factors(job.app_class)
            servers[sid]["gpus"] = list(held_gpus)
            servers[sid]["gpu_factor"] = max(f[g] for g in held_gpus)
    calm = alone.replace(switches=tuple(dataclasses.replace(w, congestion=Slowdown()) for w in alone.switches))
    e_calm = evaluate(calm, {job.id: a}, {job.id: z} if z else None, st, g).jobs[job.id].expected_iteration_ms
    return {
        "expected_iteration_ms": rep.expected_iteration_ms,
        "ideal_iteration_ms": rep.ideal_iteration_ms,
        "compute_ms": compute_only,
        "communication_ms": communication,
        "communication": parts,
        "straggler_penalty_ms": rep.expected_iteration_ms - rep.ideal_iteration_ms,
        "straggler_probability": rep.straggler_probability,
        "congestion_share_ms": e_alone - e_calm,
        "servers": servers,
        "limits": _limits(instance, job, solution, room, rep.expected_iteration_ms),
        "alternatives": _alternatives(instance, job, solution, room, e_alone),
    }


def explain(
    instance: Instance, solution: Solution, job: str | None = None, *, jobs: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{job: explanation}`` (keys :data:`JOB_KEYS`) for every placed job of ``solution``, or
    for ``job`` alone, or for ``jobs``.  The solution's placement is checked by the validator first (an invalid
    one raises :class:`~placement.errors.InvalidInputError`)."""
    from placement.errors import InvalidInputError

    problems = [
        str(v)
        for v in validate(
            instance, solution.assignment, shards=solution.shards, stages=solution.stages, gpus=solution.gpus
        )
    ]
    wanted = [job] if job is not None else list(jobs) if jobs is not None else None
    problems += [f"job {j!r} is not placed by the solution" for j in wanted or () if j not in solution.assignment]
    if problems:
        raise InvalidInputError(problems, source="the solution to explain")
    room = _room(instance, solution)
    ev = evaluate(instance, solution.assignment, solution.shards, solution.stages, solution.gpus)
    chosen = wanted if wanted is not None else [j.id for j in instance.jobs if j.id in solution.assignment]
    return {jid: _explain_job(instance, instance.job_by_id[jid], solution, room, ev) for jid in chosen}


SUMMARY_COLUMNS = (
    "job",
    "E[T]",
    "ideal = compute + comm",
    "penalty",
    "P(straggle)",
    "top tail share",
    "limits",
    "move Δobj",
    "swap Δobj",
)
"""The columns of :func:`summary_rows` (times in ms)."""


def summary_rows(explained: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One line of text cells per job (:data:`SUMMARY_COLUMNS`), the largest straggler penalty
    first: what the CLI's table and the HTML reports print."""
    rows: list[tuple[str, ...]] = []
    for jid, e in sorted(explained.items(), key=lambda kv: -kv[1]["straggler_penalty_ms"]):
        comm_cell = " + ".join(f"{v:.2f} {k.replace('_', '-')}" for k, v in e["communication"].items())
        tail_sid, tail = max(e["servers"].items(), key=lambda kv: kv[1]["tail_share_ms"])
        move, swap = e["alternatives"]["move"], e["alternatives"]["swap"]
        rows.append(
            (
                jid,
                f"{e['expected_iteration_ms']:.2f}",
                f"{e['ideal_iteration_ms']:.2f} = {e['compute_ms']:.2f} + {comm_cell}",
                f"{e['straggler_penalty_ms']:.2f}",
                f"{e['straggler_probability']:.3f}",
                f"{tail_sid} {tail['tail_share_ms']:.2f}",
                ", ".join(e["limits"]) or "-",
                "-" if move is None else f"{move['from']}->{move['to']} {move['delta_objective']:+.3g}",
                "-"
                if swap is None
                else f"{swap['from']}<->{swap['to']} w/ {swap['with_job']} {swap['delta_objective']:+.3g}",
            )
        )
    return rows
