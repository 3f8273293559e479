"""Numbers in the cells of side files (CSV logs, telemetry, demands, replays, traces): one rule
for what a cell may hold, so that no reader lets through a value that overflows later.

A cell is a number when Python's ``float`` reads it, it is finite, and its magnitude is at
most :data:`MAX_MAGNITUDE`; an integer cell also equals an integer (below 2^53, so exact in a
float and in a 64-bit integer).  Readers name the file and
row around the message that :func:`cell_number` raises.
"""

from __future__ import annotations

import math

__all__ = ["MAX_MAGNITUDE", "CellError", "cell_number"]

MAX_MAGNITUDE = 1e15
"""Largest magnitude of any number in a cell: 31 years in microseconds, far past any
duration, time stamp or size these files hold, and far from where sums of them overflow."""

MAX_CELL_CHARS = 64
"""Longest cell read as a number (a 5,000-digit integer is refused before it is parsed)."""


class CellError(ValueError):
    """The cell is not an acceptable number; the message says what it must be."""


def cell_number(
    text: str | None,
    *,
    integer: bool = False,
    minimum: float | None = None,
    exclusive_minimum: bool = False,
    maximum: float | None = None,
) -> float:
    """The number in ``text`` (an ``int``-valued float when ``integer``), checked against the
    bounds; else :class:`CellError` whose message reads ``must be ..., got '...'``."""
    raw = (text or "").strip()
    hi = MAX_MAGNITUDE if maximum is None else min(maximum, MAX_MAGNITUDE)
    lo = -MAX_MAGNITUDE if minimum is None else minimum
    try:
        v = float(raw) if len(raw) <= MAX_CELL_CHARS else math.nan
    except ValueError:
        v = math.nan
    too_big = math.isfinite(v) and abs(v) > MAX_MAGNITUDE
    if not math.isfinite(v) or v > hi or v < lo or (exclusive_minimum and v == lo) or (integer and v != math.floor(v)):
        want = "an integer" if integer else "a number"
        if minimum is not None:
            want += f" {'>' if exclusive_minimum else '>='} {minimum:g}"
        if maximum is not None or too_big:
            want += f" and <= {hi:g}" if minimum is not None else f" between {lo:g} and {hi:g}"
        shown = raw if len(raw) <= 24 else f"{raw[:12]}...{raw[-6:]} ({len(raw)} characters)"
        raise CellError(f"must be {want}, got {shown!r}")
    return v
