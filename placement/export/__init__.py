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
from placement.export.options import DEFAULT_IMAGE, KUEUE_APIS, POD_PER, TARGETS, ExportOptions
from placement.export.readback import read_placement, read_placement_and_shards
from placement.model import Instance, Solution

__all__ = [
    "export",
    "write_files",
    "read_placement",
    "read_placement_and_shards",
    "ExportOptions",
    "TARGETS",
    "DEFAULT_IMAGE",
]


def export(instance: Instance, solution: Solution, target: str, options: ExportOptions | None = None) -> dict[str, str]:
    """The files that hand ``solution`` to ``target`` (one of :data:`TARGETS`): ``{file name:
    text}``, one per placed job plus the target's cluster-level files.  The placement is
    checked by the validator first: an invalid one raises :class:`InvalidInputError`."""
    options = options or ExportOptions()
    if target not in TARGETS:
        raise InvalidInputError([f"--to must be one of {', '.join(TARGETS)}, got {target!r}"])
    problems = []
    if solution.instance != instance.name:
        problems.append(f"solution.instance is {solution.instance!r}, but the instance is {instance.name!r}")
    if not solution.status.has_placement:
        problems.append(f"solution.status is {solution.status.value!r}: there is no placement to export")
    problems += [
        f"assignment: {v}" for v in validate(instance, solution.assignment, solution.unplaced, shards=solution.shards)
    ]
    if options.pod_per not in POD_PER:
        problems.append(f"pod_per must be one of {', '.join(POD_PER)}, got {options.pod_per!r}")
    if options.kueue_api not in KUEUE_APIS:
        problems.append(f"kueue_api must be one of {', '.join(KUEUE_APIS)}, got {options.kueue_api!r}")
    if target != "slurm":
        from placement.export.kubernetes import node_name_problems

        problems += node_name_problems(instance, solution)
    elif solution.shards:
        # a heterogeneous job's components may not share nodes in Slurm, and one component
        # cannot hold GPU and GPU-less tasks: no honest script pins workers and shards yet
        problems += [
            f"job {j!r} is a parameter-server job: the Slurm export does not place shards yet "
            "(use --to volcano or podgroup)"
            for j in sorted(solution.shards)
        ]
    if problems:
        raise InvalidInputError(problems, source="the solution to export")
    if target == "volcano":
        from placement.export.kubernetes import volcano_files

        return volcano_files(instance, solution, options)
    if target == "podgroup":
        from placement.export.kubernetes import podgroup_files

        return podgroup_files(instance, solution, options)
    if target == "kueue":
        from placement.export.kubernetes import kueue_files

        try:
            return kueue_files(instance, solution, options)
        except ValueError as e:
            raise InvalidInputError([str(e)]) from None
    from placement.export.slurm import sbatch_files

    return sbatch_files(
        instance, solution, command=options.command, partition=options.partition, time_limit=options.time_limit
    )


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
