"""``placement import-slurm``."""

from __future__ import annotations

from typing import Any

import click

from placement.cli.common import (
    check_output,
    emit_imported,
    guard,
    number_list,
)
from placement.cli.options import (
    SERVER_OPTIONS,
    changed_options,
    server_and_job_options,
)
from placement.errors import (
    InvalidInputError,
)
from placement.integrations.slurm.read import TOPOLOGY_FORMATS


@click.command("import-slurm")
@click.argument("topology_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--level-gbps", required=True, help="Comma-separated bandwidth per level: node-leaf, leaf-parent, ...")
@click.option(
    "--nodes-json",
    type=click.Path(exists=True, dir_okay=False),
    help="`scontrol show nodes --json` or `sinfo --json`: the real nodes (GPUs from gres, used GPUs, CPUs, "
    "memory, states) instead of generated servers.",
)
@click.option(
    "--format",
    "topology_format",
    type=click.Choice(["auto", *TOPOLOGY_FORMATS]),
    default="auto",
    show_default=True,
    help="topology.conf (tree) or topology.yaml (tree, block, flat); auto: by the file's extension.",
)
@click.option("--topology-name", default=None, help="topology.yaml: the topology to read (default: cluster_default).")
@server_and_job_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@guard
def import_slurm(
    topology_file: str,
    level_gbps: str,
    nodes_json: str | None,
    topology_format: str,
    topology_name: str | None,
    output: str | None,
    **kw: Any,
) -> None:
    """Build an instance on a Slurm topology.conf or topology.yaml; servers come from
    --nodes-json (the real nodes) or from the generator options, slowdowns and jobs from the
    generator options."""
    check_output(output, topology_file, nodes_json)
    from pathlib import Path

    from placement.integrations.slurm import instance_from_slurm, read_slurm_nodes, topology_format_of

    levels = number_list(level_gbps, "--level-gbps")
    fmt = topology_format_of(topology_file, topology_format)
    changed = changed_options(kw)
    nodes = None
    if nodes_json:
        server_opts = [f"--{k.replace('_', '-')}" for k in changed if k in SERVER_OPTIONS]
        if server_opts:
            raise InvalidInputError([f"{', '.join(server_opts)}: the servers come from --nodes-json"])
        for k in SERVER_OPTIONS:
            kw.pop(k, None)
        try:
            text = Path(nodes_json).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidInputError([f"--nodes-json {nodes_json}: cannot read it: {e}"]) from None
        nodes = read_slurm_nodes(text)
    given = [f"--{k.replace('_', '-')} {v}" for k, v in changed.items()]
    if nodes_json:
        given.insert(0, f"--nodes-json {Path(nodes_json).name}")
    if topology_name:
        given.insert(0, f"--topology-name {topology_name}")
    name = kw.pop("name") or f"slurm-{Path(topology_file).stem}"
    command = f"placement import-slurm {Path(topology_file).name} --level-gbps {level_gbps} {' '.join(given)}".strip()
    try:
        text = Path(topology_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError([f"{topology_file}: cannot read it: {e}"]) from None
    emit_imported(
        lambda: instance_from_slurm(text, levels, nodes=nodes, topology_format=fmt, topology_name=topology_name, **kw),
        name,
        command,
        output,
        "import-slurm",
    )
