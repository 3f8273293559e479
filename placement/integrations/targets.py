"""Where a placement can be exported to: one row per target, naming the system, the function
that writes its files and the function that says what keeps a solution from it.  ``placement
export --to`` offers these; :func:`placement.export.export` dispatches through them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Target", "TARGET_TABLE", "TARGETS", "target"]


@dataclass(frozen=True)
class Target:
    name: str
    system: str
    """The room of :mod:`placement.integrations` it belongs to (``kubernetes``, ``slurm``)."""
    files: str
    """``module:function(instance, solution, options) -> {file name: text}``."""
    problems: str
    """``module:function(instance, solution) -> [problem]``: what keeps a solution from it."""

    def load(self, which: str) -> Callable[..., Any]:
        module, _, fn = getattr(self, which).partition(":")
        loaded: Callable[..., Any] = getattr(importlib.import_module(module), fn)
        return loaded


_K8S = "placement.integrations.kubernetes.write"
_SLURM = "placement.integrations.slurm.write"

TARGET_TABLE: tuple[Target, ...] = (
    Target("volcano", "kubernetes", f"{_K8S}:volcano_files", f"{_K8S}:node_name_problems"),
    Target("podgroup", "kubernetes", f"{_K8S}:podgroup_files", f"{_K8S}:node_name_problems"),
    Target("kueue", "kubernetes", f"{_K8S}:kueue_files", f"{_K8S}:node_name_problems"),
    Target("slurm", "slurm", f"{_SLURM}:slurm_files", f"{_SLURM}:export_problems"),
)

TARGETS: tuple[str, ...] = tuple(t.name for t in TARGET_TABLE)
"""Where a placement can be exported to (``placement export --to``)."""


def target(name: str) -> Target | None:
    return next((t for t in TARGET_TABLE if t.name == name), None)
