"""The method registry, declared as data, in preference order, and every preference
order of the package (:data:`EXACT_PREFERENCE`).

Listing methods or checking their availability never imports a solver:
availability is ``importlib.util.find_spec`` on the modules a method needs, and a method's
module is imported only when it runs (:meth:`MethodSpec.load`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from placement.errors import InvalidInputError, MethodUnavailableError, UnknownMethodError
from placement.model.records import Instance
from placement.solving.options import Options, Outcome

__all__ = [
    "MethodSpec",
    "REGISTRY",
    "EXACT_PREFERENCE",
    "get_method",
    "check_method",
    "list_methods",
    "first_available",
    "KINDS",
]

KINDS = ("auto", "exact", "heuristic", "baseline")


MethodFn = Callable[[Instance, Options], Outcome]


@dataclass(frozen=True)
class MethodSpec:
    name: str
    kind: str
    description: str
    entry: str
    """``module:function`` implementing ``(instance, options) -> Outcome``."""
    requires: tuple[str, ...] = ()
    replans: bool = False
    """Takes a ``previous`` placement (re-planning with a move budget or price)."""

    @property
    def available(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    def load(self) -> MethodFn:
        """The function; a user's (``kind == "custom"``) is checked first: its module imports,
        it exists and takes ``(instance, options)``, else :class:`MethodUnavailableError`
        (the module is not installed) or :class:`InvalidInputError` naming it."""
        mod, _, fn = self.entry.partition(":")
        if self.kind != "custom":
            return getattr(importlib.import_module(mod), fn)  # type: ignore[no-any-return]
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            raise MethodUnavailableError(f"method {self.name!r}: cannot import {mod} ({e})") from None
        except Exception as e:  # the user's module fails as it loads: say how, no traceback
            raise InvalidInputError([f"method {self.name!r}: importing {mod} fails: {type(e).__name__}: {e}"]) from None
        f = getattr(module, fn, None)
        if not callable(f):
            what = "no function" if f is None else f"{type(f).__name__}, not a function,"
            raise InvalidInputError([f"method {self.name!r}: module {mod} has {what} {fn!r}"])
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # no signature to read (some builtins): let it run
            return f  # type: ignore[no-any-return]
        try:
            sig.bind(None, None)
        except TypeError:
            raise InvalidInputError(
                [f"method {self.name!r}: {mod}.{fn}{sig} must take (instance, options), as the registry's methods do"]
            ) from None
        return f  # type: ignore[no-any-return]

    def as_dict(self) -> Mapping[str, Any]:
        return {"name": self.name, "kind": self.kind, "available": self.available, "description": self.description}


REGISTRY: tuple[MethodSpec, ...] = (
    MethodSpec(
        "auto",
        "auto",
        "Enumeration where the instance is tiny; else greedy, an exact solve warm-started from it where the "
        "model is small enough (HiGHS, then CP-SAT, then CBC), and local search with the time left. "
        "Says in stats.path which way it went.",
        "placement.methods.auto:auto",
        replans=True,
    ),
    MethodSpec(
        "brute_force",
        "exact",
        "Enumerates every gang placement (tiny instances only); the oracle of the tests. Proves optimality and infeasibility.",
        "placement.methods.bruteforce:brute_force",
    ),
    MethodSpec(
        "cpsat",
        "exact",
        "CP-SAT (OR-Tools): exact scenario and tail-sum formulations in integer units, a valid bound on the "
        "true objective, warm start from greedy (candidates pruned against it); one worker unless --threads, "
        "deterministic per seed.",
        "placement.methods.exact:cpsat",
        ("ortools",),
    ),
    MethodSpec(
        "milp_highs",
        "exact",
        "Exact MILP (scenario / McCormick product chain) solved by HiGHS through PuLP: interchangeable servers "
        "aggregated into classes, candidates pruned against the greedy start, which HiGHS gets as its first "
        "incumbent; dual bound from HiGHS.",
        "placement.methods.exact:milp_highs",
        ("pulp", "highspy"),
    ),
    MethodSpec(
        "milp_cbc",
        "exact",
        "The same exact MILP solved by CBC through PuLP, warm-started; bound read from CBC's log.",
        "placement.methods.exact:milp_cbc",
        ("pulp",),
    ),
    MethodSpec(
        "pop",
        "heuristic",
        "POP-style decomposition: parts along bandwidth domains, jobs split by free GPUs, each part solved "
        "exactly in parallel (--threads parts at a time), stitched, repaired, improved by local search; "
        "bound from the whole instance's transportation LP.",
        "placement.methods.pop:pop",
        ("pulp",),
    ),
    MethodSpec(
        "saa",
        "heuristic",
        "Sample average approximation for independent slowdowns: the exact scenario MILP on 64 seeded joint "
        "draws, evaluated under the true model; no bound (the sample's is not one).",
        "placement.methods.saa:saa",
        ("pulp",),
    ),
    MethodSpec(
        "greedy",
        "heuristic",
        "Straggler- and communication-aware greedy: each job (largest gang first) takes the candidate server set, "
        "inside each bandwidth domain, of least exact expected iteration time.",
        "placement.methods.greedy:greedy",
    ),
    MethodSpec(
        "local_search",
        "heuristic",
        "Improves a start (greedy by default) with job re-insertion, worker relocation and swaps between jobs, "
        "evaluated incrementally and exactly, seeded, within the time limit.",
        "placement.methods.local_search:local_search",
        replans=True,
    ),
    MethodSpec(
        "comm_optimal",
        "baseline",
        "Straggler-oblivious optimum: the exact placement with every slowdown set to 1 (best locality), "
        "evaluated under the true slowdowns.",
        "placement.methods.comm_optimal:comm_optimal",
        ("pulp",),
    ),
    MethodSpec(
        "first_fit",
        "baseline",
        "Kubernetes-style: jobs in order, each worker on the first server (in instance order) with room.",
        "placement.methods.baselines:first_fit",
    ),
    MethodSpec(
        "best_fit",
        "baseline",
        "Packing (most-allocated): each worker on the feasible server with the fewest free GPUs.",
        "placement.methods.baselines:best_fit",
    ),
    MethodSpec(
        "spread",
        "baseline",
        "Least-allocated: each worker on the feasible server with the most free GPUs.",
        "placement.methods.baselines:spread",
    ),
    MethodSpec(
        "consolidate",
        "baseline",
        "Tiresias/Gandiva-style: fewest servers, then the narrowest bandwidth domain (fewest racks); ignores slowdowns.",
        "placement.methods.baselines:consolidate",
    ),
    MethodSpec(
        "whole_servers",
        "baseline",
        "Tiresias's placement: one server if the gang fits one, else wholly free servers within one switch "
        "(the narrowest domain with enough of them); ignores slowdowns.",
        "placement.methods.baselines:whole_servers",
    ),
    MethodSpec(
        "max_survival",
        "baseline",
        "The seed prototype's rule: servers with the highest probability of no slowdown, ignoring communication.",
        "placement.methods.baselines:max_survival",
    ),
    MethodSpec(
        "pal",
        "baseline",
        "PAL (SC'24): per-GPU factors clustered into performance classes (k-means), traversed with the "
        "locality penalty; one server when its class costs less than the penalty times the best spread "
        "class; ignores slowdowns and communication.",
        "placement.methods.pal:pal",
        requires=("sklearn",),
    ),
    MethodSpec(
        "pm_first",
        "baseline",
        "PM-First (SC'24): the fastest performance class of per-GPU factors first, locality only a "
        "tie-break; ignores slowdowns and communication.",
        "placement.methods.pal:pm_first",
        requires=("sklearn",),
    ),
    MethodSpec(
        "random",
        "baseline",
        "Jobs in a seeded random order, each filling servers taken in a seeded random order.",
        "placement.methods.baselines:random_placement",
    ),
)

_BY_NAME = {m.name: m for m in REGISTRY}

EXACT_PREFERENCE = ("milp_highs", "cpsat", "milp_cbc")
"""Exact backends in the order ``auto``, ``comm_optimal``, ``pop`` and ``saa`` try them."""


def get_method(name: str) -> MethodSpec:
    """The registry entry of ``name``; :class:`UnknownMethodError` lists the valid names.

    ``"package.module:function"`` names a user's own method (``(instance, Options) ->
    Outcome``): it runs through the same validation and evaluation as every method, which
    is how a scheduler's policy is compared against the registry's (``placement compare``).
    """
    if ":" in name and name not in _BY_NAME:
        mod = name.partition(":")[0]
        return MethodSpec(name, "custom", f"user method {name}", name, (mod.split(".")[0],))
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownMethodError(name, [m.name for m in REGISTRY]) from None


def check_method(name: str) -> MethodSpec:
    """The registry entry of ``name`` (:func:`get_method`); a user's ``module:function`` is
    also imported and its signature checked (:meth:`MethodSpec.load`), so that a sweep refuses
    it before any run."""
    spec = get_method(name)
    if spec.kind == "custom":
        spec.load()
    return spec


def list_methods(*, only_available: bool = False) -> list[MethodSpec]:
    return [m for m in REGISTRY if m.available or not only_available]


def first_available(names: tuple[str, ...] = EXACT_PREFERENCE) -> MethodSpec | None:
    """The first of ``names`` whose backend is installed (``None``: none is)."""
    return next((get_method(n) for n in names if get_method(n).available), None)
