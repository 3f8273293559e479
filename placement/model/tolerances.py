"""The table of numeric tolerances: every comparison of floats in the package uses one of
these, and nothing else defines its own.

Relative tolerances (``*_RTOL``) scale with the larger side; resolutions are the units in
which a backend writes numbers as integers.
"""

from __future__ import annotations

__all__ = [
    "PROB_SUM_TOL",
    "TIE_RTOL",
    "CAPACITY_RTOL",
    "CAPACITY_RESOLUTION",
    "DEADLINE_RTOL",
    "IMPROVE_RTOL",
    "BOUND_RTOL",
    "MILP_GAP_REL",
    "CPSAT_OPTIMAL_RTOL",
    "CPSAT_PROB_UNITS",
    "TRANSPORT_LP_RTOL",
    "REPORT_RTOL",
    "FIT_TIE_ATOL",
    "PRUNE_RTOL",
    "SOLVER_FEASIBILITY_TOL",
]

PROB_SUM_TOL = 1e-6
"""The probabilities of a distribution or a scenario table must sum to 1 within this
(absolute); the loader refuses others."""

TIE_RTOL = 1e-12
"""Two times closer than this (relative) are equal: a job's time counts as its ideal time
(straggler probability), and support points tie in the exact models."""

CAPACITY_RTOL = 1e-9
"""CPU and memory demand may exceed a server's capacity by this much (relative) without
counting as over it: float sums of per-worker demands are not exact."""

CAPACITY_RESOLUTION = 1e-6
"""CPU and memory values are exact in the integer (CP-SAT) capacity rows when they have at
most six decimals; finer values are rounded against the placement (demand up, capacity
down)."""

DEADLINE_RTOL = 1e-9
"""A job meets its deadline when ``iterations * E[T] / 1000 <= deadline_s * (1 + this)``."""

IMPROVE_RTOL = 1e-9
"""A heuristic move must lower the cost by more than this (relative) to be taken."""

BOUND_RTOL = 1e-6
"""A backend's bound above the exact objective by at most this (relative) is the solvers'
tolerance and is clipped to the objective; further above, it is dropped as not a bound."""

MILP_GAP_REL = 1e-6
"""Relative gap at which HiGHS and CBC stop, and within which a MILP placement whose bound
proves it counts as optimal."""

CPSAT_OPTIMAL_RTOL = 1e-4
"""CP-SAT claims ``optimal`` only when the exact objective is within this (relative) of its
scaled-back bound (its integer model rounds the objective down)."""

CPSAT_PROB_UNITS = 10**4
"""Probability resolution of CP-SAT's product chain: 1e-4.  Finer units make the domains
too large for CP-SAT to prove optimality (1e-5: 20 s without proof on a 4-server instance
that 1e-4 proves in 5 s)."""

TRANSPORT_LP_RTOL = 1e-7
"""The transportation-LP bound is reported as its optimum times ``1 - this`` (the interior
point solver's tolerance)."""

PRUNE_RTOL = 1e-9
"""The exact models drop a job-server pair only when its cheapest use exceeds the job's slack
by more than this (relative, and as much absolute): pruning never loses a tie."""

SOLVER_FEASIBILITY_TOL = 1e-6
"""HiGHS's and CBC's primal feasibility tolerance: the MILP's second phase (``best_effort``)
keeps the first phase's weight up to this."""

REPORT_RTOL = 1e-9
"""``placement.testing.check_solution``: reported numbers must match the evaluator's within
this (relative)."""

FIT_TIE_ATOL = 1e-9
"""``placement calibrate``: communication forms whose held-out relative errors differ by less
than this are tied (both fit exactly, up to rounding), and the simplest of them is kept."""
