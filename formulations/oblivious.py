"""``comm_optimal``: the exact optimum of the straggler-oblivious model (every slowdown
set to 1), evaluated under the true model like every method.  It is what a scheduler
that optimises locality perfectly but ignores stragglers would do."""

from __future__ import annotations

from placement.errors import MethodUnavailableError
from placement.formulations.index import without_slowdowns
from placement.model import Instance
from placement.registry import Options, Outcome, get_method
from placement.validate import validate

__all__ = ["comm_optimal", "EXACT_PREFERENCE"]

EXACT_PREFERENCE = ("milp_highs", "cpsat", "milp_cbc")
"""Exact backends in the order ``comm_optimal`` and ``auto`` try them."""


def comm_optimal(instance: Instance, opts: Options) -> Outcome:
    spec = next((get_method(n) for n in EXACT_PREFERENCE if get_method(n).available), None)
    if spec is None:
        raise MethodUnavailableError("comm_optimal needs an exact backend: install ortools, or pulp with highspy")
    out = spec.load()(without_slowdowns(instance), opts)
    path = ["comm_optimal", *out.path]
    if out.assignment is None:
        return Outcome(None, infeasible=out.infeasible, path=path, backend=out.backend,
                       backend_version=out.backend_version, message=out.message)
    if validate(instance, out.assignment):
        return Outcome(None, path=path, backend=out.backend, backend_version=out.backend_version,
                       message="the straggler-oblivious optimum misses a deadline under the true slowdowns")
    note = "optimal for the straggler-oblivious model" if out.optimal else "best found for the straggler-oblivious model"
    return Outcome(out.assignment, path=path, backend=out.backend, backend_version=out.backend_version, message=note)
