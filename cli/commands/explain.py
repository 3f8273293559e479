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

    t = Table(
        title=f"why here: {inst.name} (times in ms; --format json for every figure)", show_edge=False, pad_edge=False
    )
    for c in (
        "job",
        "E[T]",
        "ideal = compute + comm",
        "penalty",
        "P(straggle)",
        "top tail share",
        "limits",
        "move Δobj",
        "swap Δobj",
    ):
        t.add_column(c, justify="right" if c in ("E[T]", "penalty", "P(straggle)") else "left", no_wrap=True)
    for jid, e in sorted(ex.items(), key=lambda kv: -kv[1]["straggler_penalty_ms"]):
        ((kind, comm),) = e["communication"].items()
        tail_sid, tail = max(e["servers"].items(), key=lambda kv: kv[1]["tail_share_ms"])
        move, swap = e["alternatives"]["move"], e["alternatives"]["swap"]
        t.add_row(
            jid,
            f"{e['expected_iteration_ms']:.2f}",
            f"{e['ideal_iteration_ms']:.2f} = {e['compute_ms']:.2f} + {comm:.2f} {kind.replace('_', '-')}",
            f"{e['straggler_penalty_ms']:.2f}",
            f"{e['straggler_probability']:.3f}",
            f"{tail_sid} {tail['tail_share_ms']:.2f}",
            ", ".join(e["limits"]) or "-",
            "-" if move is None else f"{move['from']}->{move['to']} {move['delta_objective']:+.3g}",
            "-"
            if swap is None
            else f"{swap['from']}<->{swap['to']} w/ {swap['with_job']} {swap['delta_objective']:+.3g}",
        )
    console(stdout=True, width=150).print(t)
