"""Kept for the import path the README used: the Kubernetes reader lives in
:mod:`placement.integrations.kubernetes`."""

from __future__ import annotations

from placement.integrations.kubernetes import *  # noqa: F403
from placement.integrations.kubernetes import __all__  # noqa: F401
