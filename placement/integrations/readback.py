"""Read a placement back from exported manifests and scripts (``placement import-placement``).

What each target pins is read from where the target keeps it: a Volcano task's node
affinity times its ``replicas``; a PodGroup pod's node affinity; a Kueue Job's
``placement.io/assignment`` annotation (advice); a Slurm job's ``.hosts`` file (one host per
rank).  The job id is the ``placement.io/job-id`` annotation, or the Slurm script's
``placement-job-id`` header (else its ``--job-name``).  A hybrid job's stage matrix is read
from where its ranks run (Megatron's order: :func:`placement.integrations.ranks.stages_from_ranks`),
or from a Kueue export's ``placement.io/stages`` annotation.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from placement.errors import InvalidInputError
from placement.integrations.found import Found
from placement.integrations.ranks import stages_from_ranks
from placement.model import Instance, StageMatrix

__all__ = ["READERS", "Readback", "read_export", "read_placement", "read_placement_and_shards", "stages_read_back"]


@dataclass(frozen=True)
class Readback:
    """What an export's files pin: workers, shards, and where they fix them, the ranks (or a
    stage matrix given as such)."""

    assignment: dict[str, dict[str, int]]
    shards: dict[str, dict[str, int]]
    ranks: dict[str, dict[int, str]]
    stages: dict[str, list[list[str]]]


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
    back = read_export(directory)
    return back.assignment, back.shards


def stages_read_back(instance: Instance, back: Readback) -> dict[str, StageMatrix]:
    """The stage matrix of every hybrid job of ``instance`` that ``back`` places; raises
    :class:`InvalidInputError` naming each job whose ranks do not give one."""
    out: dict[str, StageMatrix] = {}
    problems = []
    for jid in back.assignment:
        job = instance.job_by_id.get(jid)
        if job is None or not job.is_hybrid:
            continue
        if jid in back.stages:
            out[jid] = tuple(tuple(row) for row in back.stages[jid])
        elif jid in back.ranks:
            m = stages_from_ranks(job, back.ranks[jid])
            if isinstance(m, str):
                problems.append(m)
            else:
                out[jid] = m
        else:
            problems.append(f"job {jid!r}: a hybrid job, but the files fix neither its ranks nor its stages")
    if problems:
        raise InvalidInputError(problems, source="the exported files")
    return out


def read_export(directory: str | os.PathLike[str]) -> Readback:
    """Everything ``directory``'s files pin (:class:`Readback`)."""
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
    return Readback(found.assignment, found.shards, found.ranks, found.stages)
