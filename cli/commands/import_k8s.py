"""``placement import-k8s``."""

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
    changed_options,
    job_options,
)
from placement.errors import (
    InvalidInputError,
)


@click.command("import-k8s")
@click.argument("nodes_json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--pods",
    "pods_json",
    type=click.Path(exists=True, dir_okay=False),
    help="kubectl get pods -A -o json: the GPUs already in use.",
)
@click.option(
    "--hypernodes",
    "hypernodes_json",
    type=click.Path(exists=True, dir_okay=False),
    help="kubectl get hypernodes -o json: Volcano's network tree (instead of node labels).",
)
@click.option(
    "--level-labels",
    default=None,
    help="Node label keys of the network levels, innermost first (default: the first known family present: "
    "network.topology.nvidia.com/*, GKE gce-topology-*, AWS network-node-layer-*, topology.kubernetes.io/zone; "
    "'' for none).",
)
@click.option(
    "--level-gbps", default=None, help="Bandwidth of the links into each level, innermost first (default 200,100,...)."
)
@job_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here (default: stdout).")
@guard
def import_k8s(
    nodes_json: str,
    pods_json: str | None,
    hypernodes_json: str | None,
    level_labels: str | None,
    level_gbps: str | None,
    output: str | None,
    **kw: Any,
) -> None:
    """Build an instance on a Kubernetes cluster from `kubectl get nodes -o json` (GPU nodes:
    GPUs, GPU type, CPU, memory, topology labels); slowdowns and jobs come from the generator
    options."""
    from pathlib import Path

    from placement.formats.parse import read_json_file
    from placement.integrations.kubernetes import instance_from_kubernetes

    check_output(output, nodes_json, pods_json, hypernodes_json)
    docs: dict[str, Any] = {}
    problems: list[str] = []
    for key, path in (("nodes", nodes_json), ("pods", pods_json), ("hypernodes", hypernodes_json)):
        if path:
            data, found, _ = read_json_file(path, InvalidInputError, f"{key} list")
            problems += [f"{Path(path).name}: {p}" for p in found]
            docs[key] = data
    if problems:
        raise InvalidInputError(problems)
    labels = None if level_labels is None else [x.strip() for x in level_labels.split(",") if x.strip()]
    gbps = None if level_gbps is None else number_list(level_gbps, "--level-gbps")
    given = [f"--{k.replace('_', '-')} {v}" for k, v in changed_options(kw).items()]
    for flag, value in (("--level-labels", level_labels), ("--level-gbps", level_gbps)):
        if value is not None:
            given.append(f"{flag} {value}")
    name = kw.pop("name") or f"k8s-{Path(nodes_json).stem}"
    command = f"placement import-k8s {Path(nodes_json).name} {' '.join(given)}".strip()
    emit_imported(
        lambda: instance_from_kubernetes(
            docs["nodes"],
            pods=docs.get("pods"),
            hypernodes=docs.get("hypernodes"),
            level_labels=labels,
            level_gbps=gbps,
            **kw,
        ),
        name,
        command,
        output,
        "import-k8s",
    )
