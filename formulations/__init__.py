"""Exact formulations (CP-SAT, MILP) of the placement model; see the issue "Exact formulations"."""
