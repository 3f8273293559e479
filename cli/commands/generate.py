"""``placement generate``."""

from __future__ import annotations

from typing import Any

import click

from placement.cli.common import (
    check_output,
    emit,
    err,
    guard,
    written,
)
from placement.cli.options import (
    generate_options,
)
from placement.errors import (
    InvalidInputError,
)


@click.command()
@generate_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@guard
def generate(output: str | None, **kw: Any) -> None:
    """Generate a seeded instance; its `source` records this command to reproduce it."""
    check_output(output)
    from placement.instances.generate import GeneratorSpec
    from placement.instances.generate import generate as gen

    spec = GeneratorSpec(**kw)
    bad = spec.problems()
    if bad:
        raise InvalidInputError(bad, source="placement generate")
    try:
        inst = gen(spec)
    except ValueError as e:
        raise InvalidInputError([str(e)], source="placement generate") from None
    from placement.evaluation.feasibility import infeasibility_reason

    reason = infeasibility_reason(inst)
    if reason is not None:
        err(
            f"warning: {inst.name} has no placement of every job ({reason}); "
            "lower --load or use --admission best_effort for a feasible instance"
        )
    doc = written(inst)
    emit(
        doc,
        output,
        f"{inst.name}: {len(inst.servers)} servers, {sum(s.free_gpus for s in inst.servers)} free GPUs, "
        f"{len(doc['jobs'])} jobs",
    )
