"""The target table ``placement.export.export`` dispatches through, and the read-back's table of
file readers: every row loads, the CLI offers exactly the table's targets, and each target's
files read back as the placement that was exported."""

from __future__ import annotations

import click
import pytest

import placement
from placement.cli.main import cli
from placement.export import export, read_placement, write_files
from placement.integrations.readback import READERS, _reader
from placement.integrations.targets import TARGET_TABLE, TARGETS, target


@pytest.mark.parametrize("row", TARGET_TABLE, ids=lambda t: t.name)
def test_every_target_loads_its_writer_and_its_checks(row):
    assert callable(row.load("files")) and callable(row.load("problems"))
    assert row.system in ("kubernetes", "slurm") and target(row.name) is row


def test_the_cli_offers_exactly_the_table_and_refuses_the_rest():
    export_cmd = cli.get_command(click.Context(cli), "export")
    to = next(p for p in export_cmd.params if p.name == "target")
    assert tuple(to.type.choices) == TARGETS
    inst = placement.load_bundled("tiny")
    sol = placement.solve(inst, "greedy", seed=0)
    with pytest.raises(placement.InvalidInputError, match="--to must be one of volcano, podgroup, kueue, slurm"):
        export(inst, sol, "yarn")
    assert target("yarn") is None


@pytest.mark.parametrize("name", TARGETS)
def test_what_each_target_writes_reads_back_as_the_placement(name, tmp_path):
    inst = placement.load_bundled("tiny")
    sol = placement.solve(inst, "greedy", seed=0)
    write_files(export(inst, sol, name), tmp_path)
    assert read_placement(tmp_path) == {j: dict(a) for j, a in sol.assignment.items() if a}


def test_every_reader_of_the_read_back_table_loads():
    assert set(READERS) == {".yaml", ".yml", ".hosts"}
    assert all(callable(_reader(s)) for s in READERS) and _reader(".txt") is None
