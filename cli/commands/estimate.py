"""``placement estimate``."""

from __future__ import annotations

import click

from placement.cli.common import (
    FiniteRange,
    check_output,
    console,
    emit,
    guard,
    written,
)
from placement.errors import (
    InvalidInputError,
)


@click.command()
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
    "--op-trace",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A hybrid job's per-operation trace (ByteDance's columns dp_rank, stage, rank, step, optype, duration "
    "[, mc, mb_id]; Parquet with the parquet extra, or CSV): each rank is compared with the ranks of its own stage "
    "across data-parallel replicas; needs --rank-map.",
)
@click.option(
    "--rank-map",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A CSV rank,server: the instance server each rank of --op-trace ran on.",
)
@click.option(
    "--steps",
    "steps",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Step log CSV (job, servers, time, duration, compute: the servers ';'- or space-separated, time the "
    "step's end in s, compute its slowest worker's): the congestion law of every domain the jobs cross, on its "
    "first switch; repeatable.",
)
@click.option(
    "--bin-s",
    type=FiniteRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Time bin of --steps, in seconds (a job's look is the median of its steps in a bin).",
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
    "--gpu-profiles",
    "gpu_profiles",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Per-GPU profiles: PAL's aggregated CSV (uuid, cabinet, node, device, exp, perf, ...) or a plain CSV "
    "server, gpu, class, perf; each GPU's factor is its median over its class's fleet median; repeatable (one "
    "class per file or several in one plain file).",
)
@click.option(
    "--perf-is",
    type=click.Choice(["time", "speed"]),
    default=None,
    help="How to read the profiles' perf (default: PAL's files by the column that tells, the plain format a time).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the rule that lays profiled GPUs onto servers the profile does not name.",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the instance here (default: stdout)."
)
@guard
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
    op_trace: str | None,
    rank_map: str | None,
    gpu_profiles: tuple[str, ...],
    perf_is: str | None,
    seed: int,
    steps: tuple[str, ...],
    bin_s: float,
) -> None:
    """Write slowdown estimates learned from logs and telemetry, congested links from step logs
    and op traces, and per-GPU factors from profiles, into INSTANCE."""
    check_output(
        output,
        instance,
        telemetry,
        demands,
        jobs_file,
        server_map,
        op_trace,
        rank_map,
        *logs,
        *pai,
        *gpu_profiles,
        *steps,
    )
    import placement
    from placement.formats import parse_json

    inst = placement.resolve_instance(instance)
    if jobs_file:
        from pathlib import Path

        data, problems = parse_json(Path(jobs_file).read_text(), what="jobs")
        if problems or not isinstance(data, list):
            raise InvalidInputError(problems or [f"{jobs_file} must hold a JSON list of jobs"], source=jobs_file)
        doc = written(inst)
        doc["jobs"] = data
        inst = placement.instance_from_dict(doc, source=jobs_file)
    from placement.estimate.workflow import estimate_instance

    got = estimate_instance(
        inst,
        logs=logs,
        pai=pai,
        server_map=server_map,
        telemetry=telemetry,
        demands=demands,
        half_life=half_life,
        prior_strength=prior_strength,
        horizon=horizon,
        op_trace=op_trace,
        rank_map=rank_map,
        gpu_profiles=gpu_profiles,
        perf_is=perf_is,
        seed=seed,
        steps=steps,
        bin_s=bin_s,
    )
    inst, servers, fleet, overrides = got.instance, got.servers, got.fleet, got.overrides
    emit(written(inst), output)
    from rich.table import Table

    con = console()
    if servers is not None:
        title = "learned per server (its slowest rank's)" if op_trace else "learned per server (from logs)"
        t = Table(title=title, show_edge=False, pad_edge=False)
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
    if got.gpu_profiles:
        t = Table(
            title="per-GPU factors (a GPU's median over its class's fleet median)", show_edge=False, pad_edge=False
        )
        for c in ("class", "GPUs", "runs", "perf read as", "because", "p5", "median", "p95", "max", "own spread"):
            t.add_column(c)
        import numpy as np

        for p in got.gpu_profiles:
            v = np.array(list(p.factors.values()))
            q = np.percentile(v, [5, 50, 95])
            t.add_row(
                p.app_class,
                str(len(v)),
                str(p.runs),
                p.perf_is,
                p.why,
                *(f"{x:.3f}" for x in (*q, v.max())),
                f"{p.own_spread:.3f}",
            )
        con.print(t)
        for line in got.laid_out:
            con.print(f"laid out: {line}")
    if got.links is not None:
        if got.links.domains:
            t = Table(title="congested links per domain", show_edge=False, pad_edge=False)
            for c in ("switch", "jobs looking", "E[L]", "P(L>1)", "support"):
                t.add_column(c)
            for w, d in got.links.domains.items():
                values = " ".join(f"{v:g}" for v in d.law.values)
                t.add_row(w, str(d.jobs), f"{d.mean:.3f}", f"{d.congested_probability:.3f}", values)
            con.print(t)
        else:
            con.print("congested links: no job could tell (nothing written on the switches)")
        for job, why in got.links.silent.items():
            con.print(f"cannot tell: job {job}: {why}", markup=False)
    if overrides:
        n = sum(len(v) for v in overrides.values())
        con.print(f"contention: {n} job-server overrides for {len(overrides)} job(s) from the telemetry forecast")
