"""``placement simulate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from placement.cli.common import (
    FiniteRange,
    csv_list,
    err,
    guard,
    sweep_end,
)
from placement.cli.options import (
    trace_options_of,
    wait_option,
    workload_options,
)
from placement.errors import (
    InvalidInputError,
)
from placement.model.records import OBJECTIVES
from placement.simulation.config import (
    CHANGE_POINTS,
    DECISION_TIME_LIMIT_S,
    DECISION_WEIGHTS,
    QUEUES,
    RATIO_TO,
    REPLAN_EVENTS,
    REPLAN_MODES,
    REPLAN_PRICES,
    REPLAN_SCOPES,
)
from placement.simulation.workload import FORMATS as TRACE_FORMATS
from placement.simulation.workload.reference import COMM_SHARE_MAX, comm_penalty
from placement.solving.budget import CLOCKS


class CommMode(click.ParamType):
    """``on``, ``off`` or ``penalty:F`` (F >= 1)."""

    name = "on|off|penalty:F"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            comm_penalty(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return str(value)


@click.command()
@click.argument("cluster")
@click.option(
    "--trace", required=True, help="A trace file, or a bundled trace (elasticflow-cluster03, elasticflow-cluster04)."
)
@click.option(
    "--trace-format",
    type=click.Choice(["auto", *("csv" if f == "plain" else f for f in TRACE_FORMATS)]),
    default="auto",
    show_default=True,
    help="auto detects it from the header; csv is the plain format (submit_s, workers, duration_s or iterations).",
)
@click.option(
    "-m", "--methods", default="greedy", show_default=True, help="Comma-separated methods (or module:function)."
)
@click.option(
    "--knowledge",
    default="oracle",
    show_default=True,
    help="Comma-separated: oracle, estimated, oblivious, clairvoyant, hindsight (the last two references).",
)
@click.option(
    "--dynamics",
    default="markov",
    show_default=True,
    help="Comma-separated: none, static, markov, mixed, onset, replay, measured.",
)
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
    help="Median length of a slow episode (markov, mixed, onset).",
)
@click.option(
    "--persistent-share",
    type=FiniteRange(0, 1),
    default=0.5,
    show_default=True,
    help="With --dynamics mixed: the share of each server's slow time spent persistently slow; onset: "
    "in fail-slow regimes of hours.",
)
@click.option(
    "--queue",
    type=click.Choice(QUEUES),
    default="fifo",
    show_default=True,
    help="Queue policy (who runs; the method decides where): fifo (arrival order, a job that does not fit is "
    "skipped: backfill), fifo-strict (the head blocks), sjf (shortest straggler-free run first), srtf (preemptive: "
    "least believed remaining time), las (preemptive: least attained GPU-seconds), tiresias (2D-LAS, thresholds "
    "3,250 and 7,200 GPU-s), gavel (max-min fairness in rounds of 360 s), replay (another run's start times, "
    "--replay-starts: a reference). A preempted job keeps its progress and pays --restart-s when it resumes.",
)
@click.option(
    "--starvation",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="--queue tiresias: a preempted job that has waited this many times the seconds it ran goes back to the "
    "top queue (Tiresias's STARVE_LIMIT; off by default).",
)
@click.option(
    "--replay-starts",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="--queue replay: the jobs CSV of a run (its jobs/<run>.csv) whose start times are replayed: each job "
    "starts no earlier than it did there (a reference that changes where jobs run, not who runs when).",
)
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVES),
    default="weighted_expected_iteration_time",
    show_default=True,
    help="What each decision minimises: the weighted expected iteration time, or the weighted expected "
    "JCT (each job weighed by its iterations: long jobs get the fast servers first).",
)
@click.option(
    "--plan-by",
    default="forecast",
    show_default=True,
    help="Comma-separated: forecast (each server over the job's horizon: the state last seen for short jobs, the "
    "law for long ones), expected (E[T]; estimated: recency-weighted), rate (steady rate 1/E[1/S]), duration "
    "(rate for jobs that outlive several slow-state cycles), aged (forecast, with episode lengths by age and states "
    "weighed by iterations).",
)
@click.option(
    "--decision-time-limit",
    type=FiniteRange(min=0, min_open=True, max=3600),
    default=DECISION_TIME_LIMIT_S,
    show_default=True,
    help="Seconds per placement decision.",
)
@click.option(
    "--decision-clock",
    type=click.Choice(CLOCKS),
    default="work",
    show_default=True,
    help="What --decision-time-limit counts: wall seconds, or work (each budget check of a method is a fixed "
    "tick): decisions then stop after the same steps on any machine, and a run is repeatable.",
)
@click.option(
    "--comm",
    type=CommMode(),
    default="on",
    show_default=True,
    help="off: communication is free at every placement (the semantics of simulators that ignore placement; "
    "for cross-checks); penalty:F: free too, but a job on two or more servers runs F times slower (Blox's "
    "and PAL's semantics). A trace job runs its trace duration at its reference placement either way.",
)
@click.option(
    "--profiles",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A placement calibrate output: trace jobs of its models take their fitted compute and gradient (the "
    "median profiled batch), their iterations set by the trace duration at the reference placement.",
)
@click.option(
    "--variability",
    multiple=True,
    metavar="[CLASS=]FILE",
    help="Hidden per-GPU factors from profiles (placement estimate --gpu-profiles' formats), laid on the cluster "
    "by each run's seed; CLASS= names the application class a file's factors are for (PAL's A=resnet, B=bert, "
    "C=bert, D=pagerank); oracle knowledge is given them, the others are not. Repeatable.",
)
@click.option(
    "--variability-draw",
    type=click.Choice(["medians", "runs"]),
    default="medians",
    show_default=True,
    help="medians: each profiled GPU's steady factor; runs: as PAL's simulator, each GPU a seeded draw from the "
    "class's runs over their median (slow outlier runs become GPUs' factors).",
)
@click.option(
    "--comm-share-max",
    type=FiniteRange(min=0, max=1, max_open=True),
    default=COMM_SHARE_MAX,
    show_default=True,
    help="Most of a trace job's measured iteration its all-reduce may take at its reference placement "
    "(its gradient is scaled down to it).",
)
@click.option(
    "--prove/--no-prove",
    default=False,
    show_default=True,
    help="Let auto's decisions spend their time on the exact model (a proof of optimality the simulation "
    "does not use).",
)
@click.option(
    "--round-s",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Decide every S seconds instead of at every arrival and completion.",
)
@click.option(
    "--decision-weight",
    type=click.Choice(DECISION_WEIGHTS),
    default="trace",
    show_default=True,
    help="How placement decisions weigh jobs: the trace's weights, or srpt (GPUs over remaining seconds: the "
    "job nearest its end gets the fast GPUs).",
)
@click.option(
    "--resettle/--sticky",
    default=False,
    show_default=True,
    help="With --round-s: each round places every running job again with the queue (a job placed "
    "elsewhere pays --restart-s; PAL's and Blox's non-sticky rounds, for cross-checking them).",
)
@click.option(
    "--estimate-every-s",
    type=FiniteRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Refit the estimates this often (knowledge estimated).",
)
@workload_options
@click.option(
    "--replan",
    type=click.Choice(REPLAN_MODES),
    default="on",
    show_default=True,
    help="on: methods that re-plan (auto, local_search) move running jobs when the move repays its restart "
    "(every --replan-every-s and on --replan-events); off: jobs stay where they were placed.",
)
@click.option(
    "--replan-every-s",
    type=FiniteRange(min=0, min_open=True),
    default=3600.0,
    show_default=True,
    help="Re-plan running jobs this often (methods auto, local_search; with --replan on).",
)
@click.option("--max-moves", type=click.IntRange(min=0), default=None, help="Workers a re-planning may move.")
@click.option(
    "--restart-s",
    type=FiniteRange(min=0),
    default=300.0,
    show_default=True,
    help="Progress (seconds) a moved job loses.",
)
@click.option(
    "--ratio-to",
    type=click.Choice(RATIO_TO),
    default="profiled",
    show_default=True,
    help="estimated knowledge: divide each logged worker time by the job's profiled straggler-free time "
    "(one-worker jobs and mostly-slow jobs inform the estimates too), or by its median worker.",
)
@click.option(
    "--replan-events",
    default="",
    help="Comma-separated events that trigger a re-plan besides the period: freed (a job finished), "
    "blocked (a queued job fits the free GPUs in number but not in place), estimate (a refit moves a server's believed mean by "
    "more than --replan-threshold).",
)
@click.option(
    "--replan-min-gap-s",
    type=FiniteRange(min=0),
    default=600.0,
    show_default=True,
    help="Least time between two event-triggered re-plans.",
)
@click.option(
    "--replan-threshold",
    type=FiniteRange(min=0, min_open=True),
    default=0.1,
    show_default=True,
    help="estimate events: the relative change of a server's believed mean that triggers a re-plan.",
)
@click.option(
    "--move-budget-per-hour",
    type=click.IntRange(min=1),
    default=None,
    help="Most workers re-plans may move in any hour.",
)
@click.option(
    "--replan-price",
    type=click.Choice(REPLAN_PRICES),
    default="amortized",
    show_default=True,
    help="amortized: a moved job pays its restart spread over the iterations it has left (it moves only when "
    "they repay it); remaining: the re-plan weighs each job by its remaining work and a move pays weight x "
    "--restart-s; gpu_time: remaining, by GPUs too; none: moves free.",
)
@click.option(
    "--change-points",
    type=click.Choice(CHANGE_POINTS),
    default="off",
    show_default=True,
    help="Knowledge estimated: bocpd forgets what a server showed before its law last changed (Bayesian "
    "online change-point detection on its looks); off weighs the whole estimate window.",
)
@click.option(
    "--replan-scope",
    type=click.Choice(REPLAN_SCOPES),
    default="movers",
    show_default=True,
    help="amortized prices: movers: a re-plan searches only the running jobs that could repay a move of "
    "their own (the rest keep their GPUs; an incremental re-plan); holders: those and the jobs on servers "
    "with free GPUs or shared with them (they may step aside); all: every running job.",
)
@click.option(
    "--move-margin",
    type=FiniteRange(min=0),
    default=None,
    help="amortized prices, while no job waits in the queue: a move must also cut the job's believed expected "
    "iteration time by this share [default: 0.05 with estimated knowledge, else 0].",
)
@click.option(
    "--queued-move-margin",
    type=FiniteRange(min=0),
    default=None,
    help="the move margin while jobs wait in the queue (a move that ends a job sooner starts them sooner); "
    "1 or more: no job moves while others wait [default: --move-margin if given, else 0].",
)
@click.option(
    "--patience",
    type=FiniteRange(min=0),
    default=None,
    help="Delay scheduling (ski rental): a job whose placement now is slower than its straggler-free best "
    "waits for better GPUs, while jobs run, up to this many times the seconds it would lose; 0: start at once "
    "[default: 1 where running jobs re-plan, else 0].",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@click.option("--no-reference", is_flag=True, help="Skip the straggler-free runs (dynamics none) inflation needs.")
@click.option(
    "--decision-log",
    is_flag=True,
    help="Write every decision of each run to OUT/decisions/<run>.jsonl: the jobs offered, the free GPUs, what was "
    "placed and which wait, refits, re-plans and their moves, finishes (what a run did, and the input a replay "
    "through placement serve takes).",
)
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
    help="Folder for runs.jsonl, summary.json, jobs/, held/, timeline/, report.md and plots; re-running resumes.",
)
@wait_option
@guard
def simulate(
    cluster: str,
    trace: str,
    trace_format: str,
    methods: str,
    knowledge: str,
    dynamics: str,
    replay_path: str | None,
    episode_median_s: float,
    persistent_share: float,
    queue: str,
    starvation: float | None,
    replay_starts: str | None,
    objective: str,
    plan_by: str,
    decision_time_limit: float,
    decision_clock: str,
    comm: str,
    comm_share_max: float,
    profiles: str | None,
    variability: tuple[str, ...],
    variability_draw: str,
    prove: bool,
    round_s: float | None,
    decision_weight: str,
    resettle: bool,
    estimate_every_s: float,
    replan: str,
    replan_every_s: float | None,
    max_moves: int | None,
    restart_s: float,
    replan_price: str,
    change_points: str,
    replan_scope: str,
    move_margin: float | None,
    queued_move_margin: float | None,
    patience: float | None,
    ratio_to: str,
    replan_events: str,
    replan_min_gap_s: float,
    replan_threshold: float,
    move_budget_per_hour: int | None,
    seeds: str,
    no_reference: bool,
    decision_log: bool,
    parallel: int,
    timeout: float | None,
    dask: str | None,
    out_dir: str,
    wait: bool,
    **workload_values: Any,
) -> None:
    """Simulate a trace of arrivals on CLUSTER (an instance file or bundled name; its jobs are
    ignored): servers drift in and out of slow states, each configuration (methods x knowledge
    x dynamics x seeds) places the gangs as they arrive; prints mean and tail JCT."""

    from placement.compare.harness import read_rows
    from placement.compare.lock import sweep_lock
    from placement.simulation.config import KNOWLEDGE, SimConfig
    from placement.simulation.dynamics import DYNAMICS
    from placement.simulation.runner import check_inputs, plan_runs, simulate_sweep
    from placement.solving.registry import get_method

    names = csv_list(methods, "methods")
    for n in names:
        get_method(n)
    know = csv_list(knowledge, "knowledge", KNOWLEDGE)
    dyn = csv_list(dynamics, "dynamics", DYNAMICS)
    try:
        seed_list = [int(x) for x in csv_list(seeds, "seeds")]
    except ValueError:
        raise InvalidInputError([f"--seeds must be comma-separated integers, got {seeds!r}"]) from None
    if any(x < 0 for x in seed_list):
        raise InvalidInputError([f"--seeds must be >= 0, got {seeds!r}"])
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError([f"-o {out_dir}: exists and is not a folder"])
    trace_options = trace_options_of(trace_format, workload_values)
    common = {
        "episode_median_s": episode_median_s,
        "persistent_share": persistent_share,
        "queue": queue,
        "starvation": starvation,
        "objective": objective,
        "decision_time_limit_s": decision_time_limit,
        "prove": prove,
        "decision_clock": decision_clock,
        "comm": comm,
        "comm_share_max": comm_share_max,
        "profiles": str(Path(profiles).resolve()) if profiles else None,
        "variability": tuple(_resolved_spec(v) for v in variability),
        "variability_draw": variability_draw,
        "round_s": round_s,
        "resettle": resettle,
        "decision_weight": decision_weight,
        "estimate_every_s": estimate_every_s,
        "replan": replan,
        "replan_every_s": replan_every_s,
        "max_moves": max_moves,
        "restart_s": restart_s,
        "replan_price": replan_price,
        "replan_scope": replan_scope,
        "change_points": change_points,
        "move_margin": move_margin,
        "queued_move_margin": queued_move_margin,
        "patience": patience,
        "ratio_to": ratio_to,
        "replan_events": csv_list(replan_events, "replan-events", REPLAN_EVENTS) if replan_events else [],
        "replan_min_gap_s": replan_min_gap_s,
        "replan_threshold": replan_threshold,
        "move_budget_per_hour": move_budget_per_hour,
        "replay_path": None if replay_path is None else str(Path(replay_path).resolve()),
        **({"replay_starts": str(Path(replay_starts).resolve())} if replay_starts else {}),
    }
    from placement.simulation.config import PLAN_BY

    runs = plan_runs(
        cluster,
        trace,
        trace_options,
        methods=names,
        knowledge=know,
        dynamics=dyn,
        seeds=seed_list,
        common=common,
        plan_by=csv_list(plan_by, "plan-by", PLAN_BY),
        reference=not no_reference,
        out_dir=str(out.resolve()),
        decision_log=decision_log,
    )
    for r in runs:
        SimConfig(**r.config)  # every configuration is checked before any runs
    workload = check_inputs(runs)  # the cluster, the trace and any replay, checked once, here (exit 2)
    err(f"trace: {workload.source}: {len(workload.jobs)} jobs")
    say = lambda m: click.echo(m, err=True)  # noqa: E731
    with sweep_lock(out, wait=wait, say=say):
        done = {r["label"] for r in read_rows(out / "runs.jsonl") if r.get("status") == "finished"}
        todo = [r for r in runs if r.label not in done]
        if len(todo) == 1 and dask is None:
            from placement.cli.commands.simulate_show import simulate_here

            rows = simulate_here(todo[0], runs, out)
        else:
            rows = simulate_sweep(runs, out, parallel=parallel, dask=dask, timeout_s=timeout, say=say)
    from placement.cli.commands.simulate_show import simulation_table

    simulation_table(rows)
    click.echo(
        f"wrote {out_dir}/summary.json, runs.jsonl, jobs/, held/, timeline/, servers/, report.md, jct_cdf.png, timeline.png, "
        "servers.png"
    )
    bad = sum(1 for r in rows if r.get("status") != "finished")
    sweep_end("simulate", "configurations", bad, len(rows), f"{out_dir}/runs.jsonl")


def _resolved_spec(spec: str) -> str:
    """``[CLASS=]FILE`` with the file's absolute path (runs may start elsewhere)."""
    cls, eq, path = spec.rpartition("=")
    if not Path(path).is_file():
        raise InvalidInputError([f"--variability {spec!r}: no such file {path!r}"])
    return f"{cls}{eq}{Path(path).resolve()}"
