"""Kept for the import path the README used: the Slurm reader lives in
:mod:`placement.integrations.slurm`."""

from __future__ import annotations

from placement.integrations.slurm import *  # noqa: F403
from placement.integrations.slurm import __all__  # noqa: F401
