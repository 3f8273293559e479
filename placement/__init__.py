"""placement: straggler-aware placement of gang-scheduled deep-learning training jobs.

Place each job's workers on a GPU cluster so that the expected slowest-worker iteration
time is lowest, trading it against the all-reduce cost of spreading a job out.

>>> import placement
>>> inst = placement.load_bundled("tiny")
>>> sol = placement.solve(inst, "auto", time_limit_s=5, seed=0)
>>> sol.status.value
'optimal'

Importing this package imports almost nothing: each name below loads its module on first use
(a command starts fast, and Ctrl-C during start-up stops it cleanly); OR-Tools and PuLP load
only when a method that needs them runs.  The layers inside (records, formats and the problem's rules,
evaluation, solving, methods and formulations, tools) are described in the README's
"Architecture" section.
"""

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

SIBLING_SUBPACKAGES = ("formulations", "instances", "cli")
"""Subpackages whose source lives beside this folder, in the checkout's top-level folders of
the same names (pyproject.toml's ``package-dir`` maps them into an install)."""


class _SiblingFinder(importlib.abc.MetaPathFinder):
    """Finds ``placement.formulations``, ``placement.instances`` and ``placement.cli`` in the
    checkout's top-level folders.  Installed only when this package was imported from a
    checkout (a Python started in the repository root, or an editable install): there, this
    folder holds only part of the package, and the rest sits beside it."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        head, _, tail = fullname.partition(".")
        if head != __name__ or tail not in SIBLING_SUBPACKAGES:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.root])


def _join_checkout() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if os.path.isdir(os.path.join(here, SIBLING_SUBPACKAGES[0])):
        return  # an installed copy: the package is whole in this folder
    if not all(os.path.isfile(os.path.join(root, name, "__init__.py")) for name in SIBLING_SUBPACKAGES):
        return
    if not any(type(f).__name__ == "_SiblingFinder" and getattr(f, "root", None) == root for f in sys.meta_path):
        sys.meta_path.insert(0, _SiblingFinder(root))  # before an editable install's finder (of another checkout)


_join_checkout()

_EXPORTS: dict[str, str] = {
    "InstanceError": "placement.errors",
    "InvalidInputError": "placement.errors",
    "MethodUnavailableError": "placement.errors",
    "PlacementError": "placement.errors",
    "SolutionFormatError": "placement.errors",
    "UnknownMethodError": "placement.errors",
    "Evaluation": "placement.evaluation",
    "MonteCarloResult": "placement.evaluation",
    "Violation": "placement.evaluation",
    "evaluate": "placement.evaluation",
    "explain": "placement.evaluation",
    "lower_bound": "placement.evaluation",
    "monte_carlo": "placement.evaluation",
    "validate": "placement.evaluation",
    "dump_instance": "placement.formats",
    "dump_solution": "placement.formats",
    "instance_from_dict": "placement.formats",
    "instance_to_dict": "placement.formats",
    "load_instance": "placement.formats",
    "load_solution": "placement.formats",
    "solution_from_dict": "placement.formats",
    "solution_to_dict": "placement.formats",
    "bundled_names": "placement.instances",
    "load_bundled": "placement.instances",
    "resolve_instance": "placement.instances",
    "Instance": "placement.model",
    "CommTerm": "placement.model",
    "Job": "placement.model",
    "JobReport": "placement.model",
    "Link": "placement.model",
    "Scenarios": "placement.model",
    "Server": "placement.model",
    "Slowdown": "placement.model",
    "Solution": "placement.model",
    "Status": "placement.model",
    "Switch": "placement.model",
    "Cluster": "placement.problem",
    "Domain": "placement.problem",
    "cluster_of": "placement.problem",
    "SimConfig": "placement.simulation",
    "SimResult": "placement.simulation",
    "simulate": "placement.simulation",
    "REGISTRY": "placement.solving",
    "MethodSpec": "placement.solving",
    "Options": "placement.solving",
    "Outcome": "placement.solving",
    "get_method": "placement.solving",
    "list_methods": "placement.solving",
    "solve": "placement.solving",
}
"""Public name -> the module it comes from (loaded when the name is first used)."""

_SUBPACKAGES = frozenset(
    {
        "bench",
        "compare",
        "cli",
        "errors",
        "estimate",
        "evaluation",
        "export",
        "formats",
        "formulations",
        "instances",
        "methods",
        "model",
        "problem",
        "simulation",
        "solving",
        "testing",
    }
)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"placement.{name}")
    raise AttributeError(f"module 'placement' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # the same names, for type checkers and IDEs
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
        explain,
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
        CommTerm,
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

__all__ = [
    "Cluster",
    "CommTerm",
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
    "explain",
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
