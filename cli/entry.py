"""The ``placement`` console script: Ctrl-C during start-up (while the CLI's modules load)
stops it with one line and exit 130, as it does later; then :func:`placement.cli.main.main`."""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _interrupted(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("interrupted\n")
    raise SystemExit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _interrupted)  # until the CLI takes over
    from placement.cli.main import main as run

    signal.signal(signal.SIGINT, signal.default_int_handler)
    run()
