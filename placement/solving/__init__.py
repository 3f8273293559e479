"""Solving: the options and outcome of a method run, the budget (stop object), the
method registry with every preference order, the exact-backend contract, and the driver
:func:`solve` that validates and evaluates whatever a method returns."""

from __future__ import annotations

from placement.solving.backend import Backend, BackendResult, Termination
from placement.solving.budget import Budget, WorkClock
from placement.solving.driver import moved_workers, placed, solve
from placement.solving.options import Options, Outcome
from placement.solving.registry import (
    EXACT_PREFERENCE,
    REGISTRY,
    MethodSpec,
    first_available,
    get_method,
    list_methods,
)

__all__ = [
    "EXACT_PREFERENCE",
    "REGISTRY",
    "Backend",
    "BackendResult",
    "Budget",
    "MethodSpec",
    "Options",
    "Outcome",
    "Termination",
    "WorkClock",
    "first_available",
    "get_method",
    "list_methods",
    "moved_workers",
    "placed",
    "solve",
]
