"""``placement validate``."""

from __future__ import annotations

import click

from placement.cli.common import (
    checked_solution,
    err,
    guard,
)


@click.command()
@click.argument("instance")
@click.argument("solution", required=False)
@guard
def validate(instance: str, solution: str | None) -> None:
    """Check INSTANCE, and SOLUTION's placement against it (every violation listed)."""
    import placement

    inst = placement.resolve_instance(instance)
    if solution is None:
        from placement.evaluation.feasibility import infeasibility_reason

        click.echo(f"{inst.name}: valid instance ({len(inst.servers)} servers, {len(inst.jobs)} jobs)")
        reason = infeasibility_reason(inst)
        if reason is not None:
            err(f"warning: no placement places every job (admission 'all'): {reason}")
        return
    sol = checked_solution(inst, solution)
    click.echo(f"{solution}: valid placement of {len(sol.assignment)} job(s) on {inst.name}")
