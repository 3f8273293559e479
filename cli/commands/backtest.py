"""``placement backtest``."""

from __future__ import annotations

import click

from placement.cli.common import (
    FiniteRange,
    check_output,
    err,
    guard,
)


@click.command()
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
@guard
def backtest(
    pai_files: tuple[str, ...], train_fraction: float, time_limit: float, seed: int, write_cluster: str | None
) -> None:
    """Backtest the estimator on PAI per-worker files: fit on the first part, score on the rest."""
    from placement.estimate.backtest import backtest_pai

    check_output(write_cluster, *pai_files, option="--write-cluster")
    if write_cluster:
        from placement.estimate import estimate_from_logs, pai_instance, read_pai
        from placement.formats import dump_instance

        log = read_pai(list(pai_files))
        est, _ = estimate_from_logs(log)
        cluster = pai_instance(sorted(est), {s: e.slowdown for s, e in est.items()}, [], "pai-workers")
        dump_instance(cluster, write_cluster)
        err(f"wrote {write_cluster}: {len(cluster.servers)} one-GPU servers fitted on {len(pai_files)} file(s)")

    r = backtest_pai(list(pai_files), train_fraction=train_fraction, time_limit_s=time_limit, seed=seed)
    click.echo(f"train {r.samples_train} samples, test {r.samples_test} samples (train fraction {r.train_fraction:g})")
    click.echo(f"{'model':20s} {'loglik/sample':>13s} {'E[max] abs err':>15s} {'replay objective':>17s}")
    for m in r.loglik:
        abs_err = sum(r.job_error[m].values()) / len(r.job_error[m])
        click.echo(f"{m:20s} {r.loglik[m]:13.4f} {abs_err:15.4f} {r.replay[m]:17.2f}")
    click.echo("expected slowest-worker time (median-worker units), observed on the held-out part vs predicted:")
    for j, o in r.observed.items():
        click.echo(f"  {j}: observed {o:.3f}  " + "  ".join(f"{m} {r.predicted[m][j]:.3f}" for m in r.predicted))
