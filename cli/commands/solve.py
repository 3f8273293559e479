"""``placement solve``."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from placement.cli.common import (
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    START,
    FiniteRange,
    check_output,
    console,
    emit,
    err,
    guard,
    working,
)
from placement.errors import (
    InvalidInputError,
)


def _summary(inst: Any, sol: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from placement.problem.topology import cluster_of

    con = console()
    obj = "-" if sol.objective is None else f"{sol.objective:.6g}"
    bound = "-" if sol.bound is None else f"{sol.bound:.6g}"
    gap = "-" if sol.gap is None else f"{100 * sol.gap:.2f}%"
    unit = "ms" if inst.objective == "weighted_expected_iteration_time" else "s"
    total_w = sum(j.weight for j in inst.jobs)
    placed_w = sum(j.weight for j in inst.jobs if j.id in sol.jobs)
    con.print(
        f"[bold]{escape(sol.instance)}[/]  method={escape(sol.method)}  status={sol.status.value}  "
        f"objective={obj} {unit} ({inst.objective})  bound={bound}  gap={gap}  "
        f"wall={sol.stats.get('wall_s', 0):.2f}s"
    )
    con.print(
        f"placed {len(sol.jobs)} of {len(inst.jobs)} jobs, weight {placed_w:g} of {total_w:g} "
        f"(admission {inst.admission}); {len(inst.servers)} servers, "
        f"{sum(s.free_gpus for s in inst.servers)} free GPUs"
    )
    if sol.stats.get("path"):
        con.print("path: " + escape(" -> ".join(sol.stats["path"])))
    if "moved_workers" in sol.stats:
        con.print(f"re-planned: {sol.stats['moved_workers']} worker(s) moved (budget {sol.stats.get('max_moves')})")
    if sol.stats.get("message"):
        con.print(f"note: {escape(str(sol.stats['message']))}")
    if not sol.jobs:
        return
    cl = cluster_of(inst)
    t = Table(show_edge=False, pad_edge=False)
    for col, just in (
        ("job", "left"),
        ("workers", "right"),
        ("weight", "right"),
        ("expected ms", "right"),
        ("ideal ms", "right"),
        ("P(straggle)", "right"),
        ("Gbit/s", "right"),
        ("within", "left"),
        ("servers", "left"),
    ) + ((("shards", "left"),) if sol.shards else ()):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    blank = [""] * (6 if sol.shards else 5)
    for job in inst.jobs:
        r = sol.jobs.get(job.id)
        if r is None:
            t.add_row(escape(job.id), str(job.workers), f"{job.weight:g}", "unplaced", *blank)
            continue
        alloc = sol.assignment[job.id]
        srv = ", ".join(f"{s}:{k}" for s, k in alloc.items())
        z = sol.shards.get(job.id, {})
        both = sorted(set(alloc) | set(z))
        dom = cl.domain_of(both) if len(both) > 1 else None
        shard_cell = (escape(", ".join(f"{s}:{k}" for s, k in z.items()) or "-"),) if sol.shards else ()
        within = "one server" if dom is None else f"domain {dom.index} ({len(dom.servers)} servers)"
        t.add_row(
            escape(job.id),
            str(job.workers),
            f"{job.weight:g}",
            f"{r.expected_iteration_ms:.2f}",
            f"{r.ideal_iteration_ms:.2f}",
            f"{r.straggler_probability:.3f}",
            f"{r.bandwidth_gbps:g}",
            within,
            escape(srv if len(srv) < 60 else srv[:57] + "..."),
            *shard_cell,
        )
    con.print(t)
    con.print(
        escape(
            "expected ms: E[slowest worker's compute x slowdown] + all-reduce; ideal ms: the same with no slowdown; "
            "P(straggle): probability an iteration takes longer than ideal; Gbit/s: the bandwidth its all-reduce gets; "
            "within: the smallest bandwidth domain holding its servers."
            + (
                " Parameter-server jobs: + E[slowest shard server's push/pull x slowdown] instead of the all-reduce; "
                "shards: their servers."
                if sol.shards
                else ""
            )
        )
    )


_EXIT = {
    "optimal": EXIT_OK,
    "feasible": EXIT_OK,
    "infeasible": EXIT_INFEASIBLE,
    "no_solution": EXIT_NO_SOLUTION,
    "error": EXIT_INTERNAL,
}


@click.command()
@click.argument("instance", required=False)
@click.option("-m", "--method", default="auto", show_default=True, help="A name from `placement methods`.")
@click.option(
    "--time-limit",
    type=FiniteRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds for the whole command: loading and writing count; the solver gets the rest (at least 10%).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every random choice.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Solver threads (CP-SAT: interleaved search).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the solution JSON here (default: stdout).",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary table on stderr.")
@click.option(
    "--previous",
    type=click.Path(exists=True, dir_okay=False),
    help="Re-plan from this solution (the placement running now).",
)
@click.option("--max-moves", type=click.IntRange(min=0), default=None, help="With --previous: move at most K workers.")
@click.option(
    "--move-cost", type=FiniteRange(min=0), default=0.0, help="With --previous: objective units per moved worker."
)
@guard
def solve(
    instance: str | None,
    method: str,
    time_limit: float,
    seed: int,
    threads: int,
    output: str | None,
    quiet: bool,
    previous: str | None,
    max_moves: int | None,
    move_cost: float,
) -> None:
    """Solve INSTANCE (a file or a bundled name; default: the bundled `demo`).

    The solution JSON goes to --output, or to stdout when stdout is piped or redirected (on a
    terminal only the summary is shown); a summary table goes to stderr.
    """
    import placement
    from placement.formats import solution_to_dict
    from placement.instances import DEFAULT_INSTANCE

    check_output(output, instance, previous)
    inst = placement.resolve_instance(instance or DEFAULT_INSTANCE)
    placement.get_method(method)
    prev = prev_shards = None
    if previous:
        loaded = placement.load_solution(previous)
        prev, prev_shards = loaded.assignment, loaded.shards
        if method not in ("auto", "local_search"):
            raise InvalidInputError([f"--previous re-plans with -m auto or -m local_search, not {method!r}"])
    elif max_moves is not None or move_cost:
        raise InvalidInputError(["--max-moves and --move-cost need --previous"])
    budget = solve_budget(time_limit, len(inst.jobs), quiet)
    with working(f"solving {inst.name} with {method} (limit {budget:.3g} s)", show=not quiet) as news:

        def progress(step: str, objective: float | None, bound: float | None) -> None:
            obj = "-" if objective is None else f"{objective:.6g}"
            news(f"after {step}: best {obj}" + ("" if bound is None else f", bound {bound:.6g}"))

        sol = placement.solve(
            inst,
            method,
            time_limit_s=budget,
            seed=seed,
            threads=threads,
            previous=prev,
            previous_shards=prev_shards,
            max_moves=max_moves,
            move_cost=move_cost,
            progress=progress,
        )
    if output or not sys.stdout.isatty():
        emit(solution_to_dict(sol), output)
    elif not quiet:
        err("(the solution JSON goes to stdout when it is piped or redirected, or to a file with -o FILE)")
    if not quiet:
        _summary(inst, sol)
    sys.exit(_EXIT[sol.status.value])


def solve_budget(time_limit: float, jobs: int, quiet: bool) -> float:
    """The solver's share of ``--time-limit``: what loading left, less the time to write
    the solution and print the summary (measured: ~0.6 ms per job for the table), and at
    least 10% of the limit."""
    reserve = 0.2 + 2e-5 * jobs + (0.0 if quiet else 6e-4 * jobs)
    left = time_limit - (time.monotonic() - START) - reserve
    return max(0.1 * time_limit, left)
