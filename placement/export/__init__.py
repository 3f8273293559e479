"""From a placement to a running job: manifests for Kubernetes (Volcano, the Coscheduling
PodGroup, Kueue) and batch scripts for Slurm, and the way back (:func:`read_placement`).

>>> import placement
>>> from placement.export import export
>>> inst = placement.load_bundled("tiny")
>>> sol = placement.solve(inst, "greedy", seed=1)
>>> sorted(export(inst, sol, "volcano"))
['hypernodes.yaml', 'j0.yaml', 'j1.yaml', 'j2.yaml']
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from placement.errors import InvalidInputError
from placement.evaluation import validate
from placement.integrations.options import DEFAULT_IMAGE, KUEUE_APIS, POD_PER, ExportOptions
from placement.integrations.readback import (
    Readback,
    read_export,
    read_placement,
    read_placement_and_shards,
    stages_read_back,
)
from placement.integrations.targets import TARGET_TABLE, TARGETS, target
from placement.model import Instance, Solution

__all__ = [
    "export",
    "write_files",
    "read_placement",
    "read_placement_and_shards",
    "Readback",
    "read_export",
    "stages_read_back",
    "ExportOptions",
    "TARGETS",
    "TARGET_TABLE",
    "DEFAULT_IMAGE",
    "POD_PER",
    "KUEUE_APIS",
]


def export(
    instance: Instance, solution: Solution, target_name: str, options: ExportOptions | None = None
) -> dict[str, str]:
    """The files that hand ``solution`` to ``target_name`` (one of :data:`TARGETS`): ``{file
    name: text}``, one per placed job plus the target's cluster-level files.  The placement is
    checked by the validator first, then by the target (:data:`TARGET_TABLE`); a solution
    either refuses raises :class:`InvalidInputError`."""
    options = options or ExportOptions()
    row = target(target_name)
    if row is None:
        raise InvalidInputError([f"--to must be one of {', '.join(TARGETS)}, got {target_name!r}"])
    problems = []
    if solution.instance != instance.name:
        problems.append(f"solution.instance is {solution.instance!r}, but the instance is {instance.name!r}")
    if not solution.status.has_placement:
        problems.append(f"solution.status is {solution.status.value!r}: there is no placement to export")
    problems += [
        f"assignment: {v}"
        for v in validate(
            instance,
            solution.assignment,
            solution.unplaced,
            shards=solution.shards,
            stages=solution.stages,
            gpus=solution.gpus,
        )
    ]
    if options.pod_per not in POD_PER:
        problems.append(f"pod_per must be one of {', '.join(POD_PER)}, got {options.pod_per!r}")
    if options.kueue_api not in KUEUE_APIS:
        problems.append(f"kueue_api must be one of {', '.join(KUEUE_APIS)}, got {options.kueue_api!r}")
    problems += row.load("problems")(instance, solution)
    if problems:
        raise InvalidInputError(problems, source="the solution to export")
    files: dict[str, str] = row.load("files")(instance, solution, options)
    return files


def write_files(files: Mapping[str, str], directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``files`` into ``directory`` (created if missing), each atomically (a temporary
    file renamed into place); returns the paths written, in name order."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(files):
        target = out / name
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(files[name])
            if name.endswith(".sh"):
                os.chmod(tmp, 0o755)
            else:
                os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written
