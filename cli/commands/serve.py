"""``placement serve``."""

from __future__ import annotations

import click

from placement.cli.common import err, guard
from placement.simulation.config import DECISION_TIME_LIMIT_S


@click.command()
@click.argument("cluster", required=False)
@click.option(
    "--state",
    default=None,
    help="The state database: a SQLite file (default: placement-state.sqlite here) or a SQLAlchemy URL "
    "(postgresql://...).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="Port to listen on.")
@click.option("-m", "--method", default="auto", show_default=True, help="The placement method of every decision.")
@click.option(
    "--decision-time-limit",
    type=click.FloatRange(min=0, min_open=True, max=3600),
    default=DECISION_TIME_LIMIT_S,
    show_default=True,
    help="Seconds (of the work clock) per placement decision (the simulator's default).",
)
@click.option(
    "--reservation-s",
    type=click.FloatRange(min=0, min_open=True, max=7 * 86400),
    default=600.0,
    show_default=True,
    help="A placed job's GPUs are held this long unless it starts.",
)
@click.option(
    "--refit-every-s",
    type=click.FloatRange(min=1, max=86400),
    default=600.0,
    show_default=True,
    help="Refit the estimates from the pushed rows this often.",
)
@click.option(
    "--restart-s",
    type=click.FloatRange(min=0, max=86400),
    default=300.0,
    show_default=True,
    help="Seconds a moved job loses: what a move proposed by GET /v1/replan must repay.",
)
@click.option(
    "--move-margin",
    type=click.FloatRange(min=0, max=1),
    default=None,
    help="A proposed move must also beat this share of the job's expected iteration time while no job "
    "waits [default: the simulator's for the knowledge, 0.05 estimated, 0 oracle].",
)
@click.option(
    "--knowledge",
    type=click.Choice(["estimated", "oracle"]),
    default="estimated",
    show_default=True,
    help="estimated: learn each server from the pushed rows and telemetry (the cluster file's laws until the "
    "first refit); oracle: believe the cluster file's laws always.",
)
@click.option(
    "--plan-by",
    type=click.Choice(["forecast", "expected", "rate"]),
    default="forecast",
    show_default=True,
    help="What a decision's expected time comes from: each server's forecast over the job's horizon, its "
    "distribution, or its steady rate (the simulator's --plan-by).",
)
@click.option(
    "--ratio-to",
    type=click.Choice(["median", "profiled"]),
    default="median",
    show_default=True,
    help="A pushed row's duration over its job's median worker that iteration, or over the worker's "
    "straggler-free compute time from the job's spec (rows that are compute times).",
)
@click.option(
    "--patience",
    type=click.FloatRange(min=0, max=100),
    default=None,
    help="A placed job slower than its straggler-free best waits for better GPUs this many times what it would "
    "lose, while jobs hold GPUs; 0: never [default: the simulator's, 1].",
)
@click.option(
    "--kubernetes",
    is_flag=True,
    help="The scheduler extender reads each gang's size from its PodGroup (scheduler-plugins or Volcano) "
    "with the Kubernetes client: in-cluster configuration, else the kubeconfig.",
)
@click.option(
    "--prometheus",
    "prometheus_url",
    default=None,
    help="Prometheus to read NVIDIA DCGM exporter metrics from (SM clock, clock event reasons); "
    "the estimates learn from them beside the pushed rows.",
)
@click.option(
    "--prometheus-hosts",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A CSV host,server: the exporter's Hostname/hostname label of each server (default: the server's id).",
)
@click.option(
    "--prometheus-step-s",
    type=click.FloatRange(min=1, max=3600),
    default=60.0,
    show_default=True,
    help="The telemetry's resolution.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every decision.")
@guard
def serve(
    cluster: str | None,
    state: str | None,
    host: str,
    port: int,
    method: str,
    decision_time_limit: float,
    reservation_s: float,
    refit_every_s: float,
    restart_s: float,
    move_margin: float | None,
    knowledge: str,
    plan_by: str,
    ratio_to: str,
    patience: float | None,
    kubernetes: bool,
    prometheus_url: str | None,
    prometheus_hosts: str | None,
    prometheus_step_s: float,
    seed: int,
) -> None:
    """Run the proactive loop as a service on CLUSTER (an instance file or bundled name; its jobs
    are ignored; optional once the state holds one): POST /v1/place, /v1/jobs/{id}/start|finish|
    release|move, /v1/observations, /v1/replan, /v1/moves; GET /v1/state, /v1/replan, /healthz,
    /metrics; OpenAPI at /docs.  It decides as placement simulate's loop does."""
    import dataclasses
    import importlib.util
    import sys

    import placement
    from placement.cli.common import EXIT_INPUT
    from placement.serve import DEFAULT_STATE, ServeConfig

    missing = [
        m
        for m in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "prometheus_client")
        if not importlib.util.find_spec(m)
    ]
    if missing:
        err(f"error: placement serve needs its extra: pip install 'placement[serve]' (missing: {', '.join(missing)})")
        sys.exit(EXIT_INPUT)
    from placement.serve import serve as run

    placement.get_method(method)
    inst = placement.resolve_instance(cluster) if cluster else None
    config = ServeConfig(
        method=method,
        decision_time_limit_s=decision_time_limit,
        reservation_s=reservation_s,
        refit_every_s=refit_every_s,
        restart_s=restart_s,
        move_margin=move_margin,
        knowledge=knowledge,
        plan_by=plan_by,
        ratio_to=ratio_to,
        seed=seed,
    )
    if patience is not None:
        config = dataclasses.replace(config, patience=patience)
    where = state or DEFAULT_STATE
    err(f"placement serve: http://{host}:{port} (state {where}; OpenAPI at /docs; Ctrl-C stops)")
    telemetry = None
    if prometheus_url:
        from placement.estimate.workflow import read_server_map
        from placement.serve.telemetry import Prometheus

        hosts = (
            read_server_map(prometheus_hosts, inst, key="host", option="--prometheus-hosts") if prometheus_hosts else {}
        )
        telemetry = Prometheus(prometheus_url, hosts, step_s=prometheus_step_s)
    run(inst, where, host=host, port=port, config=config, kubernetes=kubernetes, telemetry=telemetry)
