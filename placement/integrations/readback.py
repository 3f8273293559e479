"""Read a placement back from exported manifests and scripts (``placement import-placement``).

What each target pins is read from where the target keeps it: a Volcano task's node
affinity times its ``replicas``; a PodGroup pod's node affinity; a Kueue Job's
``placement.io/assignment`` annotation (advice); a Slurm job's ``.hosts`` file (one host per
rank).  The job id is the ``placement.io/job-id`` annotation, or the Slurm script's
``placement-job-id`` header (else its ``--job-name``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from placement.errors import InvalidInputError
from placement.integrations.found import Found

__all__ = ["READERS", "read_placement", "read_placement_and_shards"]

READERS: dict[str, str] = {
    ".yaml": "placement.integrations.kubernetes.readback:read_yaml",
    ".yml": "placement.integrations.kubernetes.readback:read_yaml",
    ".hosts": "placement.integrations.slurm.readback:read_hosts",
}
"""File suffix -> ``module:function(path, found)`` that reads what such a file pins."""


def _reader(suffix: str) -> Callable[[Path, Found], None] | None:
    entry = READERS.get(suffix)
    if entry is None:
        return None
    module, _, fn = entry.partition(":")
    reader: Callable[[Path, Found], None] = getattr(importlib.import_module(module), fn)
    return reader


def read_placement(directory: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{job: {server: workers}}`` from the files :func:`placement.export.export` wrote
    into ``directory`` (any one target); raises :class:`InvalidInputError` naming each file."""
    return read_placement_and_shards(directory)[0]


def read_placement_and_shards(
    directory: str | os.PathLike[str],
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """The workers and the parameter-server shards that ``directory``'s files pin."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidInputError([f"{directory}: not a directory"])
    found = Found()
    for path in sorted(root.iterdir()):
        try:
            read = _reader(path.suffix)
            if read is not None:
                read(path, found)
        except (OSError, UnicodeDecodeError) as e:
            found.problems.append(f"{path.name}: cannot read it ({e})")
    if not found.assignment and not found.problems:
        found.problems.append(f"{directory}: no exported job (*.yaml with placement.io/job-id, or *.hosts)")
    if found.problems:
        raise InvalidInputError(found.problems, source=str(directory))
    return found.assignment, found.shards
