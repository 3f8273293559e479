"""``placement show``."""

from __future__ import annotations

import click

from placement.cli.common import check_output, checked_solution, err, guard


@click.command()
@click.argument("solution")
@click.option("--instance", "instance", required=True, help="The instance SOLUTION places (a file or a bundled name).")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="The picture: .png or .svg (matplotlib), or .html (one self-contained page with hover details).",
)
@click.option("--job", default=None, help="Highlight this job, with each of its servers' tail share.")
@guard
def show(solution: str, instance: str, output: str, job: str | None) -> None:
    """Draw SOLUTION on its cluster: racks side by side, each server's GPUs coloured by job,
    servers shaded by expected slowdown, hot servers marked, the jobs with the largest straggler
    penalty in the legend."""
    check_output(output, solution, instance)
    import placement
    from placement.visual import show as draw

    inst = placement.resolve_instance(instance)
    sol = checked_solution(inst, solution)
    if job is not None and job not in sol.assignment:
        raise placement.InvalidInputError([f"--job {job}: not placed by the solution"])
    draw(inst, sol, output, job=job)
    err(f"wrote {output}")
