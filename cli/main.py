"""``placement``: solve, validate, evaluate, list methods, generate instances.

Exit codes: 0 a solution (or success), 1 internal error, 2 invalid input or usage,
3 infeasible, 4 no solution within the limit.  Bad input never prints a traceback and
never leaves a partial output file (files are written by rename).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any, TypeVar

import click

from placement.errors import (
    InvalidInputError,
    MethodUnavailableError,
    SweepBusyError,
    UnknownMethodError,
    WorkerStartError,
)

__all__ = ["main", "cli", "EXIT_OK", "EXIT_INTERNAL", "EXIT_INPUT", "EXIT_INFEASIBLE", "EXIT_NO_SOLUTION"]

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_INFEASIBLE, EXIT_NO_SOLUTION = 0, 1, 2, 3, 4

_START = time.monotonic()
"""When the command started (this module is imported first thing): ``solve --time-limit``
covers loading and writing too."""

F = TypeVar("F", bound=Callable[..., Any])


class FiniteRange(click.FloatRange):
    """A float option in a range that is a number: ``nan`` and ``inf`` are refused (exit 2)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


def _err(msg: str) -> None:
    click.echo(msg, err=True)


def _guard(fn: F) -> F:
    """Map the package's exceptions to exit codes and one clear message."""

    @wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (InvalidInputError, UnknownMethodError, MethodUnavailableError, SweepBusyError) as e:
            _err(f"error: {e}")
            sys.exit(EXIT_INPUT)
        except WorkerStartError as e:
            _err(f"error: {e}")
            sys.exit(EXIT_INTERNAL)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # an internal error: say so, no traceback unless asked
            if os.environ.get("PLACEMENT_DEBUG"):
                raise
            _err(f"internal error: {type(e).__name__}: {e} (set PLACEMENT_DEBUG=1 for a traceback)")
            sys.exit(EXIT_INTERNAL)

    return inner  # type: ignore[return-value]


def _read_server_map(path: str, inst: Any) -> dict[str, str]:
    """``log_server -> server`` from a CSV; unknown instance servers and repeats refused by row."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InvalidInputError([f"--map {path}: cannot read it: {e}"]) from None
    out: dict[str, str] = {}
    problems = []
    if rows and not {"log_server", "server"} <= set(rows[0]):
        raise InvalidInputError(
            [f"--map {path}: needs the columns log_server, server; the header has {sorted(rows[0])}"]
        )
    for line, r in enumerate(rows, start=2):
        a, b = (r.get("log_server") or "").strip(), (r.get("server") or "").strip()
        if not a or not b:
            problems.append(f"--map {path} row {line}: empty log_server or server")
        elif b not in inst.server_by_id:
            problems.append(f"--map {path} row {line}: server {b!r} is not in the instance")
        elif a in out:
            problems.append(f"--map {path} row {line}: log server {a!r} is mapped twice")
        else:
            out[a] = b
    if problems:
        raise InvalidInputError(problems)
    return out


def _check_output(output: str | None, *inputs: str | None, option: str = "--output") -> None:
    """Refuse an output path that cannot be written, before any work: a folder, a missing or
    read-only folder, or one of the command's input files (exit 2)."""
    if not output:
        return
    from pathlib import Path

    p = Path(output)
    parent = p.parent if str(p.parent) else Path(".")
    problems = []
    if p.is_dir():
        problems.append(f"{option} {output}: is a folder; give a file name")
    elif not parent.is_dir():
        problems.append(f"{option} {output}: the folder {str(parent)!r} does not exist")
    elif not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        problems.append(f"{option} {output}: cannot write there (permission denied)")
    for i in inputs:
        if i and Path(i).exists() and p.exists() and p.resolve() == Path(i).resolve():
            problems.append(f"{option} {output}: is also an input of this command; it would be replaced")
    if problems:
        raise InvalidInputError(problems)


def _written(inst: Any) -> dict[str, Any]:
    """The document of an instance this program made, after the loader's checks: nothing is
    written that ``placement`` itself would refuse to read."""
    from placement.formats import instance_from_dict, instance_to_dict

    doc = instance_to_dict(inst)
    instance_from_dict(doc, source="the instance this command made")
    return doc


def _emit(doc: Any, output: str | None, note: str | None = None) -> None:
    """A JSON document to ``output`` (by rename: never half-written) or to stdout."""
    from placement.formats import write_json_atomic

    if output:
        write_json_atomic(output, doc)
        if note:
            _err(f"wrote {output}: {note}")
    else:
        click.echo(json.dumps(doc, indent=1))


@contextlib.contextmanager
def _working(what: str, *, show: bool) -> Iterator[Callable[[str], None]]:
    """A spinner with the elapsed time on stderr while a long step runs (on a terminal only);
    yields a function that sets the line's news."""
    if not (show and sys.stderr.isatty()):
        yield lambda news: None
        return
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn(escape(what)),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=_console(),
        transient=True,
    ) as p:
        task = p.add_task("", total=None)
        yield lambda news: p.update(task, description=escape(news))


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=False, width=max(100, Console(stderr=True).width))


def _summary(inst: Any, sol: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from placement.problem.topology import cluster_of

    con = _console()
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="placement")
def cli() -> None:
    """Straggler-aware placement of gang-scheduled training jobs on GPU clusters."""


_EXIT = {
    "optimal": EXIT_OK,
    "feasible": EXIT_OK,
    "infeasible": EXIT_INFEASIBLE,
    "no_solution": EXIT_NO_SOLUTION,
    "error": EXIT_INTERNAL,
}


@cli.command()
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
@_guard
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

    _check_output(output, instance, previous)
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
    with _working(f"solving {inst.name} with {method} (limit {budget:.3g} s)", show=not quiet) as news:

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
        _emit(solution_to_dict(sol), output)
    elif not quiet:
        _err("(the solution JSON goes to stdout when it is piped or redirected, or to a file with -o FILE)")
    if not quiet:
        _summary(inst, sol)
    sys.exit(_EXIT[sol.status.value])


def solve_budget(time_limit: float, jobs: int, quiet: bool) -> float:
    """The solver's share of ``--time-limit``: what loading left, less the time to write
    the solution and print the summary (measured: ~0.6 ms per job for the table), and at
    least 10% of the limit."""
    reserve = 0.2 + 2e-5 * jobs + (0.0 if quiet else 6e-4 * jobs)
    left = time_limit - (time.monotonic() - _START) - reserve
    return max(0.1 * time_limit, left)


def _checked_solution(inst: Any, path: str) -> Any:
    """Load SOLUTION and validate its placement; every violation listed, exit 2 if any."""
    import placement

    sol = placement.load_solution(path, inst)
    if sol.instance != inst.name:
        _err(f"warning: {path} is a solution of instance {sol.instance!r}, checked here against {inst.name!r}")
    violations = placement.validate(inst, sol.assignment, sol.unplaced, shards=sol.shards)
    if violations:
        _err(f"{path}: invalid placement, {len(violations)} violation(s):")
        for v in violations:
            _err(f"  - [{v.kind}] {v.message}")
        sys.exit(EXIT_INPUT)
    return sol


@cli.command()
@click.argument("instance")
@click.argument("solution", required=False)
@_guard
def validate(instance: str, solution: str | None) -> None:
    """Check INSTANCE, and SOLUTION's placement against it (every violation listed)."""
    import placement

    inst = placement.resolve_instance(instance)
    if solution is None:
        from placement.evaluation.feasibility import infeasibility_reason

        click.echo(f"{inst.name}: valid instance ({len(inst.servers)} servers, {len(inst.jobs)} jobs)")
        reason = infeasibility_reason(inst)
        if reason is not None:
            _err(f"warning: no placement places every job (admission 'all'): {reason}")
        return
    sol = _checked_solution(inst, solution)
    click.echo(f"{solution}: valid placement of {len(sol.assignment)} job(s) on {inst.name}")


@cli.command()
@click.argument("instance")
@click.argument("solution")
@click.option(
    "--monte-carlo", "samples", type=click.IntRange(min=2, max=10**7), default=None, help="Also simulate N iterations."
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the Monte Carlo draws.")
@_guard
def evaluate(instance: str, solution: str, samples: int | None, seed: int) -> None:
    """Recompute every figure of SOLUTION on INSTANCE with the exact evaluator (JSON on stdout)."""
    from dataclasses import asdict

    import placement

    inst = placement.resolve_instance(instance)
    sol = _checked_solution(inst, solution)
    ev = placement.evaluate(inst, sol.assignment, sol.shards)
    out: dict[str, Any] = {
        "instance": inst.name,
        "objective": ev.objective,
        "placed_weight": ev.placed_weight,
        "unplaced": list(ev.unplaced),
        "jobs": {j: asdict(r) for j, r in ev.jobs.items()},
    }
    if sol.shards:
        out["shards"] = {j: dict(z) for j, z in sol.shards.items()}
    if sol.objective is not None and abs(sol.objective - ev.objective) > 1e-6 * max(1.0, abs(ev.objective)):
        _err(f"note: the file says objective {sol.objective:.9g}; the evaluator computes {ev.objective:.9g}")
    if samples:
        mc = placement.monte_carlo(inst, sol.assignment, samples=samples, seed=seed, shards=sol.shards)
        out["monte_carlo"] = {
            "samples": mc.samples,
            "seed": mc.seed,
            "objective": mc.objective,
            "objective_ci95": mc.objective_ci,
            "jobs": {j: {"mean": m, "ci95": c} for j, (m, c) in mc.jobs.items()},
        }
    click.echo(json.dumps(out, indent=1))


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table, or JSON for scripts.",
)
def methods(fmt: str) -> None:
    """List the methods in preference order, with their kind and availability."""
    from placement.solving.registry import REGISTRY

    rows = [dict(m.as_dict()) for m in REGISTRY]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_edge=False, pad_edge=False)
    for c in ("name", "kind", "available", "description"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["name"], r["kind"], "yes" if r["available"] else "no", r["description"])
    Console(width=160).print(t)


_TOPOLOGY_OPTIONS = ("topology", "pods", "racks", "servers_per_rack", "nic_gbps", "uplink_gbps", "core_gbps")
_SERVER_OPTIONS = (
    "gpus_per_server",
    "gpu_types",
    "used_fraction",
    "single_gpu_fraction",
    "servers_from",
    "prove_optimum",
)
"""Generator options a real cluster's own servers replace (``import-k8s``)."""
"""Generator options that shape the network: an imported topology replaces them."""


def _generate_options(fn: F, *, topology: bool = True, servers: bool = True) -> F:
    from placement.instances.generate import JOB_MIXES, JOB_SOURCES, REGIMES, SERVER_SOURCES, TOPOLOGIES, GeneratorSpec

    d = GeneratorSpec()

    def opt(*decls: str, **kw: Any) -> tuple[tuple[str, ...], Callable[[F], F]]:
        return decls, click.option(*decls, **kw)

    opts = [
        opt(
            "--topology",
            type=click.Choice(TOPOLOGIES),
            default=d.topology,
            show_default=True,
            help="leaf-spine: racks under one spine; multi-pod: pods of racks under a core.",
        ),
        opt("--pods", type=click.IntRange(min=1), default=d.pods, show_default=True, help="Pods (multi-pod)."),
        opt("--racks", type=click.IntRange(min=1), default=d.racks, show_default=True, help="Racks (per pod)."),
        opt(
            "--servers-per-rack",
            type=click.IntRange(min=1),
            default=d.servers_per_rack,
            show_default=True,
            help="Servers under each top-of-rack switch.",
        ),
        opt(
            "--gpus-per-server",
            type=click.IntRange(min=1, max=4096),
            default=d.gpus_per_server,
            show_default=True,
            help="GPUs in each server (ignored with --servers-from).",
        ),
        opt(
            "--gpu-types",
            default=d.gpu_types,
            show_default=True,
            help="Comma-separated, assigned to racks in turn (H100, A100, V100, T4).",
        ),
        opt(
            "--nic-gbps",
            type=FiniteRange(min=0, min_open=True),
            default=d.nic_gbps,
            show_default=True,
            help="Server-to-rack-switch link bandwidth (Gbit/s).",
        ),
        opt(
            "--uplink-gbps",
            type=FiniteRange(min=0, min_open=True),
            default=d.uplink_gbps,
            show_default=True,
            help="Rack-switch uplink bandwidth (Gbit/s).",
        ),
        opt(
            "--core-gbps",
            type=FiniteRange(min=0, min_open=True),
            default=d.core_gbps,
            show_default=True,
            help="Pod-to-core bandwidth (multi-pod, Gbit/s).",
        ),
        opt(
            "--regime",
            type=click.Choice(REGIMES),
            default=d.regime,
            show_default=True,
            help="Slowdown distributions: calm, hot servers, heavy tails, correlated scenarios, PAI-calibrated.",
        ),
        opt(
            "--hot-fraction",
            type=FiniteRange(0, 1),
            default=d.hot_fraction,
            show_default=True,
            help="Share of servers that straggle often (regime hot).",
        ),
        opt(
            "--scenarios",
            type=click.IntRange(min=1),
            default=d.scenarios,
            show_default=True,
            help="Scenario count (correlated).",
        ),
        opt("--jobs", type=click.IntRange(min=1), default=d.jobs, show_default=True, help="Jobs to generate."),
        opt(
            "--job-mix",
            type=click.Choice(JOB_MIXES),
            default=d.job_mix,
            show_default=True,
            help="Gang sizes: ElasticFlow's distribution, mostly small, or mostly large.",
        ),
        opt(
            "--load",
            type=FiniteRange(0, 4, min_open=True),
            default=d.load,
            show_default=True,
            help="GPU demand / free GPUs (above 1 with best_effort).",
        ),
        opt(
            "--used-fraction",
            type=FiniteRange(0, 1),
            default=d.used_fraction,
            show_default=True,
            help="Share of GPUs already held by running jobs.",
        ),
        opt(
            "--single-gpu-fraction",
            type=FiniteRange(0, 1),
            default=d.single_gpu_fraction,
            show_default=True,
            help="Share of servers that are one-GPU slices of their shape (CPU and memory divided alike).",
        ),
        opt(
            "--cpu-memory/--no-cpu-memory",
            default=d.cpu_memory,
            show_default=True,
            help="Give servers CPU and memory capacities and jobs per-worker demands.",
        ),
        opt(
            "--admission",
            type=click.Choice(["all", "best_effort"]),
            default=d.admission,
            show_default=True,
            help="all: every job must be placed; best_effort: most weight placed first.",
        ),
        opt(
            "--objective",
            type=click.Choice(["weighted_expected_iteration_time", "weighted_expected_jct"]),
            default=d.objective,
            show_default=True,
            help="Sum of weighted expected iteration times (ms) or of weighted expected JCTs (s).",
        ),
        opt(
            "--servers-from",
            type=click.Choice(SERVER_SOURCES),
            default=d.servers_from,
            help="Draw server shapes (GPU model, count, CPU, memory) from a real trace.",
        ),
        opt(
            "--jobs-from",
            type=click.Choice(JOB_SOURCES),
            default=d.jobs_from,
            help="Take the jobs submitted in a window of a real trace (at most --jobs).",
        ),
        opt(
            "--window-start-s",
            type=FiniteRange(min=0),
            default=d.window_start_s,
            show_default=True,
            help="With --jobs-from: start of the trace window (s).",
        ),
        opt(
            "--window-hours",
            type=FiniteRange(min=0, min_open=True),
            default=d.window_hours,
            show_default=True,
            help="With --jobs-from: length of the trace window.",
        ),
        opt(
            "--ps-fraction",
            type=FiniteRange(0, 1),
            default=d.ps_fraction,
            show_default=True,
            help="Share of jobs that are parameter-server jobs (their shards placed too).",
        ),
        opt(
            "--ps-shards",
            type=click.IntRange(min=1, max=1024),
            default=d.ps_shards,
            show_default=True,
            help="Shards of each parameter-server job.",
        ),
        opt(
            "--prove-optimum/--no-prove-optimum",
            default=d.prove_optimum,
            show_default=True,
            help="Record the brute-force optimum in metadata (tiny instances).",
        ),
        opt(
            "--seed",
            type=click.IntRange(min=0),
            default=d.seed,
            show_default=True,
            help="Every random draw follows it.",
        ),
        opt("--name", default=d.name, help="Instance name (default: derived from the options)."),
    ]
    for decls, o in reversed(opts):
        key = decls[0].lstrip("-").split("/")[0].replace("-", "_")
        if not topology and key in _TOPOLOGY_OPTIONS:
            continue
        if not servers and key in _SERVER_OPTIONS:
            continue
        fn = o(fn)
    return fn


@cli.command()
@_generate_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@_guard
def generate(output: str | None, **kw: Any) -> None:
    """Generate a seeded instance; its `source` records this command to reproduce it."""
    _check_output(output)
    from placement.instances.generate import GeneratorSpec
    from placement.instances.generate import generate as gen

    spec = GeneratorSpec(**kw)
    bad = spec.problems()
    if bad:
        raise InvalidInputError(bad, source="placement generate")
    try:
        inst = gen(spec)
    except ValueError as e:
        raise InvalidInputError([str(e)], source="placement generate") from None
    from placement.evaluation.feasibility import infeasibility_reason

    reason = infeasibility_reason(inst)
    if reason is not None:
        _err(
            f"warning: {inst.name} has no placement of every job ({reason}); "
            "lower --load or use --admission best_effort for a feasible instance"
        )
    doc = _written(inst)
    _emit(
        doc,
        output,
        f"{inst.name}: {len(inst.servers)} servers, {sum(s.free_gpus for s in inst.servers)} free GPUs, "
        f"{len(doc['jobs'])} jobs",
    )


def _wait_option(fn: F) -> F:
    return click.option(
        "--wait",
        is_flag=True,
        help="If another sweep is running into the output folder, start when it ends (default: refuse at once).",
    )(fn)


def _sweep_end(verb: str, what: str, bad: int, total: int, where: str) -> None:
    """A sweep's last line: how many of its runs failed; exit 1 when every one did."""
    if total and bad == total:
        click.echo(f"placement {verb}: all {total} {what} failed or were refused; see {where} for why")
        sys.exit(EXIT_INTERNAL)
    click.echo(f"placement {verb}: {total - bad} of {total} {what} done, {bad} failed or refused")


@cli.command()
@click.argument("instances", nargs=-1, required=True)
@click.option(
    "-m",
    "--methods",
    default="all",
    show_default=True,
    help="Comma-separated names (or package.module:function for your own policy); 'all' = every registered method.",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@click.option("--time-limits", "--time-limit", default="10", show_default=True, help="Comma-separated seconds.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True, help="Threads per run.")
@click.option("--parallel", type=click.IntRange(min=1), default=None, help="Runs at a time (default: cores / threads).")
@click.option(
    "--grace",
    type=FiniteRange(min=0),
    default=None,
    help="Seconds past the limit before a run is killed (default max(10, limit/2)).",
)
@click.option(
    "-o",
    "--out",
    "--output",
    "out_dir",
    default="results/sweep",
    show_default=True,
    help="Folder for runs.jsonl, runs.csv, report.md and plots; re-running resumes.",
)
@click.option(
    "--dask", default=None, help="Run on a Dask cluster: an address, or 'local' (needs placement[distributed])."
)
@_wait_option
@_guard
def compare(
    instances: tuple[str, ...],
    methods: str,
    seeds: str,
    time_limits: str,
    threads: int,
    parallel: int | None,
    grace: float | None,
    out_dir: str,
    dask: str | None,
    wait: bool,
) -> None:
    """Compare methods on INSTANCES (files, folders or bundled names such as library/medium)."""
    from pathlib import Path

    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InvalidInputError([f"-o {out_dir}: exists and is not a folder"])
    from placement.compare.harness import compare as run_compare
    from placement.solving.registry import REGISTRY

    def nums(text: str, kind: type, what: str) -> list[Any]:
        try:
            vals = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise InvalidInputError([f"--{what} must be comma-separated numbers, got {text!r}"]) from None
        if not vals or any(v < 0 or (kind is float and not v > 0) for v in vals):
            raise InvalidInputError([f"--{what} must be positive, got {text!r}"])
        return vals

    names = [m.name for m in REGISTRY] if methods == "all" else [m.strip() for m in methods.split(",") if m.strip()]
    from placement.solving.registry import get_method

    for n in names:
        get_method(n)
    rows = run_compare(
        list(instances),
        names,
        seeds=nums(seeds, int, "seeds"),
        time_limits=nums(time_limits, float, "time-limits"),
        threads=threads,
        parallel=parallel,
        out_dir=out_dir,
        dask=dask,
        grace_s=grace,
        wait=wait,
        say=lambda m: click.echo(m, err=True),
    )
    from placement.compare.report import summarise
    from placement.compare.rows import RunState

    for s in summarise(rows):
        click.echo(
            f"{s['method']:14s} solved {s['solved']}/{s['runs']}  optimal {s['optimal']}  "
            f"objective/best {s['objective_gm_ratio']:.4f}  time {s['time_sgm_s']:.2f}s  failed {s['failed']}"
        )
    click.echo(f"wrote {out_dir}/runs.jsonl, runs.csv, report.md, profile.png, objective_vs_time.png, time_vs_size.png")
    bad = sum(1 for r in rows if RunState(r["status"]).unsuccessful)
    _sweep_end("compare", "runs", bad, len(rows), f"{out_dir}/report.md")


def _csv_list(text: str, what: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    vals = [x.strip() for x in text.split(",") if x.strip()]
    if not vals:
        raise InvalidInputError([f"--{what} must be a comma-separated list, got {text!r}"])
    bad = [v for v in vals if allowed is not None and v not in allowed]
    if bad:
        raise InvalidInputError([f"--{what}: {v!r} is not one of {', '.join(allowed or ())}" for v in bad])
    return vals


@cli.command()
@click.argument("cluster")
@click.option(
    "--trace", required=True, help="A trace file, or a bundled trace (elasticflow-cluster03, elasticflow-cluster04)."
)
@click.option(
    "--trace-format",
    type=click.Choice(["auto", "elasticflow", "philly", "csv"]),
    default="auto",
    show_default=True,
    help="auto detects it from the header; csv is the plain format (submit_s, workers, duration_s or iterations).",
)
@click.option(
    "-m", "--methods", default="greedy", show_default=True, help="Comma-separated methods (or module:function)."
)
@click.option("--knowledge", default="oracle", show_default=True, help="Comma-separated: oracle, estimated, oblivious.")
@click.option("--dynamics", default="markov", show_default=True, help="Comma-separated: none, static, markov, replay.")
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --dynamics replay: a CSV time_s, server, slowdown.",
)
@click.option(
    "--episode-median-s",
    type=FiniteRange(30, 36000),
    default=600.0,
    show_default=True,
    help="Median length of a slow episode (markov).",
)
@click.option(
    "--queue",
    type=click.Choice(["fifo", "sjf"]),
    default="fifo",
    show_default=True,
    help="Queue order: arrival, or shortest ideal run first.",
)
@click.option(
    "--plan-by",
    default="expected",
    show_default=True,
    help="Comma-separated: expected (E[T]), rate (steady rate 1/E[1/S]), duration (rate for jobs that outlive "
    "several slow-state cycles).",
)
@click.option(
    "--decision-time-limit",
    type=FiniteRange(min=0, min_open=True, max=3600),
    default=1.0,
    show_default=True,
    help="Seconds per placement decision.",
)
@click.option(
    "--round-s",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Decide every S seconds instead of at every arrival and completion.",
)
@click.option(
    "--estimate-every-s",
    type=FiniteRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Refit the estimates this often (knowledge estimated).",
)
@click.option("--max-jobs", type=click.IntRange(min=1), default=None, help="The first N jobs (after the window).")
@click.option(
    "--window-start-s",
    type=FiniteRange(min=0),
    default=0.0,
    show_default=True,
    help="Start of the trace window (s).",
)
@click.option(
    "--window-hours",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Only jobs submitted within this many hours of --window-start-s.",
)
@click.option(
    "--load",
    type=FiniteRange(min=0, min_open=True, max=1000),
    default=1.0,
    show_default=True,
    help="Scale the arrival rate (2 = twice as many arrivals per second).",
)
@click.option(
    "--resample-seed",
    type=click.IntRange(min=0),
    default=None,
    help="Redraw inter-arrival times as Poisson arrivals of the same rate.",
)
@click.option(
    "--drop-wider", is_flag=True, help="Drop jobs wider than the cluster (counted) instead of refusing the trace."
)
@click.option(
    "--ps-fraction",
    type=FiniteRange(0, 1),
    default=0.0,
    show_default=True,
    help="Make this share of the trace's jobs parameter-server jobs (a CSV trace may also say so per row).",
)
@click.option("--ps-shards", type=click.IntRange(min=1), default=2, show_default=True, help="Their shards.")
@click.option("--ps-seed", type=click.IntRange(min=0), default=0, show_default=True, help="Which jobs are picked.")
@click.option(
    "--replan-every-s",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Re-plan running jobs this often (methods auto, local_search).",
)
@click.option("--max-moves", type=click.IntRange(min=0), default=None, help="Workers a re-planning may move.")
@click.option(
    "--restart-s",
    type=FiniteRange(min=0),
    default=0.0,
    show_default=True,
    help="Progress (seconds) a moved job loses.",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@click.option("--no-reference", is_flag=True, help="Skip the straggler-free runs (dynamics none) inflation needs.")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True, help="Configurations at a time.")
@click.option(
    "--timeout",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Kill a configuration still running after this many seconds.",
)
@click.option(
    "--dask", default=None, help="Run on a Dask cluster: an address, or 'local' (needs placement[distributed])."
)
@click.option(
    "-o",
    "--out",
    "--output",
    "out_dir",
    default="results/simulate",
    show_default=True,
    help="Folder for runs.jsonl, summary.json, jobs/, timeline/, report.md and plots; re-running resumes.",
)
@_wait_option
@_guard
def simulate(
    cluster: str,
    trace: str,
    trace_format: str,
    methods: str,
    knowledge: str,
    dynamics: str,
    replay_path: str | None,
    episode_median_s: float,
    queue: str,
    plan_by: str,
    decision_time_limit: float,
    round_s: float | None,
    estimate_every_s: float,
    max_jobs: int | None,
    window_start_s: float,
    window_hours: float | None,
    load: float,
    resample_seed: int | None,
    drop_wider: bool,
    ps_fraction: float,
    ps_shards: int,
    ps_seed: int,
    replan_every_s: float | None,
    max_moves: int | None,
    restart_s: float,
    seeds: str,
    no_reference: bool,
    parallel: int,
    timeout: float | None,
    dask: str | None,
    out_dir: str,
    wait: bool,
) -> None:
    """Simulate a trace of arrivals on CLUSTER (an instance file or bundled name; its jobs are
    ignored): servers drift in and out of slow states, each configuration (methods x knowledge
    x dynamics x seeds) places the gangs as they arrive; prints mean and tail JCT."""
    from pathlib import Path

    from placement.compare.harness import read_rows
    from placement.compare.lock import sweep_lock
    from placement.simulation.dynamics import DYNAMICS
    from placement.simulation.engine import KNOWLEDGE, SimConfig
    from placement.simulation.runner import check_inputs, plan_runs, simulate_sweep
    from placement.solving.registry import get_method

    names = _csv_list(methods, "methods")
    for n in names:
        get_method(n)
    know = _csv_list(knowledge, "knowledge", KNOWLEDGE)
    dyn = _csv_list(dynamics, "dynamics", DYNAMICS)
    try:
        seed_list = [int(x) for x in _csv_list(seeds, "seeds")]
    except ValueError:
        raise InvalidInputError([f"--seeds must be comma-separated integers, got {seeds!r}"]) from None
    if any(x < 0 for x in seed_list):
        raise InvalidInputError([f"--seeds must be >= 0, got {seeds!r}"])
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError([f"-o {out_dir}: exists and is not a folder"])
    trace_options = {
        "format": "plain" if trace_format == "csv" else trace_format,
        "window_start_s": window_start_s,
        "window_s": None if window_hours is None else 3600.0 * window_hours,
        "max_jobs": max_jobs,
        "load": load,
        "resample_seed": resample_seed,
        "drop_wider": drop_wider,
    }
    if ps_fraction > 0:
        trace_options.update(ps_fraction=ps_fraction, ps_shards=ps_shards, ps_seed=ps_seed)
    common = {
        "episode_median_s": episode_median_s,
        "queue": queue,
        "decision_time_limit_s": decision_time_limit,
        "round_s": round_s,
        "estimate_every_s": estimate_every_s,
        "replan_every_s": replan_every_s,
        "max_moves": max_moves,
        "restart_s": restart_s,
        "replay_path": None if replay_path is None else str(Path(replay_path).resolve()),
    }
    from placement.simulation.engine import PLAN_BY

    runs = plan_runs(
        cluster,
        trace,
        trace_options,
        methods=names,
        knowledge=know,
        dynamics=dyn,
        seeds=seed_list,
        common=common,
        plan_by=_csv_list(plan_by, "plan-by", PLAN_BY),
        reference=not no_reference,
        out_dir=str(out.resolve()),
    )
    for r in runs:
        SimConfig(**r.config)  # every configuration is checked before any runs
    workload = check_inputs(runs)  # the cluster, the trace and any replay, checked once, here (exit 2)
    _err(f"trace: {workload.source}: {len(workload.jobs)} jobs")
    say = lambda m: click.echo(m, err=True)  # noqa: E731
    with sweep_lock(out, wait=wait, say=say):
        done = {r["label"] for r in read_rows(out / "runs.jsonl") if r.get("status") == "finished"}
        todo = [r for r in runs if r.label not in done]
        if len(todo) == 1 and dask is None:
            rows = _simulate_here(todo[0], runs, out)
        else:
            rows = simulate_sweep(runs, out, parallel=parallel, dask=dask, timeout_s=timeout, say=say)
    _simulation_table(rows)
    click.echo(f"wrote {out_dir}/summary.json, runs.jsonl, jobs/, timeline/, report.md, jct_cdf.png, timeline.png")
    bad = sum(1 for r in rows if r.get("status") != "finished")
    _sweep_end("simulate", "configurations", bad, len(rows), f"{out_dir}/runs.jsonl")


def _simulate_here(run: Any, runs: list[Any], out: Any) -> list[Any]:
    """One configuration to run: in this process, with a progress bar of jobs finished."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from placement.simulation.runner import report_runs, run_one

    out.mkdir(parents=True, exist_ok=True)
    prog = Progress(
        TextColumn("[bold]simulate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        disable=not sys.stderr.isatty(),
        transient=False,
    )
    with prog:
        task = prog.add_task(run.label, total=None)

        def progress(t: float, finished: int, total: int) -> None:
            prog.update(task, completed=finished, total=total, description=f"{run.label}: day {t / 86400:.1f}")

        row, _ = run_one(run, progress=progress)
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    return report_runs(runs, out)


def _simulation_table(rows: list[Any]) -> None:
    from rich.table import Table

    from placement.simulation.runner import inflation_table, knowledge_label

    infl = {r["label"]: r for r in inflation_table(rows)}
    t = Table(title="simulation (times in seconds)", show_edge=False, pad_edge=False)
    for c in (
        "method",
        "knowledge",
        "dynamics",
        "seed",
        "finished",
        "mean JCT",
        "p99 JCT",
        "mean queue",
        "GPU util",
        "inflation",
        "removed",
    ):
        t.add_column(c, justify="right" if c not in ("method", "knowledge", "dynamics") else "left")
    for r in rows:
        if r.get("status") != "finished":
            t.add_row(
                str(r.get("method")),
                str(r.get("knowledge")),
                str(r.get("dynamics")),
                str(r.get("seed")),
                str(r.get("status")),
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
            )
            continue
        i = infl.get(r["label"], {})
        share = i.get("share_removed")
        t.add_row(
            r["method"],
            knowledge_label(r),
            r["dynamics"],
            str(r["seed"]),
            f"{r['jobs_finished']}/{r['jobs']}",
            f"{r['avg_jct_s']:,.0f}",
            f"{r['p99_jct_s']:,.0f}",
            f"{r['avg_queue_s']:,.0f}",
            f"{100 * r['gpu_utilization']:.1f}%",
            "-" if i.get("inflation_s") is None else f"{i['inflation_s']:,.0f}",
            "-" if share is None else f"{100 * share:.1f}%",
        )
    _console().print(t)


def _server_and_job_options(fn: F) -> F:
    return _generate_options(fn, topology=False)


def _changed_options(kw: dict[str, Any]) -> dict[str, Any]:
    """The generator options given away from their defaults (``--name`` aside)."""
    from placement.instances.generate import GeneratorSpec

    defaults = GeneratorSpec()
    return {k: v for k, v in kw.items() if v != getattr(defaults, k, v) and k != "name"}


def _emit_imported(build: Callable[[], Any], name: str, command: str, output: str | None, tool: str) -> None:
    """Build an imported instance (a ``ValueError`` is bad input, exit 2), name it, record the
    command that made it in ``source``, and write it."""
    try:
        inst = build()
    except ValueError as e:
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError([str(e)], source=f"placement {tool}") from None
    inst = inst.replace(name=name, source=f"{command}  ({inst.source})")
    _emit(_written(inst), output, f"{len(inst.servers)} servers, {len(inst.jobs)} jobs")


@cli.command("import-slurm")
@click.argument("topology_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--level-gbps", required=True, help="Comma-separated bandwidth per level: node-leaf, leaf-parent, ...")
@click.option(
    "--nodes-json",
    type=click.Path(exists=True, dir_okay=False),
    help="`scontrol show nodes --json` or `sinfo --json`: the real nodes (GPUs from gres, used GPUs, CPUs, "
    "memory, states) instead of generated servers.",
)
@click.option(
    "--format",
    "topology_format",
    type=click.Choice(["auto", "conf", "yaml"]),
    default="auto",
    show_default=True,
    help="topology.conf (tree) or topology.yaml (tree, block, flat); auto: by the file's extension.",
)
@click.option("--topology-name", default=None, help="topology.yaml: the topology to read (default: cluster_default).")
@_server_and_job_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@_guard
def import_slurm(
    topology_file: str,
    level_gbps: str,
    nodes_json: str | None,
    topology_format: str,
    topology_name: str | None,
    output: str | None,
    **kw: Any,
) -> None:
    """Build an instance on a Slurm topology.conf or topology.yaml; servers come from
    --nodes-json (the real nodes) or from the generator options, slowdowns and jobs from the
    generator options."""
    _check_output(output, topology_file, nodes_json)
    from pathlib import Path

    from placement.instances.slurm import instance_from_slurm, read_slurm_nodes

    levels = _number_list(level_gbps, "--level-gbps")
    fmt = topology_format
    if fmt == "auto":
        fmt = "yaml" if Path(topology_file).suffix.lower() in (".yaml", ".yml") else "conf"
    changed = _changed_options(kw)
    nodes = None
    if nodes_json:
        server_opts = [f"--{k.replace('_', '-')}" for k in changed if k in _SERVER_OPTIONS]
        if server_opts:
            raise InvalidInputError([f"{', '.join(server_opts)}: the servers come from --nodes-json"])
        for k in _SERVER_OPTIONS:
            kw.pop(k, None)
        try:
            text = Path(nodes_json).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidInputError([f"--nodes-json {nodes_json}: cannot read it: {e}"]) from None
        nodes = read_slurm_nodes(text)
    given = [f"--{k.replace('_', '-')} {v}" for k, v in changed.items()]
    if nodes_json:
        given.insert(0, f"--nodes-json {Path(nodes_json).name}")
    if topology_name:
        given.insert(0, f"--topology-name {topology_name}")
    name = kw.pop("name") or f"slurm-{Path(topology_file).stem}"
    command = f"placement import-slurm {Path(topology_file).name} --level-gbps {level_gbps} {' '.join(given)}".strip()
    try:
        text = Path(topology_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError([f"{topology_file}: cannot read it: {e}"]) from None
    _emit_imported(
        lambda: instance_from_slurm(text, levels, nodes=nodes, topology_format=fmt, topology_name=topology_name, **kw),
        name,
        command,
        output,
        "import-slurm",
    )


def _check_output_dir(output: str, *inputs: str | None) -> None:
    """Refuse an output folder that cannot be written, before any work (exit 2)."""
    from pathlib import Path

    p = Path(output)
    problems = []
    if p.exists() and not p.is_dir():
        problems.append(f"--output {output}: is a file; give a folder")
    elif p.exists() and not os.access(p, os.W_OK):
        problems.append(f"--output {output}: cannot write there (permission denied)")
    elif not p.exists() and not (p.parent if str(p.parent) else Path(".")).is_dir():
        problems.append(f"--output {output}: the folder {str(p.parent)!r} does not exist")
    for i in inputs:
        if i and Path(i).exists() and p.exists() and p.resolve() == Path(i).resolve():
            problems.append(f"--output {output}: is also an input of this command")
    if problems:
        raise InvalidInputError(problems)


@cli.command()
@click.argument("solution", type=click.Path(exists=True, dir_okay=False))
@click.option("--instance", "instance", required=True, help="The instance SOLUTION places (a file or a bundled name).")
@click.option(
    "--to", "target", required=True, type=click.Choice(["volcano", "podgroup", "kueue", "slurm"]), help="Target system."
)
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), help="Folder for the files (default: <solution>-<target>)."
)
@click.option("--image", default=None, help="Container image of every worker (Kubernetes targets).")
@click.option("--command", "command", default="python train.py", show_default=True, help="What every rank runs.")
@click.option("--namespace", default="default", show_default=True, help="Kubernetes namespace.")
@click.option(
    "--queue", default="default", show_default=True, help="Volcano Queue, or Kueue LocalQueue (queue-name label)."
)
@click.option(
    "--scheduler-name",
    default="scheduler-plugins-scheduler",
    show_default=True,
    help="podgroup: the scheduler running the Coscheduling plugin.",
)
@click.option(
    "--level-labels",
    default=None,
    help="kueue: node label keys of the network tiers, innermost first (default: the imported labels, else "
    "placement.io/tier-<t>, with label-nodes.sh to set them).",
)
@click.option(
    "--pod-per",
    type=click.Choice(["worker", "server"]),
    default="worker",
    show_default=True,
    help="volcano, podgroup: one pod per worker (1 GPU), or one per server holding its workers' GPUs "
    "(launch with torchrun --nproc-per-node=$NPROC_PER_NODE; keeps NVLink inside a server).",
)
@click.option(
    "--kueue-api",
    type=click.Choice(["v1beta2", "v1beta1"]),
    default="v1beta2",
    show_default=True,
    help="kueue: API version of Topology and ResourceFlavor (v1beta1 for Kueue before 0.15).",
)
@click.option("--partition", default=None, help="slurm: the partition (#SBATCH --partition).")
@click.option("--time", "time_limit", default=None, help="slurm: the job's time limit (#SBATCH --time), e.g. 2:00:00.")
@_guard
def export(
    solution: str,
    instance: str,
    target: str,
    output: str | None,
    image: str | None,
    command: str,
    namespace: str,
    queue: str,
    scheduler_name: str,
    level_labels: str | None,
    pod_per: str,
    kueue_api: str,
    partition: str | None,
    time_limit: str | None,
) -> None:
    """Hand SOLUTION's placement to a cluster: one file per placed job (Volcano Job, PodGroup
    with pinned Pods, Kueue Job, or sbatch script with its host file) plus the target's
    cluster files (HyperNodes, Kueue Topology)."""
    import re
    from pathlib import Path

    import placement
    from placement.export import DEFAULT_IMAGE, ExportOptions, export, write_files

    out = output or f"{Path(solution).with_suffix('')}-{target}"
    _check_output_dir(out, solution, instance)
    problems = []
    if len(namespace) > 63 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace):
        problems.append(f"--namespace {namespace!r}: must be a DNS-1123 label (a-z, 0-9, '-', at most 63)")
    labels = None
    if level_labels is not None:
        labels = tuple(x.strip() for x in level_labels.split(",") if x.strip())
        if not labels:
            problems.append("--level-labels: give at least one label key")
    if problems:
        raise InvalidInputError(problems)
    inst = placement.resolve_instance(instance)
    sol = placement.load_solution(solution, inst)
    opts = ExportOptions(
        image=image or DEFAULT_IMAGE,
        command=command,
        namespace=namespace,
        queue=queue,
        scheduler_name=scheduler_name,
        level_labels=labels,
        partition=partition,
        time_limit=time_limit,
        pod_per=pod_per,
        kueue_api=kueue_api,
    )
    files = export(inst, sol, target, opts)
    written = write_files(files, out)
    _err(f"wrote {len(written)} file(s) to {out}/: {', '.join(p.name for p in written)}")


@cli.command("import-placement")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--instance", "instance", required=True, help="The instance the manifests place (file or bundled name).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@_guard
def import_placement(folder: str, instance: str, output: str | None) -> None:
    """Read the placement back from FOLDER's exported files (any target) as a solution of
    INSTANCE, validated and evaluated (exit 2 if it is not a valid placement)."""
    import placement
    from placement.export import read_placement_and_shards
    from placement.formats import solution_to_dict
    from placement.solving import placed

    _check_output(output, instance)
    inst = placement.resolve_instance(instance)
    assignment, shards = read_placement_and_shards(folder)
    unknown = [j for j in assignment if j not in inst.job_by_id]
    if unknown:
        raise InvalidInputError([f"{folder}: job {j!r} is not in instance {inst.name!r}" for j in unknown])
    sol = placed(inst, assignment, "import-placement", shards=shards or None)
    if not sol.status.has_placement:
        raise InvalidInputError([f"{folder}: {sol.stats.get('message', 'not a valid placement')}"], source=folder)
    _emit(solution_to_dict(sol), output, f"{len(sol.assignment)} job(s), objective {sol.objective:.6g}")


def _job_options(fn: F) -> F:
    return _generate_options(fn, topology=False, servers=False)


def _number_list(text: str, option: str) -> list[float]:
    import math

    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidInputError([f"{option} must be comma-separated numbers, got {text!r}"]) from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise InvalidInputError([f"{option} must be finite numbers > 0, got {text!r}"])
    return values


@cli.command("import-k8s")
@click.argument("nodes_json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--pods",
    "pods_json",
    type=click.Path(exists=True, dir_okay=False),
    help="kubectl get pods -A -o json: the GPUs already in use.",
)
@click.option(
    "--hypernodes",
    "hypernodes_json",
    type=click.Path(exists=True, dir_okay=False),
    help="kubectl get hypernodes -o json: Volcano's network tree (instead of node labels).",
)
@click.option(
    "--level-labels",
    default=None,
    help="Node label keys of the network levels, innermost first (default: the first known family present: "
    "network.topology.nvidia.com/*, GKE gce-topology-*, AWS network-node-layer-*, topology.kubernetes.io/zone; "
    "'' for none).",
)
@click.option(
    "--level-gbps", default=None, help="Bandwidth of the links into each level, innermost first (default 200,100,...)."
)
@_job_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@_guard
def import_k8s(
    nodes_json: str,
    pods_json: str | None,
    hypernodes_json: str | None,
    level_labels: str | None,
    level_gbps: str | None,
    output: str | None,
    **kw: Any,
) -> None:
    """Build an instance on a Kubernetes cluster from `kubectl get nodes -o json` (GPU nodes:
    GPUs, GPU type, CPU, memory, topology labels); slowdowns and jobs come from the generator
    options."""
    from pathlib import Path

    from placement.formats.parse import read_json_file
    from placement.instances.kubernetes import instance_from_kubernetes

    _check_output(output, nodes_json, pods_json, hypernodes_json)
    docs: dict[str, Any] = {}
    problems: list[str] = []
    for key, path in (("nodes", nodes_json), ("pods", pods_json), ("hypernodes", hypernodes_json)):
        if path:
            data, found, _ = read_json_file(path, InvalidInputError, f"{key} list")
            problems += [f"{Path(path).name}: {p}" for p in found]
            docs[key] = data
    if problems:
        raise InvalidInputError(problems)
    labels = None if level_labels is None else [x.strip() for x in level_labels.split(",") if x.strip()]
    gbps = None if level_gbps is None else _number_list(level_gbps, "--level-gbps")
    given = [f"--{k.replace('_', '-')} {v}" for k, v in _changed_options(kw).items()]
    for flag, value in (("--level-labels", level_labels), ("--level-gbps", level_gbps)):
        if value is not None:
            given.append(f"{flag} {value}")
    name = kw.pop("name") or f"k8s-{Path(nodes_json).stem}"
    command = f"placement import-k8s {Path(nodes_json).name} {' '.join(given)}".strip()
    _emit_imported(
        lambda: instance_from_kubernetes(
            docs["nodes"],
            pods=docs.get("pods"),
            hypernodes=docs.get("hypernodes"),
            level_labels=labels,
            level_gbps=gbps,
            **kw,
        ),
        name,
        command,
        output,
        "import-k8s",
    )


@cli.command()
@click.argument("instance")
@click.option(
    "--logs",
    "logs",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Iteration log CSV (job, worker, server, iteration, duration); repeatable.",
)
@click.option(
    "--pai",
    "pai",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="An Alibaba PAI per-worker file (worker, gpu, time, batch_time_norm); servers are <job>/w<worker>.",
)
@click.option(
    "--map",
    "server_map",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A CSV log_server,server naming the instance server behind each server of the logs (e.g. PAI's "
    "job_1/w0); servers of the logs not listed keep their names.",
)
@click.option(
    "--telemetry",
    type=click.Path(exists=True, dir_okay=False),
    help="Per-server utilisation CSV (server, time, cpu, memory, network, gpu).",
)
@click.option(
    "--demands",
    type=click.Path(exists=True, dir_okay=False),
    help="Per-job demand CSV (job, cpu, memory, network, gpu), with --telemetry.",
)
@click.option(
    "--jobs",
    "jobs_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Replace INSTANCE's jobs by this JSON list of jobs (INSTANCE is then the cluster).",
)
@click.option(
    "--half-life",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Recency half-life, in log iterations (default 1000).",
)
@click.option(
    "--prior-strength",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Beta prior pseudo-iterations (default 5).",
)
@click.option(
    "--horizon",
    type=click.IntRange(min=1, max=10_000),
    default=1,
    show_default=True,
    help="Telemetry steps ahead to forecast.",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the instance here (default: stdout)."
)
@_guard
def estimate(
    instance: str,
    logs: tuple[str, ...],
    pai: tuple[str, ...],
    telemetry: str | None,
    demands: str | None,
    jobs_file: str | None,
    half_life: float | None,
    prior_strength: float | None,
    horizon: int,
    output: str | None,
    server_map: str | None,
) -> None:
    """Write slowdown estimates learned from logs and telemetry into INSTANCE."""
    _check_output(output, instance, telemetry, demands, jobs_file, server_map, *logs, *pai)
    import numpy as np

    import placement
    from placement import estimate as est
    from placement.formats import parse_json

    inst = placement.resolve_instance(instance)
    if jobs_file:
        from pathlib import Path

        data, problems = parse_json(Path(jobs_file).read_text(), what="jobs")
        if problems or not isinstance(data, list):
            raise InvalidInputError(problems or [f"{jobs_file} must hold a JSON list of jobs"], source=jobs_file)
        doc = _written(inst)
        doc["jobs"] = data
        inst = placement.instance_from_dict(doc, source=jobs_file)
    if not (logs or pai or telemetry):
        raise InvalidInputError(["give --logs, --pai and/or --telemetry: nothing to estimate from"])
    if bool(telemetry) != bool(demands):
        raise InvalidInputError(["--telemetry and --demands go together"])
    servers = fleet = None
    if logs or pai:
        parts = [est.read_iteration_log(p) for p in logs] + ([est.read_pai(list(pai))] if pai else [])
        log = est.LogData(
            *(np.concatenate([getattr(x, f) for x in parts]) for f in ("job", "server", "iteration", "duration"))
        )
        if server_map:
            rename = _read_server_map(server_map, inst)
            log = est.LogData(
                log.job, np.array([rename.get(str(s), str(s)) for s in log.server]), log.iteration, log.duration
            )
        kw = {k: v for k, v in (("half_life", half_life), ("prior_strength", prior_strength)) if v is not None}
        servers, fleet = est.estimate_from_logs(log, servers=[s.id for s in inst.servers], **kw)
        servers = {k: v for k, v in servers.items() if k in inst.server_by_id or k in set(log.server)}
        inst = est.apply_estimates(inst, servers, fleet)
    overrides = None
    if telemetry and demands:
        overrides = est.contention_overrides(
            inst, est.read_telemetry(telemetry), est.read_demands(demands), horizon=horizon
        )
        inst = est.apply_estimates(inst, overrides=overrides)
    _emit(_written(inst), output)
    from rich.table import Table

    con = _console()
    if servers is not None:
        t = Table(title="learned per server (from logs)", show_edge=False, pad_edge=False)
        for c in ("server", "samples", "recency-weighted", "P(straggle)", "E[S]", "support"):
            t.add_column(c)
        for sid, e in servers.items():
            t.add_row(
                sid,
                str(e.samples),
                f"{e.effective:.1f}",
                f"{e.straggle_probability:.3f}",
                f"{e.mean:.3f}",
                " ".join(f"{v:g}" for v in e.slowdown.values),
            )
        con.print(t)
        if fleet is not None:
            con.print(f"fleet prior (servers without observations): E[S] = {fleet.mean():.3f}")
    if overrides:
        n = sum(len(v) for v in overrides.values())
        con.print(f"contention: {n} job-server overrides for {len(overrides)} job(s) from the telemetry forecast")


@cli.command()
@click.argument("pai_files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--train-fraction",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.5,
    show_default=True,
    help="Share of each job's iterations to fit on",
)
@click.option(
    "--time-limit",
    type=FiniteRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="For the replay's placements.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the replay's solves.")
@click.option(
    "--write-cluster",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the replay's cluster (the PAI workers as 1-GPU servers in racks, with the slowdowns "
    "fitted on all the files) as an instance without jobs.",
)
@_guard
def backtest(
    pai_files: tuple[str, ...], train_fraction: float, time_limit: float, seed: int, write_cluster: str | None
) -> None:
    """Backtest the estimator on PAI per-worker files: fit on the first part, score on the rest."""
    from placement.estimate.backtest import backtest_pai

    _check_output(write_cluster, *pai_files, option="--write-cluster")
    if write_cluster:
        from placement.estimate import estimate_from_logs, pai_instance, read_pai
        from placement.formats import dump_instance

        log = read_pai(list(pai_files))
        est, _ = estimate_from_logs(log)
        cluster = pai_instance(sorted(est), {s: e.slowdown for s, e in est.items()}, [], "pai-workers")
        dump_instance(cluster, write_cluster)
        _err(f"wrote {write_cluster}: {len(cluster.servers)} one-GPU servers fitted on {len(pai_files)} file(s)")

    r = backtest_pai(list(pai_files), train_fraction=train_fraction, time_limit_s=time_limit, seed=seed)
    click.echo(f"train {r.samples_train} samples, test {r.samples_test} samples (train fraction {r.train_fraction:g})")
    click.echo(f"{'model':20s} {'loglik/sample':>13s} {'E[max] abs err':>15s} {'replay objective':>17s}")
    for m in r.loglik:
        err = sum(r.job_error[m].values()) / len(r.job_error[m])
        click.echo(f"{m:20s} {r.loglik[m]:13.4f} {err:15.4f} {r.replay[m]:17.2f}")
    click.echo("expected slowest-worker time (median-worker units), observed on the held-out part vs predicted:")
    for j, o in r.observed.items():
        click.echo(f"  {j}: observed {o:.3f}  " + "  ".join(f"{m} {r.predicted[m][j]:.3f}" for m in r.predicted))


_SHORT_HELP = {
    "solve": "Place the jobs of an instance; print the solution and a summary.",
    "validate": "Check an instance, or a solution's placement against it.",
    "evaluate": "Recompute every figure of a solution (optionally by Monte Carlo).",
    "methods": "List the methods in preference order.",
    "generate": "Generate a seeded instance (topology, slowdowns, jobs).",
    "compare": "Compare methods on many instances (isolated, resumable).",
    "simulate": "Simulate a trace of arrivals over time; report JCT.",
    "import-slurm": "Build an instance on a Slurm topology.conf.",
    "import-k8s": "Build an instance on a Kubernetes cluster (kubectl get nodes -o json).",
    "export": "Write manifests (Volcano, PodGroup, Kueue) or sbatch scripts for a solution.",
    "import-placement": "Read a placement back from exported manifests or scripts.",
    "estimate": "Learn slowdowns from iteration logs and telemetry.",
    "backtest": "Backtest the slowdown estimator on PAI per-worker logs.",
}
"""The one-line descriptions of ``placement --help`` (click would cut the docstrings)."""
for _name, _text in _SHORT_HELP.items():
    cli.commands[_name].short_help = _text


EXIT_INTERRUPTED = 130
"""Interrupted by the user (128 + SIGINT, the shell's convention)."""


def main() -> None:
    """Console-script entry point; usage errors exit 2 (click's own convention); an interrupt
    exits 130 with one line (output files are written by rename, so none is left half-written)."""
    import signal

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # the same clean stop as Ctrl-C: isolated runs killed, nothing partial

    signal.signal(signal.SIGTERM, terminate)
    try:
        cli(prog_name="placement", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        _err("interrupted")
        from placement.formulations.quiet import native_solve_interrupted

        if native_solve_interrupted():  # a HiGHS solve thread not joined: exit without destructors
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
