"""The exceptions of the package: a small hierarchy, misuse only.

Outcomes of solving (infeasible, no solution within the limit) are statuses on a
:class:`~placement.model.Solution`, never exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "PlacementError",
    "InvalidInputError",
    "InstanceError",
    "SolutionFormatError",
    "UnknownMethodError",
    "MethodUnavailableError",
    "WorkerStartError",
    "SweepBusyError",
]


class PlacementError(Exception):
    """Base class of every exception raised on purpose by ``placement``."""


class InvalidInputError(PlacementError, ValueError):
    """A document (instance, solution, CLI argument) is not acceptable.

    ``problems`` holds every problem found, each naming its JSON path, e.g.
    ``jobs[3].workers must be an integer >= 1, got 0``.
    """

    kind = "input"

    def __init__(self, problems: Sequence[str], *, source: str | None = None) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        self.source = source
        where = f" in {source}" if source else ""
        n = len(self.problems)
        head = f"invalid {self.kind}{where}: {n} problem{'s' if n != 1 else ''}"
        super().__init__(head + "".join(f"\n  - {p}" for p in self.problems))


class InstanceError(InvalidInputError):
    """An instance document breaks the ``placement-instance/1`` format or its rules."""

    kind = "instance"


class SolutionFormatError(InvalidInputError):
    """A solution document breaks the ``placement-solution/1`` format or names unknown ids."""

    kind = "solution"


class UnknownMethodError(PlacementError, ValueError):
    """The method name is not in the registry; the message lists the valid names."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        import difflib

        self.name = name
        self.valid = tuple(valid)
        close = difflib.get_close_matches(name, self.valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        super().__init__(f"unknown method {name!r}{hint}; valid methods: {', '.join(self.valid)}")


class MethodUnavailableError(PlacementError, RuntimeError):
    """The method exists but its backend is not installed or refuses this instance."""


class WorkerStartError(PlacementError, RuntimeError):
    """An isolated worker (a sweep's run in its own process) cannot start: it cannot import
    this package, or imports another copy of it.  Raised before any run of the sweep."""


class SweepBusyError(PlacementError, RuntimeError):
    """Another sweep is running into the same output folder; the message names it."""
