"""Option sets that several verbs share (the generator's options, job options, ``--wait``, the
workload's options of ``placement simulate``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from placement.cli.common import (
    F,
    FiniteRange,
)
from placement.model.records import ADMISSIONS, OBJECTIVES

TOPOLOGY_OPTIONS = ("topology", "pods", "racks", "servers_per_rack", "nic_gbps", "uplink_gbps", "core_gbps")
SERVER_OPTIONS = (
    "gpus_per_server",
    "gpu_types",
    "used_fraction",
    "single_gpu_fraction",
    "servers_from",
    "prove_optimum",
)
"""Generator options a real cluster's own servers replace (``import-k8s``)."""
"""Generator options that shape the network: an imported topology replaces them."""


def generate_options(fn: F, *, topology: bool = True, servers: bool = True) -> F:
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
            type=click.Choice(ADMISSIONS),
            default=d.admission,
            show_default=True,
            help="all: every job must be placed; best_effort: most weight placed first.",
        ),
        opt(
            "--objective",
            type=click.Choice(OBJECTIVES),
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
            "--hybrid-fraction",
            type=FiniteRange(0, 1),
            default=d.hybrid_fraction,
            show_default=True,
            help="Share of multi-worker jobs that are hybrid-parallel (tp x pp x dp, drawn per job).",
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
        if not topology and key in TOPOLOGY_OPTIONS:
            continue
        if not servers and key in SERVER_OPTIONS:
            continue
        fn = o(fn)
    return fn


def wait_option(fn: F) -> F:
    return click.option(
        "--wait",
        is_flag=True,
        help="If another sweep is running into the output folder, start when it ends (default: refuse at once).",
    )(fn)


def server_and_job_options(fn: F) -> F:
    return generate_options(fn, topology=False)


def changed_options(kw: dict[str, Any]) -> dict[str, Any]:
    """The generator options given away from their defaults (``--name`` aside)."""
    from placement.instances.generate import GeneratorSpec

    defaults = GeneratorSpec()
    return {k: v for k, v in kw.items() if v != getattr(defaults, k, v) and k != "name"}


def job_options(fn: F) -> F:
    return generate_options(fn, topology=False, servers=False)


def table_or_json(help: str) -> Callable[[F], F]:
    """``--format table|json`` (default ``table``): a verb's output for people or for scripts."""

    def deco(fn: F) -> F:
        return click.option(
            "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help=help
        )(fn)

    return deco


WORKLOAD_OPTIONS: tuple[Callable[[F], F], ...] = (
    click.option("--max-jobs", type=click.IntRange(min=1), default=None, help="The first N jobs (after the window)."),
    click.option(
        "--window-start-s",
        type=FiniteRange(min=0),
        default=0.0,
        show_default=True,
        help="Start of the trace window (s).",
    ),
    click.option(
        "--window-hours",
        type=FiniteRange(min=0, min_open=True),
        default=None,
        help="Only jobs submitted within this many hours of --window-start-s.",
    ),
    click.option(
        "--load",
        type=FiniteRange(min=0, min_open=True, max=1000),
        default=1.0,
        show_default=True,
        help="Scale the arrival rate (2 = twice as many arrivals per second).",
    ),
    click.option(
        "--resample-seed",
        type=click.IntRange(min=0),
        default=None,
        help="Redraw inter-arrival times as Poisson arrivals of the same rate.",
    ),
    click.option(
        "--drop-wider", is_flag=True, help="Drop jobs wider than the cluster (counted) instead of refusing the trace."
    ),
    click.option(
        "--min-workers",
        type=click.IntRange(min=1),
        default=None,
        help="Only jobs of this many GPUs or more (before --widen).",
    ),
    click.option(
        "--widen",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Multiply every job's GPUs by this (weak scaling: the same per-GPU work; a hybrid job's dp widens).",
    ),
    click.option(
        "--ps-fraction",
        type=FiniteRange(0, 1),
        default=0.0,
        show_default=True,
        help="Make this share of the trace's jobs parameter-server jobs (a CSV trace may also say so per row).",
    ),
    click.option("--ps-shards", type=click.IntRange(min=1), default=2, show_default=True, help="Their shards."),
    click.option("--ps-seed", type=click.IntRange(min=0), default=0, show_default=True, help="Which jobs are picked."),
    click.option(
        "--hybrid-fraction",
        type=FiniteRange(0, 1),
        default=0.0,
        show_default=True,
        help="Make this share of the multi-GPU jobs hybrid-parallel, tp x pp x dp shapes drawn per job "
        "(a CSV trace may also give tp, pp, dp, microbatches, activation_mb per row).",
    ),
    click.option(
        "--hybrid-seed", type=click.IntRange(min=0), default=0, show_default=True, help="Which jobs and shapes."
    ),
)
"""What part of a trace is simulated, and how it is changed (``placement simulate``)."""


def workload_options(fn: F) -> F:
    for o in reversed(WORKLOAD_OPTIONS):
        fn = o(fn)
    return fn


def trace_options_of(trace_format: str, values: dict[str, Any]) -> dict[str, Any]:
    """The trace reader's options from :data:`WORKLOAD_OPTIONS`' values (and ``--trace-format``)."""
    v = values
    options: dict[str, Any] = {
        "format": "plain" if trace_format == "csv" else trace_format,
        "window_start_s": v["window_start_s"],
        "window_s": None if v["window_hours"] is None else 3600.0 * v["window_hours"],
        "max_jobs": v["max_jobs"],
        "load": v["load"],
        "resample_seed": v["resample_seed"],
        "drop_wider": v["drop_wider"],
    }
    if v["min_workers"] is not None:
        options["min_workers"] = v["min_workers"]
    if v["widen"] != 1:
        options["widen"] = v["widen"]
    if v["ps_fraction"] > 0:
        options.update(ps_fraction=v["ps_fraction"], ps_shards=v["ps_shards"], ps_seed=v["ps_seed"])
    if v["hybrid_fraction"] > 0:
        options.update(hybrid_fraction=v["hybrid_fraction"], hybrid_seed=v["hybrid_seed"])
    return options
