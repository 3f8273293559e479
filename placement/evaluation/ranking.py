"""Ranking candidate placements by the evaluator: most weight placed, then least objective."""

from __future__ import annotations

import math

from placement.evaluation.evaluate import evaluate
from placement.evaluation.validate import validate
from placement.model.records import Assignment, GpuChoice, Instance
from placement.problem.hybrid import complete_stages
from placement.problem.shards import complete_shards

__all__ = ["placement_key", "best_placement"]


def placement_key(
    instance: Instance, assignment: Assignment | None, shards: Assignment | None = None, gpus: GpuChoice | None = None
) -> tuple[float, float]:
    """Lexicographic key (smaller is better): (-weight placed, objective); invalid: inf.
    Parameter-server jobs are ranked with their ``shards``, those left out with the shards
    the shard rule gives them (as the driver will place them)."""
    if assignment is None:
        return (math.inf, math.inf)
    shards = complete_shards(instance, assignment, shards)
    stages = complete_stages(instance, assignment, None)
    if validate(instance, assignment, shards=shards, stages=stages, gpus=gpus):
        return (math.inf, math.inf)
    ev = evaluate(instance, assignment, shards, stages, gpus)
    return (-ev.placed_weight, ev.objective)


def best_placement(instance: Instance, *candidates: Assignment | None) -> tuple[int, Assignment | None]:
    """Index and value of the best valid candidate (most weight, then least objective,
    by the evaluator); ``(-1, None)`` if none is valid.  Earlier candidates win ties."""
    keys = [placement_key(instance, c) for c in candidates]
    best = min(range(len(candidates)), key=lambda i: (keys[i], i), default=-1)
    if best < 0 or not math.isfinite(keys[best][1]):
        return -1, None
    return best, candidates[best]
