"""``comm_optimal``: the exact optimum of the straggler-oblivious model (every slowdown
set to 1), evaluated under the true model like every method.  It is what a scheduler
that optimises locality perfectly but ignores stragglers would do."""

from __future__ import annotations

from placement.errors import MethodUnavailableError
from placement.evaluation.validate import validate
from placement.model.records import Instance
from placement.problem.hybrid import complete_stages
from placement.problem.shards import complete_shards
from placement.problem.variants import without_slowdowns
from placement.solving.options import Options, Outcome
from placement.solving.registry import first_available

__all__ = ["comm_optimal"]


def comm_optimal(instance: Instance, opts: Options) -> Outcome:
    spec = first_available()
    if spec is None:
        raise MethodUnavailableError("comm_optimal needs an exact backend: install ortools, or pulp with highspy")
    out = spec.load()(without_slowdowns(instance), opts)
    path = ["comm_optimal", *out.path]
    if out.assignment is None:
        return Outcome(
            None,
            infeasible=out.infeasible,
            path=path,
            backend=out.backend,
            backend_version=out.backend_version,
            message=out.message,
        )
    if validate(
        instance,
        out.assignment,
        shards=complete_shards(instance, out.assignment, None),
        stages=complete_stages(instance, out.assignment, None),
    ):
        return Outcome(
            None,
            path=path,
            backend=out.backend,
            backend_version=out.backend_version,
            message="the straggler-oblivious optimum misses a deadline under the true slowdowns",
        )
    note = (
        "optimal for the straggler-oblivious model" if out.optimal else "best found for the straggler-oblivious model"
    )
    return Outcome(out.assignment, path=path, backend=out.backend, backend_version=out.backend_version, message=note)
