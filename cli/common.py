"""What every verb of the CLI shares: exit codes, option types, the guard that maps the package's
exceptions to exit codes and one message, output (atomic files, stdout, spinners) and the last line
of a sweep."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any, TypeVar

import click

from placement.errors import (
    InvalidInputError,
    MethodUnavailableError,
    SweepBusyError,
    UnknownMethodError,
    WorkerStartError,
)

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_INFEASIBLE, EXIT_NO_SOLUTION = 0, 1, 2, 3, 4

START = time.monotonic()
"""When the command started (this module is imported first thing): ``solve --time-limit``
covers loading and writing too."""

F = TypeVar("F", bound=Callable[..., Any])


class FiniteRange(click.FloatRange):
    """A float option in a range that is a number: ``nan`` and ``inf`` are refused (exit 2)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


def err(msg: str) -> None:
    click.echo(msg, err=True)


def guard(fn: F) -> F:
    """Map the package's exceptions to exit codes and one clear message."""

    @wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (InvalidInputError, UnknownMethodError, MethodUnavailableError, SweepBusyError) as e:
            err(f"error: {e}")
            sys.exit(EXIT_INPUT)
        except WorkerStartError as e:
            err(f"error: {e}")
            sys.exit(EXIT_INTERNAL)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # an internal error: say so, no traceback unless asked
            if os.environ.get("PLACEMENT_DEBUG"):
                raise
            err(f"internal error: {type(e).__name__}: {e} (set PLACEMENT_DEBUG=1 for a traceback)")
            sys.exit(EXIT_INTERNAL)

    return inner  # type: ignore[return-value]


def check_output(output: str | None, *inputs: str | None, option: str = "--output") -> None:
    """Refuse an output path that cannot be written, before any work: a folder, a missing or
    read-only folder, or one of the command's input files (exit 2)."""
    if not output:
        return
    from pathlib import Path

    p = Path(output)
    parent = p.parent if str(p.parent) else Path(".")
    problems = []
    if p.is_dir():
        problems.append(f"{option} {output}: is a folder; give a file name")
    elif not parent.is_dir():
        problems.append(f"{option} {output}: the folder {str(parent)!r} does not exist")
    elif not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        problems.append(f"{option} {output}: cannot write there (permission denied)")
    for i in inputs:
        if i and Path(i).exists() and p.exists() and p.resolve() == Path(i).resolve():
            problems.append(f"{option} {output}: is also an input of this command; it would be replaced")
    if problems:
        raise InvalidInputError(problems)


def written(inst: Any) -> dict[str, Any]:
    """The document of an instance this program made, after the loader's checks: nothing is
    written that ``placement`` itself would refuse to read."""
    from placement.formats import instance_from_dict, instance_to_dict

    doc = instance_to_dict(inst)
    instance_from_dict(doc, source="the instance this command made")
    return doc


def emit(doc: Any, output: str | None, note: str | None = None) -> None:
    """A JSON document to ``output`` (by rename: never half-written) or to stdout."""
    from placement.formats import write_json_atomic

    if output:
        write_json_atomic(output, doc)
        if note:
            err(f"wrote {output}: {note}")
    else:
        click.echo(json.dumps(doc, indent=1))


@contextlib.contextmanager
def working(what: str, *, show: bool) -> Iterator[Callable[[str], None]]:
    """A spinner with the elapsed time on stderr while a long step runs (on a terminal only);
    yields a function that sets the line's news."""
    if not (show and sys.stderr.isatty()):
        yield lambda news: None
        return
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn(escape(what)),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console(),
        transient=True,
    ) as p:
        task = p.add_task("", total=None)
        yield lambda news: p.update(task, description=escape(news))


def console(*, stdout: bool = False, width: int = 100) -> Any:
    """A rich console on stderr (summaries beside a command's output), or on stdout when the
    table is the command's output; at least ``width`` columns wide."""
    from rich.console import Console

    err = not stdout
    return Console(stderr=err, highlight=False, soft_wrap=False, width=max(width, Console(stderr=err).width))


def checked_solution(inst: Any, path: str) -> Any:
    """Load SOLUTION and validate its placement; every violation listed, exit 2 if any."""
    import placement

    sol = placement.load_solution(path, inst)
    if sol.instance != inst.name:
        err(f"warning: {path} is a solution of instance {sol.instance!r}, checked here against {inst.name!r}")
    violations = placement.validate(
        inst, sol.assignment, sol.unplaced, shards=sol.shards, stages=sol.stages, gpus=sol.gpus
    )
    if violations:
        err(f"{path}: invalid placement, {len(violations)} violation(s):")
        for v in violations:
            err(f"  - [{v.kind}] {v.message}")
        sys.exit(EXIT_INPUT)
    return sol


def sweep_end(verb: str, what: str, bad: int, total: int, where: str) -> None:
    """A sweep's last line: how many of its runs failed; exit 1 when every one did."""
    if total and bad == total:
        click.echo(f"placement {verb}: all {total} {what} failed or were refused; see {where} for why")
        sys.exit(EXIT_INTERNAL)
    click.echo(f"placement {verb}: {total - bad} of {total} {what} done, {bad} failed or refused")


def csv_list(text: str, what: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    vals = [x.strip() for x in text.split(",") if x.strip()]
    if not vals:
        raise InvalidInputError([f"--{what} must be a comma-separated list, got {text!r}"])
    bad = [v for v in vals if allowed is not None and v not in allowed]
    if bad:
        raise InvalidInputError([f"--{what}: {v!r} is not one of {', '.join(allowed or ())}" for v in bad])
    return vals


def emit_imported(build: Callable[[], Any], name: str, command: str, output: str | None, tool: str) -> None:
    """Build an imported instance (a ``ValueError`` is bad input, exit 2), name it, record the
    command that made it in ``source``, and write it."""
    try:
        inst = build()
    except ValueError as e:
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError([str(e)], source=f"placement {tool}") from None
    inst = inst.replace(name=name, source=f"{command}  ({inst.source})")
    emit(written(inst), output, f"{len(inst.servers)} servers, {len(inst.jobs)} jobs")


def check_output_dir(output: str, *inputs: str | None) -> None:
    """Refuse an output folder that cannot be written, before any work (exit 2)."""
    from pathlib import Path

    p = Path(output)
    problems = []
    if p.exists() and not p.is_dir():
        problems.append(f"--output {output}: is a file; give a folder")
    elif p.exists() and not os.access(p, os.W_OK):
        problems.append(f"--output {output}: cannot write there (permission denied)")
    elif not p.exists() and not (p.parent if str(p.parent) else Path(".")).is_dir():
        problems.append(f"--output {output}: the folder {str(p.parent)!r} does not exist")
    for i in inputs:
        if i and Path(i).exists() and p.exists() and p.resolve() == Path(i).resolve():
            problems.append(f"--output {output}: is also an input of this command")
    if problems:
        raise InvalidInputError(problems)


def number_list(text: str, option: str) -> list[float]:
    import math

    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidInputError([f"{option} must be comma-separated numbers, got {text!r}"]) from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise InvalidInputError([f"{option} must be finite numbers > 0, got {text!r}"])
    return values


EXIT_INTERRUPTED = 130
"""Interrupted by the user (128 + SIGINT, the shell's convention)."""
