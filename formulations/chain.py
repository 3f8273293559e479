"""The exact product chain of the MILP, one home for both expected maxima that use it (the
compute term's over the servers used, and the congestion term's over the domains crossed).

``prod_m q_m^{b_m}`` over binary ``b``: ``pi_m = pi_{m-1} - (1 - q_m) w_m`` with
``w_m >= pi_{m-1} + b_m - 1``, ``w >= 0`` (the McCormick envelope of ``pi b``, exact for binary
``b``), from ``pi_0`` = the start (1, or the job's placed binary)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["product_chain"]


def product_chain(prob: Any, start: Any, chain: Sequence[tuple[float, Any]], name: str) -> Any:
    """Add the chain of ``(q, b)`` factors to the PuLP model ``prob``; return the last ``pi``
    (``start`` itself when ``chain`` is empty).  ``name`` makes the variables' names unique."""
    import pulp

    prev: Any = start
    for m, (q, b) in enumerate(chain):
        w = pulp.LpVariable(f"w{name}_{m}", 0, 1)
        prob += w >= prev + b - 1
        pi = pulp.LpVariable(f"pi{name}_{m}", 0, 1)
        prob += pi == prev - (1 - q) * w
        prev = pi
    return prev
