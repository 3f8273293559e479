"""Evaluation: the one evaluator, its Monte Carlo cross-check, the one validator, lower
bounds valid for the true objective, the ranking of candidate placements, and the reasons
an instance is infeasible, and the explanation of a placement."""

from __future__ import annotations

from placement.evaluation.bounds import job_lower_bound, lower_bound, reportable_bound
from placement.evaluation.evaluate import Evaluation, evaluate
from placement.evaluation.explain import explain
from placement.evaluation.feasibility import infeasibility_reason
from placement.evaluation.montecarlo import MonteCarloResult, monte_carlo
from placement.evaluation.ranking import best_placement, placement_key
from placement.evaluation.validate import Violation, is_valid, validate

__all__ = [
    "Evaluation",
    "MonteCarloResult",
    "Violation",
    "best_placement",
    "evaluate",
    "explain",
    "infeasibility_reason",
    "is_valid",
    "job_lower_bound",
    "lower_bound",
    "monte_carlo",
    "placement_key",
    "reportable_bound",
    "validate",
]
