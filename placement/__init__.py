"""placement: straggler-aware placement of gang-scheduled deep-learning training jobs.

Place each job's workers on a GPU cluster so that the expected slowest-worker iteration
time is lowest, trading it against the all-reduce cost of spreading a job out.

>>> import placement
>>> inst = placement.load_bundled("tiny")
>>> sol = placement.solve(inst, "auto", time_limit_s=5, seed=0)
>>> sol.status.value
'optimal'

Importing this package imports no solver: OR-Tools and PuLP load only when a method
that needs them runs.  The layers inside (records, formats and the problem's rules,
evaluation, solving, methods and formulations, tools) are described in the README's
"Architecture" section.
"""

from placement.errors import (
    InstanceError,
    InvalidInputError,
    MethodUnavailableError,
    PlacementError,
    SolutionFormatError,
    UnknownMethodError,
)
from placement.evaluation import (
    Evaluation,
    MonteCarloResult,
    Violation,
    evaluate,
    lower_bound,
    monte_carlo,
    validate,
)
from placement.formats import (
    dump_instance,
    dump_solution,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    load_solution,
    solution_from_dict,
    solution_to_dict,
)
from placement.instances import bundled_names, load_bundled, resolve_instance
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
from placement.problem import Cluster, Domain, cluster_of
from placement.simulation import SimConfig, SimResult, simulate
from placement.solving import REGISTRY, MethodSpec, Options, Outcome, get_method, list_methods, solve

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
    "Options",
    "Outcome",
    "PlacementError",
    "REGISTRY",
    "Scenarios",
    "Server",
    "SimConfig",
    "SimResult",
    "Slowdown",
    "Solution",
    "SolutionFormatError",
    "Status",
    "Switch",
    "UnknownMethodError",
    "Violation",
    "bundled_names",
    "cluster_of",
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
    "simulate",
    "solve",
    "validate",
]
