"""placement: straggler-aware placement of gang-scheduled deep-learning training jobs.

Place each job's workers on a GPU cluster so that the expected slowest-worker iteration
time is lowest, trading it against the all-reduce cost of spreading a job out.

>>> import placement
>>> inst = placement.load_bundled("tiny")
>>> sol = placement.solve(inst, "auto", time_limit_s=5, seed=0)
>>> sol.status.value
'optimal'

Importing this package imports no solver: OR-Tools and PuLP load only when a method
that needs them runs.
"""

from __future__ import annotations

from placement.errors import (
    InstanceError,
    InvalidInputError,
    MethodUnavailableError,
    PlacementError,
    SolutionFormatError,
    UnknownMethodError,
)
from placement.evaluate import Evaluation, MonteCarloResult, evaluate, lower_bound, monte_carlo
from placement.io import (
    dump_instance,
    dump_solution,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    load_solution,
    solution_from_dict,
    solution_to_dict,
)
from placement.model import (
    Instance,
    Job,
    JobReport,
    Link,
    Scenarios,
    Server,
    Slowdown,
    Solution,
    Status,
    Switch,
)
from placement.registry import REGISTRY, MethodSpec, get_method, list_methods
from placement.solve import solve
from placement.topology import Cluster, Domain
from placement.validate import Violation, validate
from placement.instances import load_bundled, bundled_names, resolve_instance

__version__ = "0.1.0"

__all__ = [
    "Cluster",
    "Domain",
    "Evaluation",
    "Instance",
    "InstanceError",
    "InvalidInputError",
    "Job",
    "JobReport",
    "Link",
    "MethodSpec",
    "MethodUnavailableError",
    "MonteCarloResult",
    "PlacementError",
    "REGISTRY",
    "Scenarios",
    "Server",
    "Slowdown",
    "Solution",
    "SolutionFormatError",
    "Status",
    "Switch",
    "UnknownMethodError",
    "Violation",
    "bundled_names",
    "dump_instance",
    "dump_solution",
    "evaluate",
    "get_method",
    "instance_from_dict",
    "instance_to_dict",
    "list_methods",
    "load_bundled",
    "load_instance",
    "load_solution",
    "lower_bound",
    "monte_carlo",
    "resolve_instance",
    "solution_from_dict",
    "solution_to_dict",
    "solve",
    "validate",
]
