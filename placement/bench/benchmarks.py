"""Benchmarks quoted in the README and the issue notes (medians, side by side, one run).

    python -m placement.bench evaluator            # 1,000-server / 1,000-job placement
    python -m placement.bench methods pod256       # every method on one instance
    python -m placement.bench exact pod256         # exact methods: time to proof or gap at the limit
    python -m placement.bench replan               # re-planning on 2,048 GPUs, 5% of servers changed
    python -m placement.bench reductions library/medium/calm pod256   # MILP with/without pruning, classes
    python -m placement.bench simulate             # the simulator on ElasticFlow cluster04: speed and scaling
    python -m placement.bench mapping llm512       # hybrid jobs: what the mapping of groups to stages buys
    python -m placement.bench online               # the proactive loop: JCT with bootstrap intervals over seeds
    python -m placement.bench serve                # placement serve under load and kill -9 faults

Timings are wall-clock medians over repeats on a shared machine: compare ratios within
one run, not numbers across runs.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from placement.bench.online import CELLS
from placement.bench.online_cli import add_online, run_online
from placement.evaluation.bounds import lower_bound
from placement.evaluation.evaluate import evaluate
from placement.evaluation.validate import validate
from placement.formats.instance import checked
from placement.formulations.index import index_instance
from placement.formulations.milp import MilpBackend
from placement.instances import resolve_instance
from placement.instances.generate import generate
from placement.methods.exact import run_exact
from placement.methods.greedy import greedy
from placement.model.records import Instance, Slowdown, Solution
from placement.problem.shards import complete_shards
from placement.solving.driver import moved_workers, solve
from placement.solving.options import Options
from placement.solving.registry import REGISTRY

__all__ = ["bench_evaluator", "bench_methods", "main"]


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _objective(sol: Solution) -> float:
    """The objective of a run that must have placed the jobs (the benchmarks' instances are feasible)."""
    if sol.objective is None:
        raise RuntimeError(f"{sol.method} on {sol.instance} ended {sol.status}: {sol.stats.get('message', '')}")
    return sol.objective


def bench_evaluator(repeats: int = 7) -> list[tuple[str, float, int, int]]:
    """Median seconds of :func:`placement.evaluate` on 1,000-server placements of 1,000 jobs."""

    rows = []
    for regime in ("hot", "heavy-tail", "correlated"):
        inst = generate(
            racks=25,
            servers_per_rack=40,
            gpus_per_server=8,
            jobs=1000,
            job_mix="elasticflow",
            regime=regime,
            scenarios=32,
            load=0.9,
            seed=1,
        )
        sol = solve(inst, "spread")
        asg = sol.assignment
        evaluate(inst, asg)  # build the cached index once, as a scheduler would
        t = _median_time(functools.partial(evaluate, inst, asg), repeats)
        pairs = sum(len(a) for a in asg.values())
        rows.append((regime, t, len(asg), pairs))
    return rows


def bench_methods(
    instance: str, time_limit: float, seeds: int
) -> list[tuple[str, float, float | None, float | None, str]]:

    inst = resolve_instance(instance)
    rows = []
    for m in REGISTRY:
        if m.kind == "exact":
            continue
        walls, objs, status = [], [], ""
        for seed in range(seeds):
            sol = solve(inst, m.name, time_limit_s=time_limit, seed=seed)
            walls.append(float(sol.stats["wall_s"]))
            status = sol.status.value
            if sol.objective is not None:
                objs.append(sol.objective)
        rows.append(
            (m.name, statistics.median(walls), statistics.median(objs) if objs else None, lower_bound(inst), status)
        )
    return rows


def bench_exact(instance: str, time_limit: float, reference_limit: float) -> None:
    """Each exact method at ``time_limit``; the best-known optimum from a long HiGHS run;
    the expected-time excess that ``comm_optimal`` and ``consolidate`` leave over it."""

    inst = resolve_instance(instance)
    print(f"{'method':13s} {'status':9s} {'wall s':>7s} {'objective':>11s} {'bound':>11s} {'gap':>8s}")
    sols = {}
    for m in [r.name for r in REGISTRY if r.kind == "exact" and r.name != "brute_force" and r.available]:
        sol = solve(inst, m, time_limit_s=time_limit)
        sols[m] = sol
        gap = "-" if sol.gap is None else f"{100 * sol.gap:.3f}%"
        print(
            f"{m:13s} {sol.status.value:9s} {sol.stats['wall_s']:7.1f} {sol.objective:11.3f} "
            f"{'-' if sol.bound is None else f'{sol.bound:11.3f}':>11s} {gap:>8s}"
        )
    ref = solve(inst, "milp_highs", time_limit_s=reference_limit)
    best = min([_objective(ref)] + [s.objective for s in sols.values() if s.objective is not None])
    bound = max(b for b in [ref.bound] + [s.bound for s in sols.values()] if b is not None)
    print(
        f"reference: milp_highs {reference_limit:g} s: {ref.status.value}, objective {ref.objective:.3f}, "
        f"bound {ref.bound:.3f}; best known {best:.3f}, best bound {bound:.3f}"
    )
    for m in ("comm_optimal", "consolidate", "greedy", "auto"):
        sol = solve(inst, m, time_limit_s=time_limit)
        print(
            f"{m:13s} objective {_objective(sol):11.3f}  excess over best known {100 * (_objective(sol) / best - 1):7.3f}%"
        )


def bench_replan(max_moves: int = 50, time_limit: float = 4.5, full_limit: float = 30.0, seed: int = 1) -> None:
    """Solve a 2,048-GPU fleet, change 5% of the servers' slowdown estimates (healthy ones
    turn hot, hot ones recover), then re-plan with a move budget against a full re-solve."""
    import dataclasses

    import numpy as np

    old = generate(
        topology="multi-pod",
        pods=4,
        racks=4,
        servers_per_rack=16,
        gpus_per_server=8,
        regime="hot",
        hot_fraction=0.2,
        jobs=200,
        load=0.8,
        seed=5,
        name="fleet2k",
    )
    prev = solve(old, "auto", time_limit_s=full_limit)
    rng = np.random.default_rng(seed)
    servers = list(old.servers)
    for i in rng.choice(len(servers), size=len(servers) // 20, replace=False):
        s = servers[i]
        hot = Slowdown((1.0, 1.5, 3.0), (0.55, 0.35, 0.10))
        servers[i] = dataclasses.replace(
            s, slowdown=hot if s.slowdown.mean() < 1.05 else Slowdown((1.0, 1.2), (0.99, 0.01))
        )
    new = checked(old.replace(servers=tuple(servers)))
    stale = evaluate(new, prev.assignment).objective
    t = time.perf_counter()
    rp = solve(new, "local_search", time_limit_s=time_limit, previous=prev.assignment, max_moves=max_moves)
    wall = time.perf_counter() - t
    full = solve(new, "auto", time_limit_s=full_limit)
    print(
        f"fleet: {len(new.servers)} servers, {sum(s.free_gpus for s in new.servers)} GPUs, {len(new.jobs)} jobs; "
        f"{len(servers) // 20} servers changed"
    )
    print(f"previous placement under the new estimates: {stale:.2f}")
    print(
        f"re-plan (<= {max_moves} moves, {time_limit:g} s limit): {rp.objective:.2f}, {rp.stats['moved_workers']} moved, {wall:.2f} s wall"
    )
    print(
        f"full re-solve (auto, {full_limit:g} s): {full.objective:.2f}, {moved_workers(prev.assignment, full.assignment)} moved"
    )
    if stale > _objective(full):
        print(
            f"share of the full re-solve's improvement recovered: {100 * (stale - _objective(rp)) / (stale - _objective(full)):.1f}%"
        )


def bench_reductions(instances: list[str], time_limit: float, backend: str = "highs") -> None:
    """The MILP with and without the start handed to the solver, incumbent pruning and
    class aggregation, side by side from the same greedy start (returned when the solver
    does worse); objective from the evaluator, bound from the solver."""

    print(f"milp_{backend}, {time_limit:g} s each, greedy start; objective = evaluator's")
    print(
        f"{'instance':28s} {'variant':12s} {'vars':>7s} {'wall_s':>7s} {'objective':>11s} {'bound':>11s} {'gap%':>7s} status"
    )
    for name in instances:
        inst = resolve_instance(name)
        start = greedy(inst, Options(time_limit_s=time_limit)).assignment
        cutoff = evaluate(inst, start, complete_shards(inst, start, None)).objective if start is not None else None
        for label, prune, agg, warm in (
            ("plain", False, False, False),
            ("start", False, False, True),
            ("pruned", True, False, False),
            ("classes", False, True, False),
            ("all", True, True, True),
        ):
            size = index_instance(inst, cutoff=cutoff if prune else None, aggregate=agg).size
            t = time.perf_counter()
            out = run_exact(
                inst,
                Options(time_limit_s=time_limit, start=start),
                MilpBackend(backend, aggregate=agg, warm=warm),
                prune=prune,
            )
            wall = time.perf_counter() - t
            sol_obj = evaluate(inst, out.assignment).objective if out.assignment else float("nan")
            if out.assignment is not None:
                assert not validate(inst, out.assignment)
            b = out.bound
            gap = 100 * (sol_obj - b) / sol_obj if b is not None and sol_obj else float("nan")
            print(
                f"{name:28s} {label:12s} {size:7d} {wall:7.2f} {sol_obj:11.3f} {b if b is not None else float('nan'):11.3f} "
                f"{gap:7.3f} {'optimal' if out.optimal else 'feasible'}"
            )


def bench_simulate(full: bool = True, auto_jobs: int = 1000) -> None:
    """The simulator on the ElasticFlow cluster04 trace (15,802 jobs over two months) with
    ``markov`` dynamics and oracle knowledge: ``greedy`` on the whole trace on 1,024 GPUs; how
    the cost grows with jobs and with servers; the per-decision cost of ``auto``."""
    from placement.simulation.engine import simulate
    from placement.simulation.workload import read_trace

    def fleet(racks: int) -> Instance:
        return generate(
            racks=racks,
            servers_per_rack=8,
            gpus_per_server=8,
            regime="hot",
            hot_fraction=0.2,
            jobs=1,
            seed=7,
            name=f"sim{racks * 64}",
        )

    def one(cluster: Instance, jobs: int | None, method: str = "greedy", limit: float = 1.0) -> dict[str, float]:
        total = sum(s.free_gpus for s in cluster.servers)
        w = read_trace("elasticflow-cluster04", max_jobs=jobs, max_workers=total, drop_wider=True)
        t = time.perf_counter()
        s = simulate(  # placed at arrival (re-planning's cost: python -m placement.bench online)
            cluster, w, method=method, knowledge="oracle", dynamics="markov", decision_time_limit_s=limit, replan="off"
        ).summary
        return {
            "jobs": len(w.jobs),
            "wall": time.perf_counter() - t,
            "decisions": s["decisions"],
            "p50": s["decision_time_p50_s"],
            "p99": s["decision_time_p99_s"],
            "util": s["gpu_utilization"],
        }

    c1024 = fleet(16)
    print(f"{'what':34s} {'jobs':>6s} {'GPUs':>5s} {'wall s':>8s} {'decisions':>9s} {'per decision p50/p99 ms':>24s}")

    def show(what: str, gpus: int, r: dict[str, float]) -> None:
        print(
            f"{what:34s} {r['jobs']:6.0f} {gpus:5d} {r['wall']:8.1f} {r['decisions']:9.0f} "
            f"{1000 * r['p50']:11.2f} / {1000 * r['p99']:.2f}"
        )

    if full:
        show("greedy, whole trace", 1024, one(c1024, None))
    for n in (1000, 2000, 4000, 8000):
        show(f"greedy, first {n} jobs", 1024, one(c1024, n))
    for racks in (4, 8, 32):
        show(f"greedy, first 4000 jobs, {racks * 8} servers", racks * 64, one(fleet(racks), 4000))
    r = one(c1024, auto_jobs, "auto", 1.0)
    show(f"auto (1 s limit), first {auto_jobs} jobs", 1024, r)
    per_job = r["wall"] / r["jobs"]
    print(f"auto: {per_job:.3f} s of wall time per job: about {600 / per_job:,.0f} jobs of this trace in 10 minutes")


def bench_mapping(instance: str, time_limit: float, seed: int = 0) -> None:
    """For each method's placement of ``instance``, its hybrid jobs' E[T] on the same servers
    in Megatron's default rank order (what a scheduler that knows nothing of stages runs) and
    in the best mapping found (:func:`placement.problem.hybrid.best_stages`), side by side; the
    objective both ways.  Every figure from the evaluator."""
    from placement.integrations.ranks import server_order
    from placement.problem.hybrid import best_stages, matrix_ids, rank_order_stages

    inst = resolve_instance(instance)
    hybrid = [j for j in inst.jobs if j.is_hybrid]
    print(f"{instance}: {len(hybrid)} of {len(inst.jobs)} jobs hybrid-parallel; E[T] in ms, objective = sum w E[T]")
    print(f"{'method':13s} {'objective (rank order)':>22s} {'objective (best mapping)':>24s} {'saved':>7s}  worst job")
    for method in ("consolidate", "first_fit", "greedy", "auto"):
        sol = solve(inst, method, time_limit_s=time_limit, seed=seed)
        if not sol.status.has_placement:
            print(f"{method:13s} {sol.status.value}")
            continue
        ranked, best = dict(sol.stages), dict(sol.stages)
        for j in hybrid:
            if j.id not in sol.assignment:
                continue
            jp = inst.job_pos[j.id]
            # the rank order over the servers in ring order (as the exports deal ranks)
            x = {inst.server_pos[s]: sol.assignment[j.id][s] for s in server_order(inst, sol.assignment[j.id])}
            ranked[j.id] = matrix_ids(inst, rank_order_stages(j, x))
            best[j.id] = matrix_ids(inst, best_stages(inst, jp, x)[0])
        a = evaluate(inst, sol.assignment, sol.shards, ranked)
        b = evaluate(inst, sol.assignment, sol.shards, best)
        assert not validate(inst, sol.assignment, shards=sol.shards, stages=ranked)
        assert not validate(inst, sol.assignment, shards=sol.shards, stages=best)
        worst = max(
            (j.id for j in hybrid if j.id in sol.assignment),
            key=lambda jid: a.jobs[jid].expected_iteration_ms - b.jobs[jid].expected_iteration_ms,
        )
        ra, rb = a.jobs[worst].expected_iteration_ms, b.jobs[worst].expected_iteration_ms
        print(
            f"{method:13s} {a.objective:22.1f} {b.objective:24.1f} {100 * (1 - b.objective / a.objective):6.1f}%  "
            f"{worst} {ra:.1f} -> {rb:.1f}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m placement.bench")
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("evaluator")
    e.add_argument("--repeats", type=int, default=7)
    m = sub.add_parser("methods")
    m.add_argument("instance", nargs="?", default="pod256")
    m.add_argument("--time-limit", type=float, default=10.0)
    m.add_argument("--seeds", type=int, default=3)
    x = sub.add_parser("exact")
    x.add_argument("instance", nargs="?", default="pod256")
    x.add_argument("--time-limit", type=float, default=10.0)
    x.add_argument("--reference-limit", type=float, default=300.0)
    r = sub.add_parser("replan")
    r.add_argument("--max-moves", type=int, default=50)
    r.add_argument("--time-limit", type=float, default=4.5)
    rd = sub.add_parser("reductions")
    rd.add_argument("instances", nargs="+")
    rd.add_argument("--time-limit", type=float, default=10.0)
    rd.add_argument("--backend", choices=("highs", "cbc"), default="highs")
    bd = sub.add_parser("bounds")
    bd.add_argument("instances", nargs="+")
    bd.add_argument("--objectives", nargs="*", default=[], help="runs.csv files of placement compare")
    gp = sub.add_parser("gaps")
    gp.add_argument("--family", action="store_true", required=True, help="the seeded fleet family")
    gp.add_argument("--time-limits", default="10,60", help="comma-separated seconds")
    gp.add_argument("--members", type=int, default=None, help="the first N members (default: all)")
    gp.add_argument("--seed", type=int, default=0)
    gp.add_argument("-o", "--out", default="benchmarks/gaps-family")
    cb = sub.add_parser("calibrate", help="the calibration's goals on Pollux's measured step times")
    cb.add_argument(
        "--data", default=None, help="the pollux-placements folder [default: $PLACEMENT_DATA or ../shared/data]"
    )
    cb.add_argument("-o", "--out", default="benchmarks/calibrate")
    mp = sub.add_parser("mapping")
    mp.add_argument("instance", nargs="?", default="llm512")
    mp.add_argument("--time-limit", type=float, default=10.0)
    sm = sub.add_parser("simulate")
    sm.add_argument("--no-full", action="store_true", help="skip the whole-trace run")
    sm.add_argument("--auto-jobs", type=int, default=1000)
    add_online(sub)
    pe = sub.add_parser(
        "peers", help="the peers' schedulers (Tiresias, Gavel, SRTF, FIFO) with their placement and ours"
    )
    pe.add_argument("--cells", default=None, help="comma-separated [default: the README window, cluster03, hot192]")
    pe.add_argument("--grid", action="store_true", help="the default cells and the online grid's")
    pe.add_argument("--peers", default=None, help="comma-separated [default: all]")
    pe.add_argument("--seeds", default="0,1,2,3,4")
    pe.add_argument("--parallel", type=int, default=1)
    pe.add_argument("-o", "--out", default="benchmarks/peers")
    pe.add_argument(
        "--ceiling",
        action="store_true",
        help="each peer's queue with the clairvoyant placement too (<peer>+clairvoyant)",
    )
    pl = sub.add_parser("pal", help="PAL's setup: packed, PM-First, PAL and auto on the eight Sia-Philly workloads")
    pl.add_argument(
        "--data", default=None, help="the pal-variability folder [default: $PLACEMENT_DATA or ../shared/data]"
    )
    pl.add_argument(
        "--site",
        default="longhorn",
        choices=("longhorn", "frontera", "ls6"),
        help="whose measured GPUs the factors are drawn from (Longhorn: PAL's setup; Frontera and LS6: bundled)",
    )
    pl.add_argument("--workloads", default="1,2,3,4,5,6,7,8")
    pl.add_argument(
        "--trace", default=None, help="another trace instead of the eight (every job on Longhorn's sgemm factors)"
    )
    pl.add_argument("--window-start-s", type=float, default=0.0, help="with --trace: its window's start")
    pl.add_argument("--window-hours", type=float, default=72.0, help="with --trace: its window's length")
    pl.add_argument("--configs", default=None, help="comma-separated [default: all]")
    pl.add_argument("--seeds", default="0,1,2", help="GPU layout seeds")
    pl.add_argument("--sweep-seeds", default=None, help="the sweep's seeds [default: --seeds]")
    pl.add_argument("--sweep-workloads", default=None, help="the sweep's workloads [default: --workloads]")
    pl.add_argument("--penalties", default="1.7,1.0,1.5,2.0,2.5,3.0", help="the first is PAL's; the rest: the sweep")
    pl.add_argument("--own", default="benchmarks/pal-crosscheck/pal-own.json", help="PAL's own simulator's figures")
    pl.add_argument("--parallel", type=int, default=1)
    pl.add_argument("--report-only", action="store_true", help="run nothing: report the runs already there")
    pl.add_argument("-o", "--out", default=None, help="default benchmarks/pal (benchmarks/pal-SITE for another site)")
    pr = sub.add_parser("probes", help="the measured straggler law against Greyhound's probe jobs (Table 1)")
    pr.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9")
    pr.add_argument("-o", "--out", default="benchmarks/probes")
    sv = sub.add_parser("serve", help="placement serve under load (256 to 4,096 GPUs) and kill -9 faults")
    sv.add_argument("--sizes", default="256,1024,4096", help="comma-separated GPUs")
    sv.add_argument("--duration-s", type=float, default=60.0, help="seconds of load per size")
    sv.add_argument("--faults", type=int, default=20, help="kill -9 rounds (0: none)")
    sv.add_argument("-o", "--out", default="benchmarks/serve")
    a = ap.parse_args(argv)
    if a.what == "serve":
        from placement.bench.serve import bench_serve, report

        res = bench_serve(
            [int(x) for x in a.sizes.split(",")], duration_s=a.duration_s, faults=a.faults, out=Path(a.out)
        )
        print(report(res))
        return
    if a.what == "probes":
        from placement.bench.probes import bench_probes, probes_report

        print(probes_report(bench_probes(Path(a.out), seeds=[int(x) for x in a.seeds.split(",")])))
        return
    if a.what == "pal":
        import os

        from placement.bench.pal import CONFIGS as PAL_CONFIGS
        from placement.bench.pal import bench_pal

        base = Path(os.environ.get("PLACEMENT_DATA", Path.cwd().parent / "shared" / "data"))
        chosen = a.configs.split(",") if a.configs else list(PAL_CONFIGS)
        if set(chosen) - set(PAL_CONFIGS):
            ap.error(f"unknown configuration {', '.join(sorted(set(chosen) - set(PAL_CONFIGS)))}")
        out = Path(a.out or ("benchmarks/pal" if a.site == "longhorn" else f"benchmarks/pal-{a.site}"))
        try:
            bench_pal(
                Path(a.data) if a.data else base / "pal-variability",
                out,
                site=a.site,
                workloads=[int(x) for x in a.workloads.split(",")],
                configs=chosen,
                seeds=[int(x) for x in a.seeds.split(",")],
                penalties=[float(x) for x in a.penalties.split(",")],
                sweep_seeds=[int(x) for x in a.sweep_seeds.split(",")] if a.sweep_seeds else None,
                sweep_workloads=[int(x) for x in a.sweep_workloads.split(",")] if a.sweep_workloads else None,
                own=Path(a.own),
                trace=Path(a.trace) if a.trace else None,
                trace_options={"window_start_s": a.window_start_s, "window_s": 3600.0 * a.window_hours}
                if a.trace
                else None,
                parallel=a.parallel,
                report_only=a.report_only,
            )
        except FileNotFoundError as e:  # PAL's workloads or profiles not where --data says
            ap.error(f"{e} (give --data or PLACEMENT_DATA)")
        print((out / "pal.md").read_text())
        return
    if a.what == "peers":
        from placement.bench.peers import PEERS, bench_peers, cells_of

        cells = a.cells.split(",") if a.cells else list(cells_of(a.grid))
        peers = a.peers.split(",") if a.peers else list(PEERS)
        unknown = [c for c in cells if c not in CELLS] + [p for p in peers if p not in PEERS]
        if unknown:
            ap.error(f"unknown cell or peer {', '.join(unknown)} (peers: {', '.join(PEERS)})")
        bench_peers(
            cells, peers, [int(x) for x in a.seeds.split(",")], Path(a.out), parallel=a.parallel, ceiling=a.ceiling
        )
        print((Path(a.out) / "peers.md").read_text())
        return
    if a.what == "online":
        run_online(a, ap)
        return
    if a.what == "gaps":
        from placement.bench.gaps import bench_gaps_family

        bench_gaps_family([float(x) for x in a.time_limits.split(",")], Path(a.out), a.seed, a.members)
        return
    if a.what == "bounds":
        from placement.bench.gaps import bench_bounds

        bench_bounds(a.instances, a.objectives)
        return
    if a.what == "calibrate":
        import os

        base = Path(os.environ.get("PLACEMENT_DATA", Path.cwd().parent / "shared" / "data"))
        from placement.bench.calibrate import bench_calibrate

        bench_calibrate(Path(a.data) if a.data else base / "pollux-placements", Path(a.out))
        return
    if a.what == "mapping":
        bench_mapping(a.instance, a.time_limit)
        return
    if a.what == "simulate":
        bench_simulate(not a.no_full, a.auto_jobs)
        return
    if a.what == "reductions":
        bench_reductions(a.instances, a.time_limit, a.backend)
        return
    if a.what == "replan":
        bench_replan(a.max_moves, a.time_limit)
        return
    if a.what == "exact":
        bench_exact(a.instance, a.time_limit, a.reference_limit)
        return
    if a.what == "evaluator":
        print(f"{'regime':12s} {'median s':>9s} {'jobs':>5s} {'job-server pairs':>16s}")
        for regime, t, jobs, pairs in bench_evaluator(a.repeats):
            print(f"{regime:12s} {t:9.4f} {jobs:5d} {pairs:16d}")
    else:
        rows = bench_methods(a.instance, a.time_limit, a.seeds)
        best = min(r[2] for r in rows if r[2] is not None)
        print(
            f"{'method':13s} {'status':9s} {'median wall s':>13s} {'median objective':>16s} {'ratio to best':>13s} {'excess over LB':>14s}"
        )
        for name, wall, obj, lb, status in rows:
            ratio = "-" if obj is None else f"{obj / best:.4f}"
            exc = "-" if obj is None or lb is None else f"{100 * (obj - lb) / lb:.2f}%"
            print(
                f"{name:13s} {status:9s} {wall:13.3f} {'-' if obj is None else f'{obj:16.2f}':>16s} {ratio:>13s} {exc:>14s}"
            )
