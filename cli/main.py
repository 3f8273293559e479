"""``placement``: the command table.  Each verb lives in ``placement.cli.commands.<module>`` and is
imported only when it runs (``placement --help`` imports none of them).

Exit codes (``placement.cli.common``): 0 a solution (or success), 1 internal error, 2 invalid input
or usage, 3 infeasible, 4 no solution within the limit, 130 interrupted.  Bad input never prints a
traceback and never leaves a partial output file (files are written by rename).

To add a verb: write ``cli/commands/<verb>.py`` with one ``@click.command`` function wrapped in
``guard``, and add its row to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from placement.cli.common import (
    EXIT_INFEASIBLE,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    err,
)

__all__ = [
    "main",
    "cli",
    "COMMANDS",
    "EXIT_OK",
    "EXIT_INTERNAL",
    "EXIT_INPUT",
    "EXIT_INFEASIBLE",
    "EXIT_NO_SOLUTION",
    "EXIT_INTERRUPTED",
]

COMMANDS: dict[str, tuple[str, str]] = {
    "solve": ("solve", "Place the jobs of an instance; print the solution and a summary."),
    "validate": ("validate", "Check an instance, or a solution's placement against it."),
    "evaluate": ("evaluate", "Recompute every figure of a solution (optionally by Monte Carlo)."),
    "explain": ("explain", "Say why each job is placed where it is: tail shares, limits, better moves."),
    "methods": ("methods", "List the methods in preference order."),
    "generate": ("generate", "Generate a seeded instance (topology, slowdowns, jobs)."),
    "compare": ("compare", "Compare methods on many instances (isolated, resumable)."),
    "show": ("show", "Draw a placement on its cluster (PNG, SVG, or HTML with hover details)."),
    "simulate": ("simulate", "Simulate a trace of arrivals over time; report JCT."),
    "import-slurm": ("import_slurm", "Build an instance on a Slurm topology.conf."),
    "import-k8s": ("import_k8s", "Build an instance on a Kubernetes cluster (kubectl get nodes -o json)."),
    "export": ("export", "Write manifests (Volcano, PodGroup, Kueue) or sbatch scripts for a solution."),
    "import-placement": ("import_placement", "Read a placement back from exported manifests or scripts."),
    "estimate": ("estimate", "Learn slowdowns from iteration logs and telemetry."),
    "backtest": ("backtest", "Backtest the slowdown estimator on PAI per-worker logs."),
    "calibrate": ("calibrate", "Fit a job's compute and all-reduce terms from profiled step times."),
    "serve": ("serve", "Run the loop as a service: place, reserve, learn from pushed iteration rows."),
    "slurm-sync": ("slurm_sync", "Place Slurm's pending GPU jobs with the service and pin their nodes."),
}
"""Verb -> (module in ``placement.cli.commands``, the one-line summary of ``placement --help``).
The module's command function has the module's name."""


class _Table(click.Group):
    """A click group whose commands are loaded from :data:`COMMANDS` when they run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)  # as click lists a group's commands

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        row = COMMANDS.get(cmd_name)
        if row is None:
            return None
        module = importlib.import_module(f"placement.cli.commands.{row[0]}")
        command: click.Command = getattr(module, row[0])
        command.short_help = row[1]
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in self.list_commands(ctx)])


@click.group(cls=_Table, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="placement")
def cli() -> None:
    """Straggler-aware placement of gang-scheduled training jobs on GPU clusters."""


def main() -> None:
    """Console-script entry point; usage errors exit 2 (click's own convention); an interrupt
    exits 130 with one line (output files are written by rename, so none is left half-written)."""
    import signal

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # the same clean stop as Ctrl-C: isolated runs killed, nothing partial

    signal.signal(signal.SIGTERM, terminate)
    try:
        cli(prog_name="placement", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        err("interrupted")
        from placement.formulations.quiet import native_solve_interrupted

        if native_solve_interrupted():  # a HiGHS solve thread not joined: exit without destructors
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
