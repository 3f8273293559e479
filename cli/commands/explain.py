"""``placement explain``."""

from __future__ import annotations

import json

import click

from placement.cli.common import checked_solution, console, guard
from placement.cli.options import table_or_json


@click.command()
@click.argument("solution")
@click.option("--instance", "instance", required=True, help="The instance SOLUTION places (a file or a bundled name).")
@click.option("--job", default=None, help="Explain this job alone.")
@table_or_json("A table on stdout, jobs by straggler penalty (largest first), or the JSON of every figure.")
@guard
def explain(solution: str, instance: str, job: str | None, fmt: str) -> None:
    """Say why each job of SOLUTION is placed where it is: its expected and ideal iteration
    time (compute, communication), straggler penalty and probability, each server's share of
    the tail, the limits that bind, and the best move and swap the evaluator finds."""
    import placement

    inst = placement.resolve_instance(instance)
    sol = checked_solution(inst, solution)
    ex = placement.explain(inst, sol, job=job)
    if fmt == "json":
        click.echo(json.dumps({"instance": inst.name, "jobs": ex}, indent=1))
        return
    from rich.table import Table

    from placement.evaluation.explain import SUMMARY_COLUMNS, summary_rows

    t = Table(
        title=f"why here: {inst.name} (times in ms; --format json for every figure)", show_edge=False, pad_edge=False
    )
    for c in SUMMARY_COLUMNS:
        t.add_column(c, justify="right" if c in ("E[T]", "penalty", "P(straggle)") else "left", no_wrap=True)
    for row in summary_rows(ex):
        t.add_row(*row)
    console(stdout=True, width=150).print(t)
