"""``placement import-placement``."""

from __future__ import annotations

import click

from placement.cli.common import (
    check_output,
    emit,
    guard,
)
from placement.errors import (
    InvalidInputError,
)


@click.command("import-placement")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--instance", "instance", required=True, help="The instance the manifests place (file or bundled name).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@guard
def import_placement(folder: str, instance: str, output: str | None) -> None:
    """Read the placement back from FOLDER's exported files (any target) as a solution of
    INSTANCE, validated and evaluated (exit 2 if it is not a valid placement)."""
    import placement
    from placement.export import read_export, stages_read_back
    from placement.formats import solution_to_dict
    from placement.solving import placed

    check_output(output, instance)
    inst = placement.resolve_instance(instance)
    back = read_export(folder)
    assignment, shards = back.assignment, back.shards
    unknown = [j for j in assignment if j not in inst.job_by_id]
    if unknown:
        raise InvalidInputError([f"{folder}: job {j!r} is not in instance {inst.name!r}" for j in unknown])
    stages = stages_read_back(inst, back)
    sol = placed(inst, assignment, "import-placement", shards=shards or None, stages=stages or None)
    if not sol.status.has_placement:
        raise InvalidInputError([f"{folder}: {sol.stats.get('message', 'not a valid placement')}"], source=folder)
    emit(solution_to_dict(sol), output, f"{len(sol.assignment)} job(s), objective {sol.objective:.6g}")
