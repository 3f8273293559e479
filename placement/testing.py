"""Property-based testing of placements, for users: hypothesis strategies that build
valid instances by construction, placements for them, and :func:`check_solution`.

>>> from hypothesis import given
>>> from placement.testing import instances, check_solution
>>> import placement
>>> @given(instances())
... def test_greedy_is_valid(inst):
...     check_solution(inst, placement.solve(inst, "greedy"))

Instances from :func:`instances` with ``feasible=True`` (the default) carry a planted
placement that places every job, in ``instance.metadata["witness"]``: a method that
reports them infeasible is wrong.  Needs ``hypothesis`` (``pip install placement[test]``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover
    raise ImportError("placement.testing needs hypothesis: pip install 'placement[test]'") from e

from placement.evaluation.evaluate import evaluate
from placement.evaluation.validate import validate
from placement.formats.instance import instance_from_dict, instance_to_dict
from placement.model.records import (
    Assignment,
    CommTerm,
    Instance,
    Job,
    Link,
    Scenarios,
    Server,
    Slowdown,
    Solution,
    Status,
    Switch,
)
from placement.model.tolerances import REPORT_RTOL
from placement.problem.topology import cluster_of

__all__ = ["slowdowns", "instances", "assignments", "shard_placements", "check_solution", "REL_TOL"]

REL_TOL = REPORT_RTOL
"""Relative tolerance of :func:`check_solution` on reported numbers."""

_VALUES = st.sampled_from([1.0, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0])


@st.composite
def slowdowns(draw: st.DrawFn, max_points: int = 3) -> Slowdown:
    """A discrete distribution with values >= 1 and probabilities summing to 1."""
    k = draw(st.integers(1, max_points))
    values = sorted(set(draw(st.lists(_VALUES, min_size=k, max_size=k))))
    weights = draw(st.lists(st.integers(1, 20), min_size=len(values), max_size=len(values)))
    total = sum(weights)
    probs = [w / total for w in weights]
    probs[-1] = 1.0 - sum(probs[:-1])
    return Slowdown(tuple(values), tuple(probs))


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    min_servers: int = 1,
    max_servers: int = 5,
    max_jobs: int = 3,
    max_gpus: int = 4,
    scenarios: bool | None = None,
    heterogeneous: bool | None = None,
    capacities: bool | None = None,
    overrides: bool | None = None,
    disconnected: bool | None = None,
    admission: str | None = None,
    objective: str | None = None,
    feasible: bool = True,
    parameter_servers: bool | None = None,
    hybrid: bool = False,
    comm_terms: bool | None = None,
    gpu_factors: bool = False,
    locality_penalty: bool = False,
    congestion: bool = False,
) -> Instance:
    """A valid instance built by construction.

    ``None`` for a feature lets hypothesis choose.  ``hybrid``: some jobs are hybrid-parallel
    (tp 1-2, their planted groups whole, the planted matrix in ``metadata["witness_stages"]``).  With ``feasible`` every job is cut out
    of a planted placement (stored in ``metadata["witness"]``), so admission ``all`` can
    always be met; otherwise jobs may also be too large to fit.  ``comm_terms``: fitted
    all-reduce terms (``alpha``, ``gamma``) at some of the topology's bandwidth levels.
    ``gpu_factors``: servers with per-GPU factors (some by application class, some GPUs held
    named by index) and jobs naming classes.  ``locality_penalty``: a drawn penalty (1.0-3.0) on
    jobs spread over two or more servers.  ``congestion``: some switches carry a congestion law.
    """
    if not 1 <= min_servers <= max_servers:
        raise ValueError(f"need 1 <= min_servers <= max_servers, got {min_servers}, {max_servers}")
    if max_jobs < 1 or max_gpus < 1:
        raise ValueError("max_jobs and max_gpus must be >= 1")
    b = st.booleans()
    use_scen = draw(b) if scenarios is None else scenarios
    hetero = draw(b) if heterogeneous is None else heterogeneous
    caps = draw(b) if capacities is None else capacities
    use_over = draw(b) if overrides is None else overrides
    use_ps = draw(b) if parameter_servers is None else parameter_servers
    disc = draw(b) if disconnected is None else disconnected
    adm = draw(st.sampled_from(["all", "best_effort"])) if admission is None else admission
    obj = (
        draw(st.sampled_from(["weighted_expected_iteration_time", "weighted_expected_jct"]))
        if objective is None
        else objective
    )
    n = draw(st.integers(min_servers, max_servers))
    types = ["A", "B"] if hetero else ["A"]
    # topology: servers on racks, racks on a core; or a random connected graph
    n_racks = draw(st.integers(1, min(3, n)))
    bw = st.sampled_from([25.0, 50.0, 100.0, 200.0])
    switches = [
        Switch(w, draw(slowdowns()) if congestion else Slowdown()) for w in ["core"] + [f"r{r}" for r in range(n_racks)]
    ]
    links = [Link(f"r{r}", "core", draw(bw)) for r in range(n_racks)]
    rack_of = [draw(st.integers(0, n_racks - 1)) for _ in range(n)]
    isolated = draw(st.integers(0, n - 1)) if disc and n > 1 else None
    for i in range(n):
        if i != isolated:
            links.append(Link(f"s{i}", f"r{rack_of[i]}", draw(bw)))
    if draw(b) and n_racks >= 2:  # a cross link: not a tree any more
        links.append(Link("r0", f"r{n_racks - 1}", draw(bw)))
    servers = []
    for i in range(n):
        g = draw(st.integers(1, max_gpus))
        used = draw(st.integers(0, g - 1)) if draw(b) else 0
        servers.append(
            Server(
                id=f"s{i}",
                gpus=g,
                used_gpus=used,
                gpu_type=draw(st.sampled_from(types)),
                intra_bandwidth_gbps=draw(st.sampled_from([300.0, 600.0, 2400.0])),
                slowdown=Slowdown() if use_scen else draw(slowdowns()),
            )
        )
    comp = [("iso" if i == isolated else "main") for i in range(n)]
    free = [s.free_gpus for s in servers]
    n_jobs = draw(st.integers(1, max_jobs))
    jobs: list[Job] = []
    witness: dict[str, dict[str, int]] = {}
    witness_shards: dict[str, dict[str, int]] = {}
    witness_stages: dict[str, list[list[str]]] = {}
    cpu_need = [0.0] * n
    mem_need = [0.0] * n
    for k in range(n_jobs):
        jid = f"j{k}"
        c = draw(st.sampled_from(sorted(set(comp))))
        avail = [i for i in range(n) if comp[i] == c and free[i] > 0]
        alloc: dict[int, int] = {}
        tp = draw(st.sampled_from([1, 2])) if hybrid and draw(b) else 0  # 0: not a hybrid job
        if tp and not feasible:
            tp = 1  # no planted server with room for a group: groups of one fit anywhere
        if tp and feasible:
            avail = [i for i in avail if free[i] >= tp]
        if feasible and avail:
            chosen = draw(st.lists(st.sampled_from(avail), min_size=1, max_size=len(avail), unique=True))
            for i in chosen:
                alloc[i] = max(tp, 1) * draw(st.integers(1, free[i] // max(tp, 1)))
                free[i] -= alloc[i]
            workers = sum(alloc.values())
        elif feasible:
            break
        else:
            workers = max(tp, 1) * draw(st.integers(1, 2 * max_gpus // max(tp, 1)))
        cpw = float(draw(st.integers(1, 4))) if caps and draw(b) else None
        mpw = float(draw(st.integers(1, 16))) if caps and draw(b) else None
        for i, kk in alloc.items():
            cpu_need[i] += kk * (cpw or 0)
            mem_need[i] += kk * (mpw or 0)
        speed = None
        if hetero and draw(b):
            need_types = {servers[i].gpu_type for i in alloc}
            extra = set(draw(st.lists(st.sampled_from(types), max_size=2)))
            speed = {t: draw(st.sampled_from([0.5, 1.0, 2.0])) for t in sorted((need_types | extra) or {types[0]})}
        over: dict[str, Any] = {}
        if use_over and draw(b):
            sid = f"s{draw(st.integers(0, n - 1))}"
            if use_scen:
                over[sid] = None  # filled once the scenario count is known
            else:
                over[sid] = draw(slowdowns())
        allowed = None
        if draw(b) and alloc:
            allowed = tuple(sorted({f"s{i}" for i in alloc} | {f"s{draw(st.integers(0, n - 1))}"}))
        max_srv = None
        if draw(b):
            max_srv = max(len(alloc), 1) + draw(st.integers(0, 1))
        # a parameter-server job: its planted shards on its planted workers' servers
        ps: dict[str, Any] = {}
        if tp:
            groups = workers // tp
            pp = draw(st.sampled_from([d for d in range(1, groups + 1) if groups % d == 0]))
            ps = {
                "architecture": "hybrid",
                "tp": tp,
                "pp": pp,
                "dp": groups // pp,
                "microbatches": draw(st.integers(1, 4)),
                "activation_mb": float(draw(st.sampled_from([0, 16, 256]))),
            }
            if alloc:
                seq = [f"s{i}" for i in sorted(alloc) for _ in range(alloc[i] // tp)]
                witness_stages[jid] = [seq[s * (groups // pp) : (s + 1) * (groups // pp)] for s in range(pp)]
        elif use_ps and draw(b):
            n_shards = draw(st.integers(1, 3))
            ps = {"architecture": "ps", "ps_shards": n_shards}
            if caps and draw(b):
                ps["ps_cpus"] = float(draw(st.integers(1, 2)))
            if caps and draw(b):
                ps["ps_memory_gb"] = float(draw(st.integers(1, 4)))
            if alloc:
                homes = sorted(alloc)
                z: dict[int, int] = {}
                for _ in range(n_shards):
                    i = draw(st.sampled_from(homes))
                    z[i] = z.get(i, 0) + 1
                for i, kk in z.items():
                    cpu_need[i] += kk * ps.get("ps_cpus", 0.0)
                    mem_need[i] += kk * ps.get("ps_memory_gb", 0.0)
                witness_shards[jid] = {f"s{i}": kk for i, kk in z.items()}
        jobs.append(
            Job(
                id=jid,
                workers=workers,
                compute_ms=float(draw(st.integers(10, 300))),
                gradient_mb=float(draw(st.sampled_from([0, 10, 100, 1000]))),
                iterations=draw(st.integers(1, 10_000)),
                weight=float(draw(st.sampled_from([1, 1, 2, 5]))),
                gpu_speed=speed,
                cpus_per_worker=cpw,
                memory_gb_per_worker=mpw,
                max_servers=max_srv,
                allowed_servers=allowed,
                slowdown=over,
                **ps,
            )
        )
        if alloc:
            witness[jid] = {f"s{i}": kk for i, kk in alloc.items()}
    if caps:
        servers = [
            Server(
                s.id,
                s.gpus,
                s.gpu_type,
                s.intra_bandwidth_gbps,
                s.used_gpus,
                cpus=cpu_need[i] + draw(st.integers(0, 8)),
                memory_gb=mem_need[i] + draw(st.integers(0, 32)),
                slowdown=s.slowdown,
            )
            for i, s in enumerate(servers)
        ]
    scen = None
    if use_scen:
        S = draw(st.integers(1, 4))
        w = draw(st.lists(st.integers(1, 10), min_size=S, max_size=S))
        probs = [x / sum(w) for x in w]
        probs[-1] = 1.0 - sum(probs[:-1])
        rows = {}
        for i in range(n):
            if draw(b):
                rows[f"s{i}"] = tuple(draw(st.lists(_VALUES, min_size=S, max_size=S)))
        scen = Scenarios(tuple(probs), rows)
        jobs = [
            Job(
                **{
                    **_job_fields(j),
                    "slowdown": {k: tuple(draw(st.lists(_VALUES, min_size=S, max_size=S))) for k in j.slowdown},
                }
            )
            for j in jobs
        ]
    terms: list[CommTerm] = []
    if draw(b) if comm_terms is None else comm_terms:
        levels = sorted({s.intra_bandwidth_gbps for s in servers} | {link.bandwidth_gbps for link in links})
        for level in draw(st.lists(st.sampled_from(levels), unique=True, max_size=len(levels))):
            alpha = draw(st.sampled_from([0.0, 0.2, 2.0]))
            gamma = draw(st.sampled_from([0.0, 5.0, 40.0, -1.0]))
            if gamma < 0:  # as negative as keeps every job's all-reduce non-negative, halved
                ring = [
                    8.0 * j.gradient_mb / level for j in jobs if j.workers > 1 and j.gradient_mb > 0 and not j.is_ps
                ]
                gamma = -0.5 * min(ring, default=0.0)
            terms.append(CommTerm(level, alpha, gamma))
    if gpu_factors:
        servers, jobs = _with_gpu_factors(draw, servers, jobs)
    inst = Instance(
        name="hypothesis",
        servers=tuple(servers),
        jobs=tuple(jobs),
        switches=tuple(switches),
        links=tuple(links),
        scenarios=scen,
        objective=obj,
        admission=adm,
        source="placement.testing.instances",
        comm_terms=tuple(terms),
        locality_penalty=draw(st.sampled_from([1.0, 1.3, 1.7, 3.0])) if locality_penalty else 1.0,
        metadata=(
            {"witness": witness, "witness_shards": witness_shards, "witness_stages": witness_stages} if feasible else {}
        ),
    )
    # through the loader: what the strategy builds is what a user's file would give
    return instance_from_dict(instance_to_dict(inst))


_FACTORS = st.sampled_from([0.9, 1.0, 1.0, 1.1, 1.3])


def _with_gpu_factors(draw: st.DrawFn, servers: list[Server], jobs: list[Job]) -> tuple[list[Server], list[Job]]:
    """``servers`` with drawn per-GPU factors (a list for every class, and some for class
    ``x``; held GPUs named by index) and ``jobs`` naming class ``x``, ``y`` or none."""
    out = []
    for s in servers:
        fs: dict[str, tuple[float, ...]] = {}
        if draw(st.booleans()):
            fs["*"] = tuple(draw(st.lists(_FACTORS, min_size=s.gpus, max_size=s.gpus)))
        if draw(st.booleans()):
            fs["x"] = tuple(draw(st.lists(_FACTORS, min_size=s.gpus, max_size=s.gpus)))
        held = None
        if s.used_gpus and draw(st.booleans()):
            held = tuple(draw(st.permutations(range(s.gpus)))[: s.used_gpus])
        out.append(dataclasses.replace(s, gpu_slowdowns=fs, held_gpus=held))
    classes = st.sampled_from([None, "x", "y"])
    return out, [dataclasses.replace(j, app_class=draw(classes)) for j in jobs]


def _job_fields(j: Job) -> dict[str, Any]:
    return {f: getattr(j, f) for f in Job.__dataclass_fields__}


@st.composite
def assignments(draw: st.DrawFn, instance: Instance, *, complete: bool = False) -> Assignment:
    """A placement of a subset of ``instance``'s jobs that respects GPU capacity, allowed
    servers and GPU types, ``max_servers`` and reachability (not CPU/memory or deadlines).
    ``complete=True`` returns the planted witness of :func:`instances`."""
    if complete:
        w = instance.metadata.get("witness")
        if w is None or len(w) < len(instance.jobs):
            raise ValueError("complete=True needs an instance from instances(feasible=True)")
        return {j: dict(a) for j, a in w.items()}
    free = {s.id: s.free_gpus for s in instance.servers}
    cl = cluster_of(instance)
    out: dict[str, dict[str, int]] = {}
    for job in draw(st.permutations(list(instance.jobs))):
        if not draw(st.booleans()):
            continue
        ok = [s.id for s in instance.servers if job.allows(s) and free[s.id] > 0]
        if not ok:
            continue
        first = draw(st.sampled_from(ok))
        pool = [s for s in ok if cl.reachable(first, s)]
        order = [first] + draw(st.permutations([s for s in pool if s != first]))
        if job.max_servers is not None:
            order = order[: job.max_servers]
        if sum(free[s] for s in order) < job.workers:
            continue
        need, alloc = job.workers, {}
        for s in order:
            k = min(free[s], need)
            if k:
                alloc[s] = k
                need -= k
            if not need:
                break
        for s, k in alloc.items():
            free[s] -= k
        out[job.id] = alloc
    return out


@st.composite
def shard_placements(draw: st.DrawFn, instance: Instance, assignment: Assignment) -> Assignment:
    """Shards for every parameter-server job ``assignment`` places: its ``ps_shards`` on
    servers drawn among its workers' servers and the servers they reach (counts and
    reachability respected; CPU, memory and ``max_servers`` not)."""
    cl = cluster_of(instance)
    out: dict[str, dict[str, int]] = {}
    for jid, a in assignment.items():
        job = instance.job_by_id[jid]
        if not job.is_ps or not a:
            continue
        first = next(iter(a))
        pool = [s.id for s in instance.servers if cl.reachable(first, s.id)]
        if job.allowed_servers is not None:
            pool = [s for s in pool if s in job.allowed_servers] or sorted(a)
        z: dict[str, int] = {}
        for _ in range(job.shards):
            sid = draw(st.sampled_from(pool))
            z[sid] = z.get(sid, 0) + 1
        out[jid] = z
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)


def check_solution(instance: Instance, solution: Solution) -> None:
    """Assert that ``solution`` is an honest answer for ``instance``.

    Status ``error`` (the method raised, or returned a placement the validator refused: the
    violations are in the message) fails.  Its placement passes the validator; every reported
    number equals the evaluator's;
    the bound does not exceed the objective; ``unplaced`` is exactly the jobs left out;
    ``infeasible`` is never claimed for an instance with a planted witness.
    Raises ``AssertionError`` naming what is wrong.
    """
    name = f"{solution.method} on {instance.name!r}"
    # a method that failed, or returned a placement the validator refused, never passes
    assert solution.status != Status.ERROR, f"{name}: status 'error': {solution.stats.get('message', '(no message)')}"
    witness: Mapping[str, Any] | None = instance.metadata.get("witness")
    witness_shards: Mapping[str, Any] | None = instance.metadata.get("witness_shards")
    witness_stages: Mapping[str, Any] | None = instance.metadata.get("witness_stages")
    if solution.status == Status.INFEASIBLE:
        assert not (
            witness is not None
            and len(witness) == len(instance.jobs)
            and not validate(instance, witness, shards=witness_shards, stages=witness_stages)
        ), f"{name}: status 'infeasible' but a valid placement of every job exists: {dict(witness or {})}"
    if not solution.status.has_placement:
        assert not solution.assignment, f"{name}: status {solution.status.value!r} with a placement"
        return
    violations = validate(
        instance, solution.assignment, solution.unplaced, shards=solution.shards, stages=solution.stages
    )
    assert not violations, f"{name}: invalid placement: " + "; ".join(map(str, violations))
    ev = evaluate(instance, solution.assignment, solution.shards, solution.stages, solution.gpus)
    assert solution.objective is not None and _close(solution.objective, ev.objective), (
        f"{name}: objective {solution.objective!r} but the evaluator computes {ev.objective!r}"
    )
    assert set(solution.jobs) == set(ev.jobs), (
        f"{name}: job reports for {sorted(solution.jobs)}, placed {sorted(ev.jobs)}"
    )
    for jid, r in ev.jobs.items():
        got = solution.jobs[jid]
        for field in ("expected_iteration_ms", "ideal_iteration_ms", "straggler_probability", "bandwidth_gbps"):
            assert _close(getattr(got, field), getattr(r, field)), (
                f"{name}: job {jid!r} {field} {getattr(got, field)!r}, evaluator {getattr(r, field)!r}"
            )
        assert got.servers == r.servers, f"{name}: job {jid!r} servers {got.servers}, evaluator {r.servers}"
        assert r.expected_iteration_ms >= r.ideal_iteration_ms * (1 - REL_TOL), f"{name}: job {jid!r} expected < ideal"
    assert set(solution.unplaced) == set(ev.unplaced), f"{name}: unplaced {solution.unplaced}, evaluator {ev.unplaced}"
    if solution.bound is not None:
        assert solution.bound <= ev.objective * (1 + REL_TOL) + 1e-9, (
            f"{name}: bound {solution.bound!r} above the objective {ev.objective!r}"
        )
