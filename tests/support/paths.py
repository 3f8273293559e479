"""Where the tests find the repository, their data and the shared data."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root."""

DATA = ROOT / "tests" / "data"
"""The tests' own fixtures (Kubernetes objects, CRD schemas, Slurm files)."""

SHARED_DATA = Path(os.environ.get("PLACEMENT_DATA", ROOT.parent / "shared" / "data"))
"""The real public traces (``../shared/data``, or ``PLACEMENT_DATA``)."""
