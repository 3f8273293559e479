"""``placement evaluate``."""

from __future__ import annotations

import json
from typing import Any

import click

from placement.cli.common import (
    checked_solution,
    err,
    guard,
)


@click.command()
@click.argument("instance")
@click.argument("solution")
@click.option(
    "--monte-carlo", "samples", type=click.IntRange(min=2, max=10**7), default=None, help="Also simulate N iterations."
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the Monte Carlo draws.")
@guard
def evaluate(instance: str, solution: str, samples: int | None, seed: int) -> None:
    """Recompute every figure of SOLUTION on INSTANCE with the exact evaluator (JSON on stdout)."""
    from dataclasses import asdict

    import placement

    inst = placement.resolve_instance(instance)
    sol = checked_solution(inst, solution)
    ev = placement.evaluate(inst, sol.assignment, sol.shards, sol.stages, sol.gpus)
    out: dict[str, Any] = {
        "instance": inst.name,
        "objective": ev.objective,
        "placed_weight": ev.placed_weight,
        "unplaced": list(ev.unplaced),
        "jobs": {j: asdict(r) for j, r in ev.jobs.items()},
    }
    if sol.shards:
        out["shards"] = {j: dict(z) for j, z in sol.shards.items()}
    if sol.stages:
        out["stages"] = {j: [list(row) for row in m] for j, m in sol.stages.items()}
    if sol.objective is not None and abs(sol.objective - ev.objective) > 1e-6 * max(1.0, abs(ev.objective)):
        err(f"note: the file says objective {sol.objective:.9g}; the evaluator computes {ev.objective:.9g}")
    if samples:
        mc = placement.monte_carlo(
            inst, sol.assignment, samples=samples, seed=seed, shards=sol.shards, stages=sol.stages
        )
        out["monte_carlo"] = {
            "samples": mc.samples,
            "seed": mc.seed,
            "objective": mc.objective,
            "objective_ci95": mc.objective_ci,
            "jobs": {j: {"mean": m, "ci95": c} for j, (m, c) in mc.jobs.items()},
        }
    click.echo(json.dumps(out, indent=1))
