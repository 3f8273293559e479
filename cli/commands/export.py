"""``placement export``."""

from __future__ import annotations

import click

from placement.cli.common import (
    check_output_dir,
    err,
    guard,
)
from placement.errors import (
    InvalidInputError,
)
from placement.integrations.options import KUEUE_APIS, POD_PER
from placement.integrations.targets import TARGETS


@click.command()
@click.argument("solution", type=click.Path(exists=True, dir_okay=False))
@click.option("--instance", "instance", required=True, help="The instance SOLUTION places (a file or a bundled name).")
@click.option("--to", "target", required=True, type=click.Choice(TARGETS), help="Target system.")
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), help="Folder for the files (default: <solution>-<target>)."
)
@click.option("--image", default=None, help="Container image of every worker (Kubernetes targets).")
@click.option("--command", "command", default="python train.py", show_default=True, help="What every rank runs.")
@click.option("--namespace", default="default", show_default=True, help="Kubernetes namespace.")
@click.option(
    "--queue", default="default", show_default=True, help="Volcano Queue, or Kueue LocalQueue (queue-name label)."
)
@click.option(
    "--scheduler-name",
    default="scheduler-plugins-scheduler",
    show_default=True,
    help="podgroup: the scheduler running the Coscheduling plugin.",
)
@click.option(
    "--level-labels",
    default=None,
    help="kueue: node label keys of the network tiers, innermost first (default: the imported labels, else "
    "placement.io/tier-<t>, with label-nodes.sh to set them).",
)
@click.option(
    "--pod-per",
    type=click.Choice(POD_PER),
    default="worker",
    show_default=True,
    help="volcano, podgroup: one pod per worker (1 GPU), or one per server holding its workers' GPUs "
    "(launch with torchrun --nproc-per-node=$NPROC_PER_NODE; keeps NVLink inside a server).",
)
@click.option(
    "--kueue-api",
    type=click.Choice(KUEUE_APIS),
    default="v1beta2",
    show_default=True,
    help="kueue: API version of Topology and ResourceFlavor (v1beta1 for Kueue before 0.15).",
)
@click.option("--partition", default=None, help="slurm: the partition (#SBATCH --partition).")
@click.option("--time", "time_limit", default=None, help="slurm: the job's time limit (#SBATCH --time), e.g. 2:00:00.")
@guard
def export(
    solution: str,
    instance: str,
    target: str,
    output: str | None,
    image: str | None,
    command: str,
    namespace: str,
    queue: str,
    scheduler_name: str,
    level_labels: str | None,
    pod_per: str,
    kueue_api: str,
    partition: str | None,
    time_limit: str | None,
) -> None:
    """Hand SOLUTION's placement to a cluster: one file per placed job (Volcano Job, PodGroup
    with pinned Pods, Kueue Job, or sbatch script with its host file) plus the target's
    cluster files (HyperNodes, Kueue Topology)."""
    import re
    from pathlib import Path

    import placement
    from placement.export import DEFAULT_IMAGE, ExportOptions, export, write_files

    out = output or f"{Path(solution).with_suffix('')}-{target}"
    check_output_dir(out, solution, instance)
    problems = []
    if len(namespace) > 63 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace):
        problems.append(f"--namespace {namespace!r}: must be a DNS-1123 label (a-z, 0-9, '-', at most 63)")
    labels = None
    if level_labels is not None:
        labels = tuple(x.strip() for x in level_labels.split(",") if x.strip())
        if not labels:
            problems.append("--level-labels: give at least one label key")
    if problems:
        raise InvalidInputError(problems)
    inst = placement.resolve_instance(instance)
    sol = placement.load_solution(solution, inst)
    opts = ExportOptions(
        image=image or DEFAULT_IMAGE,
        command=command,
        namespace=namespace,
        queue=queue,
        scheduler_name=scheduler_name,
        level_labels=labels,
        partition=partition,
        time_limit=time_limit,
        pod_per=pod_per,
        kueue_api=kueue_api,
    )
    files = export(inst, sol, target, opts)
    written = write_files(files, out)
    err(f"wrote {len(written)} file(s) to {out}/: {', '.join(p.name for p in written)}")
