"""Reading the estimator's CSV inputs: numbers and the list of problems found."""

from __future__ import annotations

import math

from placement.errors import InvalidInputError

__all__ = ["MAX_LISTED", "raise_problems", "finite_number"]

MAX_LISTED = 40
"""Most problems listed in one error (the rest are counted)."""


def raise_problems(problems: list[str], source: str, cls: type[InvalidInputError]) -> None:
    """Raise ``cls`` listing the first ``MAX_LISTED`` problems (and how many more), if any."""
    if problems:
        more = len(problems) - MAX_LISTED
        shown = problems[:MAX_LISTED] + ([f"... and {more} more"] if more > 0 else [])
        raise cls(shown, source=source)


def finite_number(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
