"""``placement estimate``."""

from __future__ import annotations

from typing import Any

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
) -> None:
    """Write slowdown estimates learned from logs and telemetry into INSTANCE."""
    check_output(output, instance, telemetry, demands, jobs_file, server_map, *logs, *pai)
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
        doc = written(inst)
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
    emit(written(inst), output)
    from rich.table import Table

    con = console()
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
