"""Reading the estimator's CSV inputs: numbers and the list of problems found."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from placement.errors import InvalidInputError

__all__ = ["MAX_LISTED", "raise_problems", "csv_text"]

MAX_LISTED = 40
"""Most problems listed in one error (the rest are counted)."""


def raise_problems(problems: list[str], source: str, cls: type[InvalidInputError]) -> None:
    """Raise ``cls`` listing the first ``MAX_LISTED`` problems (and how many more), if any."""
    if problems:
        more = len(problems) - MAX_LISTED
        shown = problems[:MAX_LISTED] + ([f"... and {more} more"] if more > 0 else [])
        raise cls(shown, source=source)


def csv_text(path: str | os.PathLike[str], cls: type[InvalidInputError]) -> io.StringIO:
    """The whole file as text for :class:`csv.DictReader`: a file that cannot be read, or is not
    UTF-8 text, is one problem naming it (never a traceback halfway through the rows)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise cls([f"{p.name}: not UTF-8 text (byte {e.start}: {e.reason})"], source=str(p)) from None
    except OSError as e:
        raise cls([f"cannot read {p}: {e}"], source=str(p)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for _ in reader:
            pass
    except csv.Error as e:  # a field past the csv module's limit, a stray quote, a NUL byte
        raise cls([f"{p.name} row {reader.line_num}: {e}"], source=str(p)) from None
    return io.StringIO(text, newline="")
